/**
 * The simulated timeline of a tp mesh: every pipeline worker's lane repeated
 * for the t workers of its tp group, and each action's tp collectives drawn
 * inside it, as the runtime draws the measured ones (`tp-all-reduce`,
 * `tp-all-gather` on every member's lane).
 *
 * The simulator prices an action as its compute plus its collectives
 * (tp-cost.ts: nothing overlaps them, the layer waits for the sum). It does not
 * know how the compute falls between a stage's layers, so the drawing places
 * the k collectives of an action after k equal shares of its compute — a GPT
 * block's forward is attention, g, MLP, g, and its backward MLP, f, attention,
 * f, each collective closing a part of the work, the last one ending the
 * action. On a shared device (lanes) an action stretches as a whole, and its
 * collectives with it.
 *
 * The tp workers of a group run the same actions at the same times, so the
 * copies are exact; data-parallel collectives (rings per pipeline rank and tp
 * rank, mesh.ts) are copied too, their `peer` renumbered into the mesh with
 * tp. Point-to-point transfers keep their `peer` (a pipeline rank).
 *
 * Expert parallelism's all-to-alls (ep-cost.ts) are drawn the same way, after
 * the action's tp collectives, as `ep-all-to-all` intervals (with or without
 * tp); overlapped with compute (DualPipe) they are drawn inside the action they
 * hide under, at their own length.
 */
import { ConfigError } from '../util/errors.ts';
import { mesh, placeOf, workerOf } from './mesh.ts';
import { allToAllTime, type EpCosts } from './ep-cost.ts';
import { gradSumActions, gradSumKey, tpExchangeTime, tpGradSumTime, tpOpTimes, tpSentBytes, type TpCosts, type TpMessage } from './tp-cost.ts';
import type { Interval, Timeline } from './timeline.ts';
import type { Action, Op, Schedule } from './types.ts';

export interface TensorParallelStep {
  t: number;
  /** Per stage, the time its tp collectives add to each op, per micro-batch. */
  opTime: Record<Op, number>[];
  /** Per pipeline rank, the time its actions spend in tp collectives in the step (each of its t workers the same). */
  perRank: number[];
  /** Mean over the ranks of perRank / makespan: nothing overlaps them, so all of it is exposed. */
  share: number;
}

/** The time the stage gradient sum (TpCosts.gradSum) adds to an action: its sum's time where it ends the action, else 0. */
export type GradSumPlay = (a: Pick<Action, 'stage' | 'op' | 'mb'>) => number;

/** gradSum's play on `s` (checked: one entry per stage, `every` a whole number ≥ 1); null without one. */
export function tpGradSumPlay(s: Schedule, tp: TpCosts | undefined): GradSumPlay | null {
  const g = tp?.gradSum;
  if (!tp || !g) return null;
  if (!Array.isArray(g.messages) || g.messages.length !== s.stages) throw new ConfigError('costs.tp.gradSum.messages', g.messages, `must list ${s.stages} stages' sums, one per stage (null for none)`);
  if (g.every !== undefined && (!Number.isInteger(g.every) || g.every < 1)) throw new ConfigError('costs.tp.gradSum.every', g.every, 'must be a whole number ≥ 1 (backwards between sums), or absent for once a step');
  const time = g.messages.map((_, stage) => tpGradSumTime(tp, stage));
  if (time.every((x) => x === 0)) return null;
  const at = gradSumActions(s.order, g.every);
  return (a) => (at.has(gradSumKey(a)) ? time[a.stage] : 0);
}

/** The tp collectives' part of a step: each stage's time per op and micro-batch, each rank's sum over its actions (the gradient sums too), the mean rank's share of the step. */
export function tpStep(s: Schedule, tp: TpCosts, makespan: number, gradSum: GradSumPlay | null): TensorParallelStep {
  const op = tpOpTimes(tp, s.stages);
  const perRank = s.order.map((list) => list.reduce((a, x) => a + op[x.op][x.stage] + (gradSum ? gradSum(x) : 0), 0));
  const mean = perRank.reduce((a, b) => a + b, 0) / Math.max(1, perRank.length);
  return {
    t: tp.t,
    opTime: Array.from({ length: s.stages }, (_, st) => ({ F: op.F[st], B: op.B[st], I: op.I[st], W: op.W[st] })),
    perRank,
    share: makespan > 0 ? mean / makespan : 0,
  };
}

const isComputeOp = (op: Interval['op']): op is Op => op === 'F' || op === 'B' || op === 'I' || op === 'W';

/** A copy of `iv` on tp rank j, field by field (an object spread with an added key is several times slower at the page's sizes). */
function onTpRank(iv: Interval, j: number, peer: number | undefined): Interval {
  const c: Interval = { rank: iv.rank, stage: iv.stage, op: iv.op, mb: iv.mb, start: iv.start, end: iv.end };
  if (iv.replica !== undefined) c.replica = iv.replica;
  if (j > 0) c.tpRank = j;
  if (iv.comm !== undefined) c.comm = iv.comm;
  if (peer !== undefined) c.peer = peer;
  if (iv.gpuMs !== undefined) c.gpuMs = iv.gpuMs;
  if (iv.coll !== undefined) c.coll = iv.coll;
  if (iv.bytes !== undefined) c.bytes = iv.bytes;
  return c;
}

