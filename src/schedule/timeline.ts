/**
 * The Timeline: what every rank did and when. The simulator produces one and
 * the runtime measures one; the analysis below reads either the same way.
 */
import type { Op } from './types.ts';
import { mesh, type Mesh } from './mesh.ts';

/**
 * Communication as seen from one rank: `send` posting a message, `recv-wait`
 * blocked on one, `readback` GPU to CPU, `upload` CPU to GPU, `transfer` a
 * message in flight on the link (drawn on the receiving rank, `peer` the sender),
 * `state-read` a checkpoint's read of the worker's state off the device inside a
 * stream (PipeDream-2BW: runtime/stream-checkpoint.ts; not a cost the simulator plays).
 */
/** … and swapping (vDNN): a stash copied to the host after its forward ('swap-out') and back before its backward ('swap-in'). */
export type CommKind = 'send' | 'recv-wait' | 'readback' | 'upload' | 'transfer' | 'state-read' | 'swap-out' | 'swap-in';

/**
 * The data-parallel collective at a step's flush (src/schedule/mesh.ts), one
 * interval per chunk exchange on every worker of a stage's group: `reduce-scatter`
 * and `all-gather` (a ring all-reduce is both), `gather-grads` (reading a stage's
 * gradients off the device), `shard-update` (ZeRO-1: the optimizer on this
 * worker's shard) and `scatter-back` (writing the result onto the device).
 * Tensor parallelism's collectives inside a stage, between its layers, are their
 * own kinds: `tp-all-reduce` (Megatron's g forward, f backward: partial sums of a
 * row-parallel layer or of a column-parallel layer's input gradient) and
 * `tp-all-gather` (a column-parallel layer's output columns; with sequence
 * parallelism, the token rows before one) and `tp-reduce-scatter` (sequence
 * parallelism: a row-parallel layer's partial sums, each member keeping its
 * rows), `mb` the micro-batch. Expert parallelism's all-to-all inside a stage's MoE
 * layers is its own kind too: `ep-all-to-all` (a dispatch of each token's rows to its
 * experts' workers, or the combine that brings them back; ep-cost.ts).
 * ZeRO-Offload's step on the CPU is `cpu-update` (its gradients come down as `gather-grads`, its weights go back
 * up as `scatter-back`).
 */
export type CollectiveKind = 'gather-grads' | 'reduce-scatter' | 'all-gather' | 'shard-update' | 'scatter-back' | 'tp-all-reduce' | 'tp-all-gather' | 'copy-sum' | 'tp-reduce-scatter' | 'ep-all-to-all' | 'ep-all-reduce' | 'cpu-update';

export interface Interval {
  /** Pipeline rank (the lane within its replica). */
  rank: number;
  /** Data-parallel replica (default 0): the lane is (replica · ranks + rank) · tp + tpRank (laneOf). */
  replica?: number;
  /** Tensor-parallel rank within the stage's tp group (default 0). */
  tpRank?: number;
  /** Expert-parallel rank within the stage's ep group (default 0). */
  epRank?: number;
  stage: number;
  /** F/B/I/W compute, point-to-point communication, or a data-parallel collective. */
  op: Op | 'comm' | 'collective';
  mb: number;
  start: number;
  end: number;
  comm?: CommKind;
  peer?: number;
  /** Measured compute only: the GPU's own time for the action's kernels (timestamp queries), ms. */
  gpuMs?: number;
  /** Collectives: which part of the all-reduce. */
  coll?: CollectiveKind;
  /** Collectives: bytes this worker sent in this interval (chunk exchanges), or moved (gather, scatter). */
  bytes?: number;
  /**
   * Measured `ep-all-to-all` only: ms at the interval's start spent before the group's last member entered the same
   * exchange (its own interval's start), i.e. waiting for the slowest member (runtime/report/report-ep-wait.ts).
   */
  wait?: number;
}

export interface Timeline {
  source: 'measured' | 'simulated';
  /** Pipeline ranks per replica. */
  ranks: number;
  /** Data-parallel replicas (default 1): the timeline has dp × ranks × tp lanes. */
  dp?: number;
  /** Tensor-parallel workers per pipeline rank (default 1). */
  tp?: number;
  /** Expert-parallel workers per pipeline rank (default 1): dp × ranks × ep × tp lanes. */
  ep?: number;
  stages: number;
  microbatches: number;
  intervals: Interval[];
  unit: 'ms' | 'unit';
}

export interface RankUsage {
  /** The lane (worker): the pipeline rank when dp = 1. */
  rank: number;
  /** Sum of F/B/I/W interval lengths on this rank (overlaps counted twice; a rank runs one at a time). */
  busy: number;
  /** makespan − busy. */
  idle: number;
  /** First compute start and last compute end on this rank (0, 0 when it ran nothing). */
  first: number;
  last: number;
}

export interface TimelineStats {
  /** Earliest start of any interval (compute or comm). */
  start: number;
  /** Latest end minus earliest start. */
  makespan: number;
  perRank: RankUsage[];
  /** Σ busy over ranks. */
  busy: number;
  /** 1 − Σ busy / (lanes · makespan); 0 for an empty timeline. */
  bubble: number;
}

export function isCompute(iv: Interval): iv is Interval & { op: Op } {
  return iv.op !== 'comm' && iv.op !== 'collective';
}

/** The timeline without its communication and collectives (F/B/I/W only). */
export function computeOnly(t: Timeline): Timeline {
  return { ...t, intervals: t.intervals.filter(isCompute) };
}

