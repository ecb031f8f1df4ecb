/**
 * The simulator: plays a schedule against a cost model and returns the same
 * Timeline the runtime measures, plus makespan, busy/idle per rank, bubble
 * fraction and peak activation memory per rank.
 *
 * Cost model. Op times are per stage (a number applies to every stage):
 * defaults F = 1, B = 2, I = 1, W = 1 time units. With v stages per rank each
 * stage is 1/v of the rank's share of the model, so to compare schedules with
 * different v at equal model cost pass `costsPerStage({F: 1, B: 2}, v)`. A
 * message between two different ranks takes latency(from, to) +
 * bytes / bandwidth(from, to), where bytes is the activation size at that stage
 * boundary (the gradient coming back has the same size); messages between
 * stages on the same rank are free. Links are full duplex and never congest.
 * `comm`, per stage boundary, adds a measured time (a profile's) to that.
 *
 * Shared device. With `lanes` below the number of ranks the ranks share one
 * device (every browser tab's ranks share one GPU; on a small machine they
 * share the cores): n ranks computing at once each progress at rate
 * min(1, lanes / n) (shared-device.ts). `predictions` gives both answers, "this
 * machine" and "p independent devices" (the closed forms' ideal).
 *
 * Data parallelism (simulate-mesh.ts). `dp` replicas play the same schedule;
 * the timeline then has dp × ranks lanes, and each stage's gradients
 * (`gradBytes`) are summed over its dp workers by a ring all-reduce costed by
 * `allReduce` (α per chunk exchange, β bytes per time unit; allreduce-cost.ts),
 * drawn as 'collective' intervals. The result then also carries the step time
 * (makespan, collectives included), the compute makespan, each stage's
 * all-reduce time and window, the exposed all-reduce (step end − last compute
 * end) and its share of the step; `bubble` stays the compute-only pipeline
 * bubble. With dp = 1 and neither allReduce nor gradBytes, nothing changes.
 * ZeRO-2/3 play their collectives between the actions (simulate-zero.ts), and
 * so does a stream on replicas (PipeDream-2BW, `allReduce.every`: an
 * all-reduce after each block of m backwards of a stage, simulate-blocks.ts).
 *
 * Model copies (simulate-copies.ts). A schedule with copies (DualPipe) sums
 * each stage's gradients over its copies after each rank's step (`copySum`, or
 * the α–β ring over the pipeline link on `gradBytes`), drawn as 'copy-sum'
 * collectives; `copySum` in the result, its `before` the step without it.
 *
 * The step's end (simulate-step-end.ts). With `stepEnd`, each rank then reads
 * the losses back and updates (not drawn); `stepEnd` in the result, its `step`
 * the step on the workers' clocks.
 *
 * Tensor parallelism (tp-cost.ts). `tp` adds each action's collectives to its
 * time; the timeline then has dp × ranks × t lanes, each action's collectives
 * drawn inside it (simulate-tp.ts), and the result carries their share.
 * Expert parallelism (ep-cost.ts). `ep` adds each action's all-to-alls to its
 * time, or hides them under compute (DualPipe's overlap), and draws them inside
 * it as `ep-all-to-all` collectives on every lane (simulate-tp.ts).
 *
 * Memory. A stage keeps heldBytes (default: activationBytes) for each
 * micro-batch from the start of its F until the end of its B, or, when the
 * backward is split, until the end of its W: W still needs the stored
 * activations, as the zero-bubble paper counts them. With `heldAfterInput`, a
 * split backward frees all but that many bytes at the end of its I (what W
 * still needs: the inputs of the weight matmuls), the rest at its W, the
 * zero-bubble paper's M_B and M_W accounting. A rank's peak is taken over
 * its own action order, which is also its time order (peak-memory.ts).
 */