/** Per stage and op, the all-to-alls `ep` draws: each one's time and the bytes a worker sends to the others. */
function epParts(ep: EpCosts): Record<Op, { coll: Interval['coll']; time: number; bytes: number }[]>[] {
  return ep.messages.map((m) => {
    const part = (bytes: number) => ({ coll: 'ep-all-to-all' as const, time: allToAllTime(bytes, ep.n, ep.local, ep.link), bytes: (bytes * (ep.n - 1)) / ep.n });
    const back = ep.n > 1 ? m.I.map(part) : [];
    return { F: ep.n > 1 ? m.F.map(part) : [], I: back, B: back, W: [] };
  });
}

/**
 * `timeline` (dp × ranks lanes, as simulate() plays it) with t lanes per pipeline worker and the tp collectives
 * drawn, then ep's all-to-alls. `opTime[op][stage]` is the action's nominal time, compute and collectives (what
 * the play was given); the timeline unchanged when t ≤ 1 and there is no ep.
 */
export function withTpLanes(timeline: Timeline, tpCosts: TpCosts | undefined, opTime: Record<Op, Float64Array>, gradSum: GradSumPlay | null = null, ep?: EpCosts): Timeline {
  const tp: TpCosts = tpCosts ?? { t: 1, latency: 0, bandwidth: Infinity, bytesPerElement: 0, messages: Array.from({ length: timeline.stages }, () => ({ F: [], B: [], I: [], W: [] })) };
  const t = tp.t;
  if (t <= 1 && !ep) return timeline;
  const dp = timeline.dp ?? 1;
  const before = mesh(dp, timeline.ranks);
  const after = mesh(dp, timeline.ranks, t);
  // Per stage and op: each collective's time and bytes sent by one member.
  const parts = tp.messages.map((ops) => {
    const per = {} as Record<Op, { coll: Interval['coll']; time: number; bytes: number }[]>;
    for (const op of ['F', 'B', 'I', 'W'] as const) {
      per[op] = ops[op].map((msg) => ({
        coll: msg.coll,
        time: tpExchangeTime(msg.elements * tp.bytesPerElement, t, tp.latency, tp.bandwidth),
        bytes: tpSentBytes(msg, t, tp.bytesPerElement),
      }));
    }
    return per;
  });
  const a2a = ep ? epParts(ep) : null;
  if (a2a) parts.forEach((per, s) => (['F', 'B', 'I', 'W'] as const).forEach((op) => per[op].push(...a2a[s][op])));
  // The stage's gradient sum, drawn last in the actions it ends.
  const sums = tp.gradSum?.messages.map((m: TpMessage | null, stage) => (m ? { coll: m.coll, time: tpGradSumTime(tp, stage), bytes: tpSentBytes(m, t, tp.bytesPerElement) } : null));
  const out: Interval[] = [];
  for (const iv of timeline.intervals) {
    const ringPeer = iv.op === 'collective' && iv.peer !== undefined ? placeOf(before, iv.peer) : null;
    const summed = gradSum && isComputeOp(iv.op) && gradSum({ stage: iv.stage, op: iv.op, mb: iv.mb }) > 0 ? sums?.[iv.stage] ?? null : null;
    const msgs = isComputeOp(iv.op) ? (summed ? [...parts[iv.stage][iv.op], summed] : parts[iv.stage][iv.op]) : [];
    const drawn: Interval[] = [];
    if (msgs.length > 0) {
      const dur = iv.end - iv.start;
      const nominal = opTime[iv.op as Op][iv.stage] + (summed ? summed.time : 0);
      const scale = nominal > 0 ? dur / nominal : 0;
      let coll = 0;
      for (const m of msgs) coll += m.time * scale;
      // Overlapped all-to-alls can outlast the action they hide under: drawn shrunk to fit it.
      const fit = coll > dur && coll > 0 ? dur / coll : 1;
      const share = Math.max(0, dur - coll) / msgs.length;
      let at = iv.start;
      msgs.forEach((m, k) => {
        at += share;
        const end = k === msgs.length - 1 ? iv.end : at + m.time * scale * fit;
        drawn.push({ rank: iv.rank, stage: iv.stage, op: 'collective', coll: m.coll, mb: iv.mb, start: at, end, bytes: m.bytes });
        at = end;
      });
    }
    for (let j = 0; j < t; j++) {
      const peer = ringPeer ? workerOf(after, ringPeer.replica, ringPeer.rank, j) : iv.peer;
      out.push(onTpRank(iv, j, peer));
      for (const c of drawn) {
        const x = onTpRank(c, j, undefined);
        if (iv.replica !== undefined) x.replica = iv.replica;
        out.push(x);
      }
    }
  }
  return t > 1 ? { ...timeline, tp: t, intervals: out } : { ...timeline, intervals: out };
}
