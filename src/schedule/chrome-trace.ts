/**
 * Any Timeline as Chrome trace event JSON (the "JSON Object Format" of the
 * Trace Event Format), which Perfetto (ui.perfetto.dev) and chrome://tracing
 * open. Compute goes in process 0, one thread per rank; communication, which
 * overlaps compute, in process 1, one thread per rank. Times are microseconds:
 * a 'ms' timeline is scaled by 1000, and a 'unit' timeline shows one unit as
 * one millisecond. Counter tracks ("ph": "C": a measured run's memory per worker, bytes by kind, stacked) go
 * under the compute process, one per worker, so Perfetto draws them beside the actions.
 */
import { formatAction } from './action-text.ts';
import { laneLabel } from './mesh.ts';
import { laneCount, laneOf, timelineMesh, type Timeline } from './timeline.ts';

export interface TraceEvent {
  name: string;
  ph: 'X' | 'M' | 'C';
  pid: number;
  tid: number;
  ts?: number;
  dur?: number;
  cat?: string;
  args?: Record<string, string | number>;
}

export interface ChromeTrace {
  traceEvents: TraceEvent[];
  displayTimeUnit: 'ms';
  otherData: Record<string, string | number>;
}

/** A counter track: one lane's samples (ms on the timeline's clock), each a value per series (drawn stacked). */
export interface CounterTrack {
  lane: number;
  name: string;
  samples: readonly { t: number; values: Record<string, number> }[];
}

const COMPUTE_PID = 0;
const COMM_PID = 1;

export function toChromeTrace(t: Timeline, title = 'PipeLab', counters: readonly CounterTrack[] = []): ChromeTrace {
  const scale = 1000;
  const events: TraceEvent[] = [
    { name: 'process_name', ph: 'M', pid: COMPUTE_PID, tid: 0, args: { name: `${title} compute` } },
    { name: 'process_sort_index', ph: 'M', pid: COMPUTE_PID, tid: 0, args: { sort_index: 0 } },
  ];
  const hasComm = t.intervals.some((iv) => iv.op === 'comm' || iv.op === 'collective');
  const m = timelineMesh(t);
  if (hasComm) {
    events.push({ name: 'process_name', ph: 'M', pid: COMM_PID, tid: 0, args: { name: `${title} communication` } });
    events.push({ name: 'process_sort_index', ph: 'M', pid: COMM_PID, tid: 0, args: { sort_index: 1 } });
  }
  for (let w = 0; w < laneCount(t); w++) {
    const name = m.dp > 1 || m.tp > 1 ? `worker ${w} (${laneLabel(m, w)})` : `rank ${w}`;
    events.push({ name: 'thread_name', ph: 'M', pid: COMPUTE_PID, tid: w, args: { name } });
    events.push({ name: 'thread_sort_index', ph: 'M', pid: COMPUTE_PID, tid: w, args: { sort_index: w } });
    if (hasComm) events.push({ name: 'thread_name', ph: 'M', pid: COMM_PID, tid: w, args: { name } });
  }
  for (const iv of t.intervals) {
    const ts = iv.start * scale;
    const dur = Math.max(0, (iv.end - iv.start) * scale);
    const tid = laneOf(t, iv);
    const where: Record<string, string | number> = m.dp > 1 ? { replica: iv.replica ?? 0, rank: iv.rank } : { rank: iv.rank };
    if (m.tp > 1) where.tpRank = iv.tpRank ?? 0;
    if (iv.op === 'collective') {
      const args: Record<string, string | number> = { ...where, stage: iv.stage, exchange: iv.mb, kind: iv.coll ?? 'collective' };
      if (iv.bytes !== undefined) args.bytes = iv.bytes;
      if (iv.peer !== undefined) args.peer = iv.peer;
      events.push({ name: `${iv.coll ?? 'collective'} stage ${iv.stage}`, ph: 'X', pid: COMM_PID, tid, ts, dur, cat: 'collective', args });
    } else if (iv.op === 'comm') {
      const args: Record<string, string | number> = { ...where, stage: iv.stage, mb: iv.mb, kind: iv.comm ?? 'comm' };
      if (iv.peer !== undefined) args.peer = iv.peer;
      const peer = iv.peer !== undefined ? ` rank ${iv.peer}` : '';
      events.push({ name: `${iv.comm ?? 'comm'} ${iv.stage}:${iv.mb}${peer}`, ph: 'X', pid: COMM_PID, tid, ts, dur, cat: 'comm', args });
    } else {
      events.push({
        name: formatAction({ stage: iv.stage, op: iv.op, mb: iv.mb }),
        ph: 'X',
        pid: COMPUTE_PID,
        tid,
        ts,
        dur,
        cat: iv.op,
        args: { ...where, stage: iv.stage, op: iv.op, mb: iv.mb },
      });
    }
  }
  for (const c of counters) for (const s of c.samples) events.push({ name: c.name, ph: 'C', pid: COMPUTE_PID, tid: c.lane, ts: s.t * scale, args: { ...s.values } });
  return {
    traceEvents: events,
    displayTimeUnit: 'ms',
    otherData: { source: t.source, unit: t.unit, ranks: t.ranks, dp: m.dp, stages: t.stages, microbatches: t.microbatches },
  };
}
