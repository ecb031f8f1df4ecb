import { describe, expect, it } from 'vitest';
import { toChromeTrace } from './chrome-trace.ts';
import { generateSchedule } from './registry.ts';
import { simulate } from './simulate.ts';

describe('Chrome trace', () => {
  it('writes one complete event per interval, a thread per rank, times in microseconds', () => {
    const r = simulate(generateSchedule('1f1b', 2, 2), { latency: 0.5 });
    const trace = toChromeTrace(r.timeline);
    const x = trace.traceEvents.filter((e) => e.ph === 'X');
    expect(x).toHaveLength(r.timeline.intervals.length);
    const f = x.find((e) => e.name === '1F0');
    expect(f).toMatchObject({ pid: 0, tid: 1, ts: 1500, dur: 1000, cat: 'F', args: { rank: 1, stage: 1, op: 'F', mb: 0 } });
    const comm = x.filter((e) => e.cat === 'comm');
    expect(comm.length).toBeGreaterThan(0);
    expect(comm.every((e) => e.pid === 1)).toBe(true);
    const names = trace.traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === 0).map((e) => e.args?.name);
    expect(names).toEqual(['rank 0', 'rank 1']);
    expect(trace.displayTimeUnit).toBe('ms');
    // Plain JSON, as Perfetto and chrome://tracing load it.
    expect(JSON.parse(JSON.stringify(trace))).toEqual(trace);
  });

  it('counter tracks: one "C" event per sample, on its lane, in microseconds, its series as args', () => {
    const r = simulate(generateSchedule('1f1b', 2, 2), {});
    const samples = [{ t: 0, values: { weights: 10, temp: 0 } }, { t: 1.5, values: { weights: 10, temp: 6 } }];
    const trace = toChromeTrace(r.timeline, 'PipeLab', [{ lane: 1, name: 'memory of worker 1 (bytes)', samples }]);
    const c = trace.traceEvents.filter((e) => e.ph === 'C');
    expect(c).toEqual([
      { name: 'memory of worker 1 (bytes)', ph: 'C', pid: 0, tid: 1, ts: 0, args: { weights: 10, temp: 0 } },
      { name: 'memory of worker 1 (bytes)', ph: 'C', pid: 0, tid: 1, ts: 1500, args: { weights: 10, temp: 6 } },
    ]);
  });

  it('scales a measured timeline in ms to microseconds', () => {
    const trace = toChromeTrace({
      source: 'measured',
      ranks: 1,
      stages: 1,
      microbatches: 1,
      unit: 'ms',
      intervals: [{ rank: 0, stage: 0, op: 'W', mb: 3, start: 2.5, end: 4 }],
    });
    expect(trace.traceEvents.find((e) => e.ph === 'X')).toMatchObject({ name: '0W3', ts: 2500, dur: 1500 });
    expect(trace.traceEvents.some((e) => e.pid === 1)).toBe(false);
  });
});