import { ConfigError, requireFinite } from '../util/errors.ts';
import { timelineStats, type Interval, type Timeline } from './timeline.ts';
import type { Action, Op, Schedule } from './types.ts';
import { play, type PlayCosts } from './engine.ts';
import { playShared } from './shared-device.ts';
import { collectiveIntervals, meshStep, replicaCopies, resolveMesh, type ResolvedMesh } from './simulate-mesh.ts';
import { zeroIntervals, zeroPlay, type CollectivePlay } from './simulate-zero.ts';
import { blockPlay } from './simulate-blocks.ts';
import { mesh, ringNext, workerOf } from './mesh.ts';
import { tpOpTimes } from './tp-cost.ts';
import { epOpTimes, withAllToAll } from './ep-cost.ts';
import { tpGradSumPlay, tpStep, withTpLanes, type TensorParallelStep } from './simulate-tp.ts';
export type { TensorParallelStep } from './simulate-tp.ts';
import { copySumIntervals, copySumTimes, playCopySum, type CopySumPlay } from './simulate-copies.ts';
import { playStepEnd, stepEndTimes, type StepEndPlay } from './simulate-step-end.ts';
import { validateAndPlay } from './validate.ts';
import { peakMemory, type RankMemory } from './peak-memory.ts';
import type { CostModel, PerLink, PerStage } from './cost-model.ts';

export type { CostModel, PerLink, PerStage } from './cost-model.ts';
export { peakMemory, type RankMemory } from './peak-memory.ts';

export const DEFAULT_OP_COSTS: Readonly<Record<Op, number>> = { F: 1, B: 2, I: 1, W: 1 };

/** Per-stage costs for v stages per rank when the whole of one rank's share of the model costs `model`. */
export function costsPerStage(model: Partial<Record<Op, number>>, virtual: number): Partial<Record<Op, number>> {
  const out: Partial<Record<Op, number>> = {};
  for (const op of ['F', 'B', 'I', 'W'] as const) {
    const x = model[op];
    if (x !== undefined) out[op] = x / virtual;
  }
  return out;
}


export interface SimulationResult {
  timeline: Timeline;
  /** The step: last end of anything (compute, messages, collectives). */
  makespan: number;
  /** Compute time and makespan − compute of every pipeline worker, dp × ranks of them (with tp, each of its t workers the same). */
  busy: number[];
  idle: number[];
  /** The pipeline bubble, compute only: 1 − Σ busy / (lanes · compute makespan). */
  bubble: number;
  /** Per pipeline rank (every replica holds the same). */
  memory: RankMemory[];
  /** The data-parallel step, present when dp > 1 or an all-reduce or gradient bytes are given. */
  dp?: DataParallelStep;
  /** The tp collectives' part of the step, present when costs.tp is given (tp-cost.ts). */
  tp?: TensorParallelStep;
  /** A schedule with model copies (DualPipe): each stage's sum over its copies after the step (simulate-copies.ts), present when it takes time. */
  copySum?: CopySumPlay;
  /** Each rank's end of step after everything drawn (costs.stepEnd: the losses read back, the update), present when given. */
  stepEnd?: StepEndPlay;
}

export interface DataParallelStep {
  dp: number;
  /** End of the last compute action of any worker. */
  computeMakespan: number;
  /** Each stage's ring all-reduce time (2(dp − 1)·α + 2(dp − 1)/dp · bytes / β). */
  allReduceTime: number[];
  /** When each stage's all-reduce ran on its rank's link. */
  allReduceStart: number[];
  allReduceEnd: number[];
  /** makespan − computeMakespan: the all-reduce time no compute hides. */
  exposedAllReduce: number;
  /** exposedAllReduce / makespan. */
  allReduceShare: number;
}

function perStage(field: string, x: PerStage | undefined, fallback: number | Float64Array, stages: number): Float64Array {
  if (x === undefined) return typeof fallback === 'number' ? new Float64Array(stages).fill(fallback) : fallback;
  if (typeof x === 'number') {
    requireFinite(field, x, { min: 0 });
    return new Float64Array(stages).fill(x);
  }
  if (!Array.isArray(x) || x.length !== stages) {
    throw new ConfigError(field, x, `must be a number or a list of ${stages} numbers, one per stage`);
  }
  const out = new Float64Array(stages);
  x.forEach((v, s) => {
    out[s] = requireFinite(`${field}[${s}]`, v, { min: 0 });
  });
  return out;
}