/** Lanes (workers) of a timeline: dp × ranks. */
export function laneCount(t: Pick<Timeline, 'ranks' | 'dp' | 'tp' | 'ep'>): number {
  return (t.dp ?? 1) * t.ranks * (t.ep ?? 1) * (t.tp ?? 1);
}

/** The mesh a timeline's lanes are the workers of. */
export function timelineMesh(t: Pick<Timeline, 'ranks' | 'dp' | 'tp' | 'ep'>): Mesh {
  return mesh(t.dp ?? 1, t.ranks, t.tp ?? 1, t.ep ?? 1);
}

/**
 * The first replicas of a data-parallel timeline, as many as fit `maxLanes` lanes (at least one): for drawing a
 * mesh whose replicas play the same step (the simulator's), where all dp × ranks lanes would be millions of
 * intervals for a canvas a few hundred pixels high. The result's dp is the replicas kept; the whole timeline
 * when it already fits.
 */
export function firstReplicas(t: Timeline, maxLanes: number): Timeline {
  const dp = t.dp ?? 1;
  const keep = Math.max(1, Math.min(dp, Math.floor(maxLanes / Math.max(1, t.ranks * (t.tp ?? 1)))));
  if (keep >= dp) return t;
  return { ...t, dp: keep, intervals: t.intervals.filter((iv) => (iv.replica ?? 0) < keep) };
}

/** The lane (worker) of an interval: ((replica · ranks + rank) · ep + epRank) · tp + tpRank (mesh.ts's worker order). */
export function laneOf(t: Pick<Timeline, 'ranks' | 'tp' | 'ep'>, iv: Pick<Interval, 'rank' | 'replica' | 'tpRank' | 'epRank'>): number {
  return (((iv.replica ?? 0) * t.ranks + iv.rank) * (t.ep ?? 1) + (iv.epRank ?? 0)) * (t.tp ?? 1) + (iv.tpRank ?? 0);
}

/** `t` played alike by each of `ep` expert-parallel workers per rank (they run the same actions): every interval once per ep rank. */
export function withEpLanes(t: Timeline, ep: number): Timeline {
  if (ep <= 1) return t;
  return { ...t, ep, intervals: t.intervals.flatMap((iv) => Array.from({ length: ep }, (_, e) => ({ ...iv, epRank: e }))) };
}

/** Latest end minus earliest start over all intervals (compute and communication). */
export function makespan(t: Timeline): number {
  return span(t).makespan;
}

function span(t: Timeline): { start: number; makespan: number } {
  let lo = Infinity;
  let hi = -Infinity;
  for (const iv of t.intervals) {
    if (iv.start < lo) lo = iv.start;
    if (iv.end > hi) hi = iv.end;
  }
  return lo === Infinity ? { start: 0, makespan: 0 } : { start: lo, makespan: hi - lo };
}

/** Busy (compute) and idle time of every lane (worker), over the timeline's whole makespan. */
export function rankUsage(t: Timeline): RankUsage[] {
  const { makespan: total } = span(t);
  const out: RankUsage[] = [];
  const lanes = laneCount(t);
  for (let r = 0; r < lanes; r++) out.push({ rank: r, busy: 0, idle: 0, first: Infinity, last: -Infinity });
  for (const iv of t.intervals) {
    if (!isCompute(iv)) continue;
    const u = out[laneOf(t, iv)];
    if (!u) continue;
    u.busy += iv.end - iv.start;
    if (iv.start < u.first) u.first = iv.start;
    if (iv.end > u.last) u.last = iv.end;
  }
  for (const u of out) {
    u.idle = total - u.busy;
    if (u.first === Infinity) {
      u.first = 0;
      u.last = 0;
    }
  }
  return out;
}

/** Bubble fraction: 1 − Σ busy compute / (lanes · makespan), counting only F/B/I/W intervals. */
export function bubbleFraction(t: Timeline): number {
  return timelineStats(t).bubble;
}

export function timelineStats(t: Timeline): TimelineStats {
  const { start, makespan: total } = span(t);
  const perRank = rankUsage(t);
  const busy = perRank.reduce((s, u) => s + u.busy, 0);
  const lanes = laneCount(t);
  const bubble = total > 0 && lanes > 0 ? 1 - busy / (lanes * total) : 0;
  return { start, makespan: total, perRank, busy, bubble };
}

/** Mean of `value` per stage and op over the intervals that have one. */
export function meanByStageOp(intervals: Interval[], value: (iv: Interval) => number | undefined): Record<number, Partial<Record<Op, number>>> {
  const sums: Record<number, Partial<Record<Op, { t: number; n: number }>>> = {};
  for (const iv of intervals) {
    const v = value(iv);
    if (v === undefined || !isCompute(iv)) continue;
    const e = ((sums[iv.stage] ??= {})[iv.op] ??= { t: 0, n: 0 });
    e.t += v;
    e.n++;
  }
  const out: Record<number, Partial<Record<Op, number>>> = {};
  for (const [stage, ops] of Object.entries(sums)) out[Number(stage)] = Object.fromEntries(Object.entries(ops).map(([op, e]) => [op, e.t / e.n]));
  return out;
}

/** Mean duration of each (stage, op) over a timeline's compute intervals (meanByStageOp of the durations). */
export function meanOpTimes(t: Timeline): Map<number, Partial<Record<Op, number>>> {
  const means = meanByStageOp(t.intervals, (iv) => iv.end - iv.start);
  const out = new Map<number, Partial<Record<Op, number>>>();
  for (const [stage, ops] of Object.entries(means)) out.set(Number(stage), ops);
  return out;
}
