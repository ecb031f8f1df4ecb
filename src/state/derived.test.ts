import { describe, expect, it } from 'vitest';
import { generateSchedule, simulate, peakMemory, timelineStats } from '../schedule/index.ts';
import { measuredPeakMicrobatches, predict, scaleOnto, simulateWithMeasured } from './derived.ts';

describe('derived numbers', () => {
  it('reads peak micro-batches held from a timeline the way the simulator counts them from the order', () => {
    for (const name of ['gpipe', '1f1b', 'zb-h1'] as const) {
      const s = generateSchedule(name, 4, 8);
      const t = simulate(s).timeline;
      expect(measuredPeakMicrobatches(t)).toEqual(peakMemory(s).map((m) => m.peakMicrobatches));
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
});