function perLink(field: string, x: PerLink | undefined, fallback: number, positive: boolean): (a: number, b: number) => number {
  if (x === undefined) return () => fallback;
  if (typeof x === 'function') return x;
  if (positive) {
    if (typeof x !== 'number' || Number.isNaN(x) || x <= 0) throw new ConfigError(field, x, 'must be a number greater than 0 (Infinity for free links)');
  } else {
    requireFinite(field, x, { min: 0 });
  }
  return () => x;
}

export interface ResolvedCosts {
  op: Record<Op, Float64Array>;
  latency: (a: number, b: number) => number;
  bandwidth: (a: number, b: number) => number;
  activationBytes: Float64Array;
  heldBytes: Float64Array;
  heldAfterInput: Float64Array;
  comm: Float64Array;
  lanes: number;
  unit: 'ms' | 'unit';
}

/** Expands a cost model to per-stage arrays for `stages` stages; throws ConfigError naming the bad field. */
export function resolveCosts(c: CostModel, stages: number): ResolvedCosts {
  const op = {
    F: perStage('costs.F', c.F, DEFAULT_OP_COSTS.F, stages),
    B: perStage('costs.B', c.B, DEFAULT_OP_COSTS.B, stages),
    I: perStage('costs.I', c.I, DEFAULT_OP_COSTS.I, stages),
    W: perStage('costs.W', c.W, DEFAULT_OP_COSTS.W, stages),
  };
  const activationBytes = perStage('costs.activationBytes', c.activationBytes, 0, stages);
  const heldBytes = perStage('costs.heldBytes', c.heldBytes, activationBytes, stages);
  const heldAfterInput = perStage('costs.heldAfterInput', c.heldAfterInput, heldBytes, stages);
  heldAfterInput.forEach((x, s) => {
    if (x > heldBytes[s]) throw new ConfigError(`costs.heldAfterInput[${s}]`, x, `must be at most heldBytes[${s}] = ${heldBytes[s]} (what W still needs is part of what the stage held)`);
  });
  if (c.tp !== undefined) {
    const extra = tpOpTimes(c.tp, stages);
    for (const o of ['F', 'B', 'I', 'W'] as const) op[o] = op[o].map((x, s) => x + extra[o][s]);
  }
  if (c.ep !== undefined) {
    const tau = epOpTimes(c.ep, stages);
    for (let s = 0; s < stages; s++) {
      const t = withAllToAll({ F: op.F[s], I: op.I[s], W: op.W[s], B: op.B[s] }, { F: tau.F[s], I: tau.I[s] }, c.ep.overlap === true);
      for (const o of ['F', 'B', 'I', 'W'] as const) op[o][s] = t[o];
    }
  }
  const comm = perStage('costs.comm', c.comm, 0, stages);
  if (c.lanes !== undefined && (typeof c.lanes !== 'number' || Number.isNaN(c.lanes) || c.lanes <= 0)) {
    throw new ConfigError('costs.lanes', c.lanes, 'must be a number greater than 0 (Infinity for independent devices)');
  }
  if (c.unit !== undefined && c.unit !== 'ms' && c.unit !== 'unit') throw new ConfigError('costs.unit', c.unit, 'must be one of ms, unit');
  return {
    op,
    latency: perLink('costs.latency', c.latency, 0, false),
    bandwidth: perLink('costs.bandwidth', c.bandwidth, Infinity, true),
    activationBytes,
    heldBytes,
    heldAfterInput,
    comm,
    lanes: c.lanes ?? Infinity,
    unit: c.unit ?? 'unit',
  };
}

/** Time a message from `from` to `to` across the boundary after stage `boundary` takes: latency + bytes / bandwidth + comm. */
export function linkDelayOf(c: ResolvedCosts): (from: number, to: number, boundary: number) => number {
  return (from, to, boundary) => {
    const bytes = c.activationBytes[boundary];
    return c.latency(from, to) + (bytes > 0 ? bytes / c.bandwidth(from, to) : 0) + c.comm[boundary];
  };
}

/**
 * Plays `s` against `costs`. Throws ConfigError if the schedule is invalid
 * (see validate.ts) or a cost is. O(actions) time and memory.
 */
