import { describe, expect, it } from 'vitest';
import { generateSchedule, laneCount, simulate, peakMemory, timelineStats, tpStageMessages } from '../../schedule/index.ts';
import { measuredPeakMicrobatches, predict, scaleOnto, simulateWithMeasured } from './derived.ts';

describe('derived numbers', () => {
  it('reads peak micro-batches held from a timeline the way the simulator counts them from the order', () => {
    // Every synchronous schedule, DualPipe's mix of full and split backwards and the V shapes included.
    for (const [name, v] of [['gpipe', 1], ['1f1b', 1], ['zb-h1', 1], ['interleaved-1f1b', 2], ['interleaved-zb', 2], ['zb-v', 2], ['dualpipe-v', 2], ['dualpipe', 1], ['looped-bfs', 2], ['hanayo', 2], ['hanayo', 4]] as const) {
      const s = generateSchedule(name, 4, 8, v);
      const t = simulate(s).timeline;
      expect(measuredPeakMicrobatches(t), name).toEqual(peakMemory(s).map((m) => m.peakMicrobatches));
    }
  });

  it('counts a rank\'s peak by its own workers when the mesh has replicas and tp workers (not by lane mod ranks)', () => {
    const s = generateSchedule('1f1b', 2, 4);
    const want = peakMemory(s).map((m) => m.peakMicrobatches);
    expect(want).toEqual([2, 1]);
    for (const [dp, tp] of [[1, 2], [2, 1], [2, 2], [3, 2]]) {
      const t = predict({ schedule: '1f1b', ranks: 2, microbatches: 4, virtual: 1, dp, tp })!.result.timeline;
      expect(measuredPeakMicrobatches(t), `dp ${dp} × tp ${tp}`).toEqual(want);
    }
  });

  it('the default configuration predicts the 1F1B closed form', () => {
    const p = predict({ schedule: '1f1b', ranks: 4, microbatches: 8, virtual: 1 });
    expect(p?.result.bubble).toBeCloseTo(3 / 11, 12);
    expect(p?.closed?.bubble).toBeCloseTo(3 / 11, 12);
  });

  it('the simulator fed a timeline’s own op times reproduces it, and scaling maps one span onto another', () => {
    const s = generateSchedule('1f1b', 3, 5);
    const t = simulate(s, { F: 2, B: 5 }).timeline;
    const again = simulateWithMeasured(s, t);
    expect(again && timelineStats(again).makespan).toBeCloseTo(timelineStats(t).makespan, 9);
    const target = { ...t, intervals: t.intervals.map((iv) => ({ ...iv, start: iv.start * 3 + 10, end: iv.end * 3 + 10 })) };
    const { timeline, factor } = scaleOnto(t, target);
    expect(factor).toBeCloseTo(3, 12);
    expect(timelineStats(timeline).start).toBeCloseTo(10, 12);
    expect(timelineStats(timeline).makespan).toBeCloseTo(timelineStats(target).makespan, 9);
  });

  it('a dp × tp configuration is predicted in its mesh\'s lanes (dp × ranks × tp), its tp collectives left to the run', () => {
    const p = predict({ schedule: '1f1b', ranks: 2, microbatches: 4, virtual: 1, dp: 2, tp: 2 });
    expect(p).not.toBeNull();
    if (!p) return;
    expect(laneCount(p.result.timeline)).toBe(8);
    expect(p.result.timeline.intervals.filter((iv) => iv.op === 'F').length).toBe(8 * 4);
    expect(p.result.timeline.intervals.some((iv) => iv.coll === 'tp-all-reduce')).toBe(false);
    // The lanes change nothing in the step: the same bubble as one pipeline.
    expect(p.result.bubble).toBeCloseTo(predict({ schedule: '1f1b', ranks: 2, microbatches: 4, virtual: 1 })!.result.bubble, 12);
    // Fed a measured tp timeline, the simulated one takes its lanes.
    const s = generateSchedule('1f1b', 2, 4);
    const tp = { t: 2, latency: 0.1, bandwidth: Infinity, bytesPerElement: 4, messages: [0, 1].map(() => tpStageMessages([{ kind: 'gpt-block', width: 8 }], 2, 2)) };
    const measured = simulate(s, { F: 1, B: 2, tp }).timeline;
    const again = simulateWithMeasured(s, measured);
    expect(again && laneCount(again)).toBe(4);
    expect(again && timelineStats(again).makespan).toBeCloseTo(timelineStats(measured).makespan, 9);
  });
});
