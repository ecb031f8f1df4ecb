/**
 * Any Timeline as Chrome trace event JSON (the "JSON Object Format" of the
 * Trace Event Format), which Perfetto (ui.perfetto.dev) and chrome://tracing
 * open. Compute goes in process 0, one thread per rank; communication, which
 * overlaps compute, in process 1, one thread per rank. Times are microseconds:
 * a 'ms' timeline is scaled by 1000, and a 'unit' timeline shows one unit as
 * one millisecond.
 */
import { formatAction } from './action-text.ts';
import type { Timeline } from './timeline.ts';

export interface TraceEvent {
  name: string;
  ph: 'X' | 'M';
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

const COMPUTE_PID = 0;
const COMM_PID = 1;

export function toChromeTrace(t: Timeline, title = 'PipeLab'): ChromeTrace {
  const scale = 1000;
  const events: TraceEvent[] = [
    { name: 'process_name', ph: 'M', pid: COMPUTE_PID, tid: 0, args: { name: `${title} compute` } },
    { name: 'process_sort_index', ph: 'M', pid: COMPUTE_PID, tid: 0, args: { sort_index: 0 } },
  ];
  const hasComm = t.intervals.some((iv) => iv.op === 'comm');
  if (hasComm) {
    events.push({ name: 'process_name', ph: 'M', pid: COMM_PID, tid: 0, args: { name: `${title} communication` } });
    events.push({ name: 'process_sort_index', ph: 'M', pid: COMM_PID, tid: 0, args: { sort_index: 1 } });
  }
  for (let r = 0; r < t.ranks; r++) {
    events.push({ name: 'thread_name', ph: 'M', pid: COMPUTE_PID, tid: r, args: { name: `rank ${r}` } });
    events.push({ name: 'thread_sort_index', ph: 'M', pid: COMPUTE_PID, tid: r, args: { sort_index: r } });
    if (hasComm) events.push({ name: 'thread_name', ph: 'M', pid: COMM_PID, tid: r, args: { name: `rank ${r}` } });
  }
  for (const iv of t.intervals) {
    const ts = iv.start * scale;
    const dur = Math.max(0, (iv.end - iv.start) * scale);
    if (iv.op === 'comm') {
      const args: Record<string, string | number> = { rank: iv.rank, stage: iv.stage, mb: iv.mb, kind: iv.comm ?? 'comm' };
      if (iv.peer !== undefined) args.peer = iv.peer;
      const peer = iv.peer !== undefined ? ` rank ${iv.peer}` : '';
      events.push({ name: `${iv.comm ?? 'comm'} ${iv.stage}:${iv.mb}${peer}`, ph: 'X', pid: COMM_PID, tid: iv.rank, ts, dur, cat: 'comm', args });
    } else {
      events.push({
        name: formatAction({ stage: iv.stage, op: iv.op, mb: iv.mb }),
        ph: 'X',
        pid: COMPUTE_PID,
        tid: iv.rank,
        ts,
        dur,
        cat: iv.op,
        args: { rank: iv.rank, stage: iv.stage, op: iv.op, mb: iv.mb },
      });
    }
  }
  return {
    traceEvents: events,
    displayTimeUnit: 'ms',
    otherData: { source: t.source, unit: t.unit, ranks: t.ranks, stages: t.stages, microbatches: t.microbatches },
  };
}