export function simulate(s: Schedule, costs: CostModel = {}): SimulationResult {
  return simulateDrawn(s, costs, true);
}

/** simulate(), drawing every replica (`replicas`) or replica 0 alone, as simulateStep needs (a ring collective drawn on every replica is dp² intervals). */
function simulateDrawn(s: Schedule, costs: CostModel, replicas: boolean): SimulationResult {
  const c = resolveCosts(costs, s.stages);
  const m = resolveMesh(costs, s.stages);
  const ends = stepEndTimes(s.ranks, costs);
  const transfers: Interval[] = [];
  // Sequence parallelism: the stage's gradient sum over its tp group ends the actions after which it is read (tp-cost.ts).
  const gradSum = tpGradSumPlay(s, costs.tp);
  const duration = gradSum ? (a: Action) => c.op[a.op][a.stage] + gradSum(a) : (a: Action) => c.op[a.op][a.stage];
  const linkDelay = linkDelayOf(c);
  const costsOfPlay: PlayCosts = {
    duration,
    linkDelay,
    onTransfer: (a, rank, from, sentAt, arrivedAt) => {
      transfers.push({ rank, stage: a.stage, op: 'comm', mb: a.mb, start: sentAt, end: arrivedAt, comm: 'transfer', peer: from });
    },
  };
  // All dp × ranks workers share the lanes; replicas in lock step play like one pipeline with lanes / dp (simulate-mesh.ts).
  const lanes = c.lanes / m.dp;
  const shared = lanes < s.ranks;
  // ZeRO-2/3's collectives run between actions: played with the pipeline (simulate-zero.ts), on independent devices.
  // So are a stream's per-block all-reduces (PipeDream-2BW on replicas: simulate-blocks.ts).
  const zero = m.dp > 1 && m.zero >= 2
    ? zeroPlay(s, { dp: m.dp, zero: m.zero as 2 | 3, reshard: m.reshard, prefetch: m.prefetch, overlap: m.overlap, latency: m.latency, bandwidth: m.bandwidth, gradBytes: m.gradBytes, readback: m.readback, update: m.update, write: m.write })
    : m.dp > 1 && m.every !== null
      ? blockPlay(s, { dp: m.dp, every: m.every, latency: m.latency, bandwidth: m.bandwidth, gradBytes: m.gradBytes, readback: m.readback, write: m.write })
      : null;
  if (zero && shared) {
    const what = m.zero >= 2 ? `ZeRO-${m.zero}'s collectives` : "a stream's all-reduces per block";
    throw new ConfigError('costs.lanes', c.lanes, `${what} are played on independent devices: lanes must be at least dp × ranks = ${m.dp * s.ranks}`);
  }
  const { result: valid, play: first } = validateAndPlay(s, shared || zero ? { duration, linkDelay } : costsOfPlay);
  if (!valid.ok) throw new ConfigError(valid.field, valid.value, valid.rule);
  if (!first) throw new Error('simulate: no play for a valid schedule (a bug)');
  const result = zero ? play(s, { ...costsOfPlay, ...zero.hooks }) : shared ? playShared(s, costsOfPlay, lanes) : first;

  let total = transfers.length;
  for (const list of s.order) total += list.length;
  const intervals = new Array<Interval>(total);
  let n = 0;
  for (let r = 0; r < s.ranks; r++) {
    const list = s.order[r];
    const st = result.start[r];
    const en = result.end[r];
    for (let i = 0; i < list.length; i++) {
      const a = list[i];
      intervals[n++] = { rank: r, stage: a.stage, op: a.op, mb: a.mb, start: st[i], end: en[i] };
    }
  }
  for (const t of transfers) intervals[n++] = t;
  const timeline: Timeline = {
    source: 'simulated',
    ranks: s.ranks,
    stages: s.stages,
    microbatches: s.microbatches,
    intervals,
    unit: c.unit,
  };
  const stats = timelineStats(timeline);
  const memory = peakMemory(s, c.heldBytes, c.heldAfterInput);
  const out = (): SimulationResult => {
    if (!m.present) {
      return { timeline, makespan: stats.makespan, busy: stats.perRank.map((u) => u.busy), idle: stats.perRank.map((u) => u.idle), bubble: stats.bubble, memory };
    }
    if (zero) return zeroResult(s, m, zero, timeline, stats, memory, replicas);
    const step = meshStep(s, result, m);
    return meshResult(m, timeline, stats, memory, replicas ? collectiveIntervals(s, m, step) : [], step.computeMakespan, step.step, replicas, {
      time: [...step.allReduceTime],
      start: [...step.start],
      end: [...step.end],
    });
  };
  const r = out();
  withCopySum(s, costs, m, r);
  if (ends) r.stepEnd = playStepEnd(r.timeline, ends);
  if (costs.tp) r.tp = tpStep(s, costs.tp, r.makespan, gradSum);
  if (costs.tp || costs.ep) r.timeline = withTpLanes(r.timeline, costs.tp, c.op, gradSum, costs.ep);
  return r;
}

