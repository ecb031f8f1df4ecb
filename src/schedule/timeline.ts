/**
 * The Timeline: what every rank did and when. The simulator produces one and
 * the runtime measures one; the analysis below reads either the same way.
 */
import type { Op } from './types.ts';

/**
 * Communication as seen from one rank: `send` posting a message, `recv-wait`
 * blocked on one, `readback` GPU to CPU, `upload` CPU to GPU, `transfer` a
 * message in flight on the link (drawn on the receiving rank, `peer` the sender).
 */
export type CommKind = 'send' | 'recv-wait' | 'readback' | 'upload' | 'transfer';

export interface Interval {
  rank: number;
  stage: number;
  op: Op | 'comm';
  mb: number;
  start: number;
  end: number;
  comm?: CommKind;
  peer?: number;
  /** Measured compute only: the GPU's own time for the action's kernels (timestamp queries), ms. */
  gpuMs?: number;
}

export interface Timeline {
  source: 'measured' | 'simulated';
  ranks: number;
  stages: number;
  microbatches: number;
  intervals: Interval[];
  unit: 'ms' | 'unit';
}

export interface RankUsage {
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
  /** 1 − Σ busy / (ranks · makespan); 0 for an empty timeline. */
  bubble: number;
}

export function isCompute(iv: Interval): boolean {
  return iv.op !== 'comm';
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

/** Busy (compute) and idle time of every rank, over the timeline's whole makespan. */
export function rankUsage(t: Timeline): RankUsage[] {
  const { makespan: total } = span(t);
  const out: RankUsage[] = [];
  for (let r = 0; r < t.ranks; r++) out.push({ rank: r, busy: 0, idle: 0, first: Infinity, last: -Infinity });
  for (const iv of t.intervals) {
    if (!isCompute(iv)) continue;
    const u = out[iv.rank];
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

/** Bubble fraction: 1 − Σ busy compute / (ranks · makespan), counting only F/B/I/W intervals. */
export function bubbleFraction(t: Timeline): number {
  return timelineStats(t).bubble;
}

export function timelineStats(t: Timeline): TimelineStats {
  const { start, makespan: total } = span(t);
  const perRank = rankUsage(t);
  const busy = perRank.reduce((s, u) => s + u.busy, 0);
  const bubble = total > 0 && t.ranks > 0 ? 1 - busy / (t.ranks * total) : 0;
  return { start, makespan: total, perRank, busy, bubble };
}

/** Mean of `value` per stage and op over the intervals that have one. */
export function meanByStageOp(intervals: Interval[], value: (iv: Interval) => number | undefined): Record<number, Partial<Record<Op, number>>> {
  const sums: Record<number, Partial<Record<Op, { t: number; n: number }>>> = {};
  for (const iv of intervals) {
    const v = value(iv);
    if (v === undefined || iv.op === 'comm') continue;
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
