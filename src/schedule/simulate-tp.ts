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
 */
import { mesh, placeOf, workerOf } from './mesh.ts';
import { tpExchangeTime, tpSentBytes, type TpCosts } from './tp-cost.ts';
import type { Interval, Timeline } from './timeline.ts';
import type { Op } from './types.ts';

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

/**
 * `timeline` (dp × ranks lanes, as simulate() plays it) with t lanes per pipeline worker and the tp collectives
 * drawn. `opTime[op][stage]` is the action's nominal time, compute and collectives (what the play was given); the
 * timeline unchanged when t ≤ 1.
 */
export function withTpLanes(timeline: Timeline, tp: TpCosts, opTime: Record<Op, Float64Array>): Timeline {
  const t = tp.t;
  if (t <= 1) return timeline;
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
  const out: Interval[] = [];
  for (const iv of timeline.intervals) {
    const ringPeer = iv.op === 'collective' && iv.peer !== undefined ? placeOf(before, iv.peer) : null;
    const msgs = isComputeOp(iv.op) ? parts[iv.stage][iv.op] : [];
    const drawn: Interval[] = [];
    if (msgs.length > 0) {
      const dur = iv.end - iv.start;
      const nominal = opTime[iv.op as Op][iv.stage];
      const scale = nominal > 0 ? dur / nominal : 0;
      let coll = 0;
      for (const m of msgs) coll += m.time * scale;
      const share = Math.max(0, dur - coll) / msgs.length;
      let at = iv.start;
      msgs.forEach((m, k) => {
        at += share;
        const end = k === msgs.length - 1 ? iv.end : at + m.time * scale;
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
  return { ...timeline, tp: t, intervals: out };
}