/** The chunk of a stage a replica sums over the copies: all of it, or with ZeRO its owned 1/dp. */
function zeroDpOf(m: ResolvedMesh): number {
  return m.dp > 1 && m.zero >= 1 ? m.dp : 1;
}

/**
 * Plays the sum over the model copies (simulate-copies.ts) after each rank's step in `r` (compute and collectives:
 * replica 0's lanes, every replica plays the same), drawing it on every replica and ending the step with it.
 */
function withCopySum(s: Schedule, costs: CostModel, m: ResolvedMesh, r: SimulationResult): void {
  const zeroDp = zeroDpOf(m);
  const time = copySumTimes(s, costs, m.gradBytes, zeroDp);
  if (!time) return;
  const free = new Float64Array(s.ranks);
  for (const iv of r.timeline.intervals) if (iv.replica === undefined && iv.end > free[iv.rank]) free[iv.rank] = iv.end;
  const cs = playCopySum(s, time, free, r.makespan);
  if (!cs) return;
  const drawn = copySumIntervals(s, cs, m.dp, (stage) => ((2 * (cs.copies - 1)) / cs.copies) * (m.gradBytes[stage % (s.stages / cs.copies)] / zeroDp));
  r.timeline = { ...r.timeline, intervals: [...r.timeline.intervals, ...drawn] };
  r.makespan = Math.max(r.makespan, ...cs.end);
  r.idle = r.busy.map((b) => r.makespan - b);
  r.copySum = cs;
}

/**
 * The result of a dp mesh's play: every replica's copy of the pipeline and the collectives drawn, the step
 * ending at the later of the compute and `stepEnd`, each stage's collective time and its first start and last end.
 */
function meshResult(
  m: ResolvedMesh,
  timeline: Timeline,
  stats: ReturnType<typeof timelineStats>,
  memory: RankMemory[],
  collectives: Interval[],
  computeMakespan: number,
  stepEnd: number,
  replicas: boolean,
  perStage: { time: number[]; start: number[]; end: number[] },
): SimulationResult {
  const makespan = Math.max(stats.makespan, stepEnd);
  const busy: number[] = [];
  for (let d = 0; d < m.dp; d++) for (const u of stats.perRank) busy.push(u.busy);
  const exposedAllReduce = Math.max(0, makespan - computeMakespan);
  return {
    timeline: { ...timeline, dp: m.dp, intervals: replicas ? [...timeline.intervals, ...replicaCopies(timeline.intervals, m.dp), ...collectives] : timeline.intervals },
    makespan,
    busy,
    idle: busy.map((b) => makespan - b),
    bubble: stats.bubble,
    memory,
    dp: {
      dp: m.dp,
      computeMakespan,
      allReduceTime: perStage.time,
      allReduceStart: perStage.start,
      allReduceEnd: perStage.end,
      exposedAllReduce,
      allReduceShare: makespan > 0 ? exposedAllReduce / makespan : 0,
    },
  };
}

