/**
 * A Timeline's intervals as columns of typed arrays, to hand a large timeline from a Worker to the page:
 * structured cloning a million interval objects costs the receiving thread seconds, while typed arrays
 * are transferred without a copy and the objects rebuilt in one tight loop. Decoding gives back the same
 * intervals: the same fields, and an optional field absent where it was absent.
 */
import type { CollectiveKind, CommKind, Interval, Timeline } from './timeline.ts';

const OP_CODES: readonly Interval['op'][] = ['F', 'B', 'I', 'W', 'comm', 'collective'];
const COMM_CODES: readonly CommKind[] = ['send', 'recv-wait', 'readback', 'upload', 'transfer', 'state-read', 'swap-out', 'swap-in'];
const COLL_CODES: readonly CollectiveKind[] = ['gather-grads', 'reduce-scatter', 'all-gather', 'shard-update', 'scatter-back', 'tp-all-reduce', 'tp-all-gather', 'copy-sum', 'tp-reduce-scatter', 'ep-all-to-all', 'cpu-update'];
/** Integer columns mark an absent optional field with this (ranks, replicas and peers are never negative). */
const ABSENT = -1;

export interface TimelineColumns {
  timeline: Omit<Timeline, 'intervals'>;
  rank: Int32Array;
  replica: Int32Array;
  tpRank: Int32Array;
  stage: Int32Array;
  op: Uint8Array;
  mb: Int32Array;
  start: Float64Array;
  end: Float64Array;
  /** Code + 1; 0 when absent. */
  comm: Uint8Array;
  peer: Int32Array;
  coll: Uint8Array;
  /** Float columns: `has` bit 0 gpuMs, bit 1 bytes. */
  gpuMs: Float64Array;
  bytes: Float64Array;
  has: Uint8Array;
}

function code<T>(table: readonly T[], v: T, what: string): number {
  const i = table.indexOf(v);
  if (i < 0) throw new Error(`timeline-columns: unknown ${what} ${String(v)}`);
  return i;
}

export function encodeTimeline(t: Timeline): TimelineColumns {
  const { intervals, ...rest } = t;
  const n = intervals.length;
  const c: TimelineColumns = {
    timeline: rest,
    rank: new Int32Array(n),
    replica: new Int32Array(n),
    tpRank: new Int32Array(n),
    stage: new Int32Array(n),
    op: new Uint8Array(n),
    mb: new Int32Array(n),
    start: new Float64Array(n),
    end: new Float64Array(n),
    comm: new Uint8Array(n),
    peer: new Int32Array(n),
    coll: new Uint8Array(n),
    gpuMs: new Float64Array(n),
    bytes: new Float64Array(n),
    has: new Uint8Array(n),
  };
  for (let i = 0; i < n; i++) {
    const iv = intervals[i];
    c.rank[i] = iv.rank;
    c.replica[i] = iv.replica ?? ABSENT;
    c.tpRank[i] = iv.tpRank ?? ABSENT;
    c.stage[i] = iv.stage;
    c.op[i] = code(OP_CODES, iv.op, 'op');
    c.mb[i] = iv.mb;
    c.start[i] = iv.start;
    c.end[i] = iv.end;
    c.comm[i] = iv.comm === undefined ? 0 : code(COMM_CODES, iv.comm, 'comm') + 1;
    c.peer[i] = iv.peer ?? ABSENT;
    c.coll[i] = iv.coll === undefined ? 0 : code(COLL_CODES, iv.coll, 'coll') + 1;
    c.gpuMs[i] = iv.gpuMs ?? 0;
    c.bytes[i] = iv.bytes ?? 0;
    c.has[i] = (iv.gpuMs === undefined ? 0 : 1) | (iv.bytes === undefined ? 0 : 2);
  }
  return c;
}

/** The typed arrays' buffers, to list as transferables. */
export function timelineBuffers(c: TimelineColumns): ArrayBuffer[] {
  return [c.rank, c.replica, c.tpRank, c.stage, c.op, c.mb, c.start, c.end, c.comm, c.peer, c.coll, c.gpuMs, c.bytes, c.has].map((a) => a.buffer as ArrayBuffer);
}

export function decodeTimeline(c: TimelineColumns): Timeline {
  const intervals = new Array<Interval>(c.rank.length);
  decodeIntervals(c, intervals, 0, intervals.length);
  return { ...c.timeline, intervals };
}

/**
 * decodeTimeline a chunk at a time, yielding to the event loop between chunks (two million intervals take
 * about a second to rebuild); resolves null when `wanted` turns false between chunks.
 */
export async function decodeTimelineInChunks(c: TimelineColumns, wanted: () => boolean = () => true, chunk = 50_000): Promise<Timeline | null> {
  const intervals = new Array<Interval>(c.rank.length);
  for (let from = 0; from < intervals.length; from += chunk) {
    if (from > 0) await new Promise((r) => setTimeout(r, 0));
    if (!wanted()) return null;
    decodeIntervals(c, intervals, from, Math.min(intervals.length, from + chunk));
  }
  return { ...c.timeline, intervals };
}

function decodeIntervals(c: TimelineColumns, out: Interval[], from: number, to: number): void {
  for (let i = from; i < to; i++) {
    const iv: Interval = { rank: c.rank[i], stage: c.stage[i], op: OP_CODES[c.op[i]], mb: c.mb[i], start: c.start[i], end: c.end[i] };
    if (c.replica[i] !== ABSENT) iv.replica = c.replica[i];
    if (c.tpRank[i] !== ABSENT) iv.tpRank = c.tpRank[i];
    if (c.comm[i] !== 0) iv.comm = COMM_CODES[c.comm[i] - 1];
    if (c.peer[i] !== ABSENT) iv.peer = c.peer[i];
    if (c.coll[i] !== 0) iv.coll = COLL_CODES[c.coll[i] - 1];
    if (c.has[i] & 1) iv.gpuMs = c.gpuMs[i];
    if (c.has[i] & 2) iv.bytes = c.bytes[i];
    out[i] = iv;
  }
}
