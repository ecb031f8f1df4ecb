import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import { generateSchedule } from './index.ts';
import { simulate } from './simulate.ts';

describe('the end of a step, simulated', () => {
  it('worked by hand: 1F1B on 2 ranks × 2 micro-batches, F 1 and B 2, each rank’s end after its last backward', () => {
    const s = generateSchedule('1f1b', 2, 2);
    // Rank 1: F0 [1,2], B0 [2,4], F1 [4,5], B1 [5,7]. Rank 0: F0 [0,1], F1 [1,2], B0 [4,6], B1 [7,9].
    const r = simulate(s, { F: 1, B: 2, stepEnd: [1, 3] });
    expect(r.stepEnd).toEqual({ time: [1, 3], free: [9, 7], end: [10, 10], step: 10 });
    // Not drawn: the makespan and the bubble are the drawn step's.
    expect(r.makespan).toBe(9);
    expect(r.bubble).toBeCloseTo(simulate(s, { F: 1, B: 2 }).bubble, 12);
    expect(simulate(s, { F: 1, B: 2, stepEnd: 0.5 }).stepEnd?.step).toBe(9.5);
    expect(simulate(s, { F: 1, B: 2 }).stepEnd).toBeUndefined();
  });

  it('starts after the rank’s collectives: dp 2, each stage’s all-reduce at the flush', () => {
    const s = generateSchedule('1f1b', 2, 4);
    const costs = { dp: 2, gradBytes: [40, 10], allReduce: { latency: 1, bandwidth: 10, overlap: false } };
    const r = simulate(s, { ...costs, stepEnd: [2, 0] });
    const dp = r.dp!;
    // Each rank holds one stage: free once its stage's all-reduce ends (after the compute: no overlap).
    expect(r.stepEnd!.free).toEqual([dp.allReduceEnd[0], dp.allReduceEnd[1]]);
    expect(dp.allReduceEnd[0]).toBeGreaterThan(dp.computeMakespan);
    expect(r.stepEnd!.step).toBeCloseTo(Math.max(dp.allReduceEnd[0] + 2, dp.allReduceEnd[1]), 12);
    expect(r.makespan).toBe(simulate(s, costs).makespan);
  });

  it('starts after the copies’ sum: DualPipe, each rank free when its last ring ends', () => {
    const s = generateSchedule('dualpipe', 4, 8);
    const r = simulate(s, { copySum: 3, stepEnd: 1 });
    const cs = r.copySum!;
    for (let rank = 0; rank < 4; rank++) {
      const ringsEnd = Math.max(...cs.end.filter((_, st) => s.stageToRank[st] === rank));
      expect(r.stepEnd!.free[rank]).toBeCloseTo(ringsEnd, 12);
    }
    expect(r.stepEnd!.step).toBeCloseTo(r.makespan + 1, 12);
  });

  it('refuses a bad time, naming the field, the value and the rule', () => {
    const s = generateSchedule('gpipe', 3, 3);
    const err = (stepEnd: unknown) => {
      try {
        simulate(s, { stepEnd: stepEnd as number });
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        return (e as Error).message;
      }
      throw new Error('accepted');
    };
    expect(err([1, 2])).toMatch(/costs\.stepEnd.*list of 3 numbers, one per rank/);
    expect(err(-1)).toMatch(/costs\.stepEnd = -1.*≥ 0/);
    expect(err([1, Number.NaN, 1])).toMatch(/costs\.stepEnd\[1\].*≥ 0/);
    expect(err('2')).toMatch(/costs\.stepEnd/);
  });
});
