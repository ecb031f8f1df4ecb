/**
 * A Timeline arranged for drawing and hit-testing: per rank, the compute
 * intervals and the communication intervals, each sorted by start, packed into
 * typed arrays, with a running maximum of ends so the first interval that can
 * reach a time is found by binary search (comm intervals may overlap).
 */
import { isCompute, laneCount, laneOf, type Interval, type Timeline } from '../../schedule/index.ts';
import { paletteIndex } from './colors.ts';

export interface Lane {
  /** Intervals sorted by start. */
  items: Interval[];
  starts: Float64Array;
  ends: Float64Array;
  /** maxEnd[i] = max(ends[0..i]); non-decreasing. */
  maxEnd: Float64Array;
  /** Fill of each interval, an index into PALETTE. */
  colors: Uint8Array;
}

export interface LaneIndex {
  /** Pipeline ranks per replica. */
  ranks: number;
  /** Data-parallel replicas: the index has dp × ranks lanes (mesh.ts's worker order). */
  dp: number;
  /** Tensor-parallel workers per rank (lanes are dp × ranks × tp). */
  tp: number;
  compute: Lane[];
  comm: Lane[];
  /** Earliest start and latest end over every interval (0, 0 when empty). */
  t0: number;
  t1: number;
  /** Number of intervals indexed. */
  count: number;
  hasComm: boolean;
}

function makeLane(items: Interval[], ranks: number): Lane {
  items.sort((a, b) => a.start - b.start || a.end - b.end);
  const n = items.length;
  const starts = new Float64Array(n);
  const ends = new Float64Array(n);
  const maxEnd = new Float64Array(n);
  const colors = new Uint8Array(n);
  let mx = -Infinity;
  for (let i = 0; i < n; i++) {
    const iv = items[i];
    starts[i] = iv.start;
    ends[i] = iv.end;
    mx = Math.max(mx, iv.end);
    maxEnd[i] = mx;
    colors[i] = paletteIndex(iv.op, Math.floor(iv.stage / Math.max(1, ranks)), iv.comm, iv.coll);
  }
  return { items, starts, ends, maxEnd, colors };
}

export function buildLaneIndex(t: Timeline): LaneIndex {
  const lanes = laneCount(t);
  const compute: Interval[][] = Array.from({ length: lanes }, () => []);
  const comm: Interval[][] = Array.from({ length: lanes }, () => []);
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const iv of t.intervals) {
    const lane = laneOf(t, iv);
    if (iv.rank < 0 || iv.rank >= t.ranks || lane < 0 || lane >= lanes) continue;
    // Communication and collectives share the strip under each lane.
    (isCompute(iv) ? compute : comm)[lane].push(iv);
    if (iv.start < t0) t0 = iv.start;
    if (iv.end > t1) t1 = iv.end;
  }
  if (t0 === Infinity) {
    t0 = 0;
    t1 = 0;
  }
  const commLanes = comm.map((l) => makeLane(l, t.ranks));
  return {
    ranks: t.ranks,
    dp: t.dp ?? 1,
    tp: t.tp ?? 1,
    compute: compute.map((l) => makeLane(l, t.ranks)),
    comm: commLanes,
    t0,
    t1,
    count: t.intervals.length,
    hasComm: commLanes.some((l) => l.items.length > 0),
  };
}

/** First index i with maxEnd[i] >= time (lane length when none): intervals before it end before `time`. */
export function firstReaching(lane: Lane, time: number): number {
  let lo = 0;
  let hi = lane.maxEnd.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (lane.maxEnd[mid] < time) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index i with starts[i] > time: intervals from it on start after `time`. */
export function firstStartingAfter(lane: Lane, time: number): number {
  let lo = 0;
  let hi = lane.starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (lane.starts[mid] <= time) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index range [from, to) of the lane's intervals that may overlap [a, b]. */
export function visibleRange(lane: Lane, a: number, b: number): [number, number] {
  return [firstReaching(lane, a), firstStartingAfter(lane, b)];
}

/**
 * The interval of the lane under `time`, allowing `slack` (time units) either
 * side so that thin intervals can still be picked; the nearest wins.
 */
export function hitTest(lane: Lane, time: number, slack = 0): Interval | null {
  const [from, to] = visibleRange(lane, time - slack, time + slack);
  let best: Interval | null = null;
  let bestDist = Infinity;
  for (let i = from; i < to; i++) {
    const s = lane.starts[i];
    const e = lane.ends[i];
    const d = time < s ? s - time : time > e ? time - e : 0;
    if (d <= slack && (d < bestDist || (d === bestDist && best !== null && e - s < best.end - best.start))) {
      best = lane.items[i];
      bestDist = d;
    }
  }
  return best;
}