/** The step of a play with collectives between its actions (ZeRO-2/3, a stream's blocks): compute and collectives, every replica's worker drawn. */
function zeroResult(s: Schedule, m: ResolvedMesh, zero: CollectivePlay, timeline: Timeline, stats: ReturnType<typeof timelineStats>, memory: RankMemory[], replicas: boolean): SimulationResult {
  const { end, collectives } = zero.finish();
  const msh = mesh(m.dp, s.ranks);
  const drawn = replicas ? zeroIntervals(m, collectives, (d, r) => ringNext(msh, workerOf(msh, d, r))) : [];
  const time = new Array<number>(s.stages).fill(0);
  const first = new Array<number>(s.stages).fill(Infinity);
  const last = new Array<number>(s.stages).fill(0);
  for (const c of collectives) {
    // The ring's collectives; the worker's own read-back, update and write are drawn, not counted here.
    if (c.kind !== 'reduce-scatter' && c.kind !== 'all-gather') continue;
    time[c.stage] += c.end - c.start;
    first[c.stage] = Math.min(first[c.stage], c.start);
    last[c.stage] = Math.max(last[c.stage], c.end);
  }
  return meshResult(m, timeline, stats, memory, drawn, stats.makespan, end, replicas, { time, start: first.map((x) => (Number.isFinite(x) ? x : 0)), end: last });
}

export interface StepSummary {
  /** The step (compute and collectives; messages end before the compute that waits for them). */
  makespan: number;
  computeMakespan: number;
  /** Compute-only pipeline bubble: 1 − Σ busy / (ranks · compute makespan). */
  bubble: number;
  exposedAllReduce: number;
  allReduceShare: number;
}

/**
 * The numbers of simulate() for a schedule already known valid (a generator's), on independent devices,
 * without building a timeline: what a planner needs for many candidates. Throws ConfigError for bad costs.
 */
export function simulateStep(s: Schedule, costs: CostModel = {}): StepSummary {
  const c = resolveCosts(costs, s.stages);
  if (c.lanes / (costs.dp ?? 1) < s.ranks || ((costs.dp ?? 1) > 1 && costs.allReduce?.every !== undefined)) {
    const r = simulateDrawn(s, costs, false);
    const computeMakespan = r.dp?.computeMakespan ?? r.makespan;
    return { makespan: r.makespan, computeMakespan, bubble: r.bubble, exposedAllReduce: r.dp?.exposedAllReduce ?? 0, allReduceShare: r.dp?.allReduceShare ?? 0 };
  }
  const m = resolveMesh(costs, s.stages);
  const p = play(s, { duration: (a) => c.op[a.op][a.stage], linkDelay: linkDelayOf(c) });
  if (p.stuck.length > 0) throw new ConfigError('schedule', s.name, 'deadlocks (validate it first)');
  const step = meshStep(s, p, m);
  let busy = 0;
  for (const list of s.order) for (const a of list) busy += c.op[a.op][a.stage];
  const T = step.computeMakespan;
  // The sum over model copies (DualPipe), each rank free once its compute and its stages' collectives end.
  const free = new Float64Array(s.ranks);
  for (let r = 0; r < s.ranks; r++) for (const e of p.end[r]) if (e > free[r]) free[r] = e;
  if (m.present) s.stageToRank.forEach((r, st) => (free[r] = Math.max(free[r], step.end[st])));
  const cs = playCopySum(s, copySumTimes(s, costs, m.gradBytes, zeroDpOf(m)), free, step.step);
  const end = cs ? Math.max(step.step, ...cs.end) : step.step;
  const exposed = end - T;
  return { makespan: end, computeMakespan: T, bubble: T > 0 ? 1 - busy / (s.ranks * T) : 0, exposedAllReduce: exposed, allReduceShare: end > 0 ? exposed / end : 0 };
}

export interface Predictions {
  /** The ranks share one device with `lanes` effective lanes. */
  thisMachine: SimulationResult;
  /** Each rank has its own device (the closed forms' ideal). */
  independent: SimulationResult;
}

/** The two predictions of a run: on a shared device with `lanes` lanes, and on p independent devices. */
export function predictions(s: Schedule, costs: CostModel, lanes: number): Predictions {
  return { thisMachine: simulate(s, { ...costs, lanes }), independent: simulate(s, { ...costs, lanes: Infinity }) };
}
