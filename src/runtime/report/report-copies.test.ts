import { describe, expect, it } from 'vitest';
import { generateSchedule } from '../../schedule/index.ts';
import type { Interval, Timeline } from '../../schedule/timeline.ts';
import { copySumCosts, copySumFigures } from './report-copies.ts';

const s = generateSchedule('dualpipe', 2, 4);

function step(intervals: Interval[]): Timeline {
  return { source: 'measured', ranks: 2, stages: 4, microbatches: 4, intervals, unit: 'ms' };
}

const sum = (rank: number, stage: number, start: number, end: number): Interval => ({ rank, stage, op: 'collective', coll: 'copy-sum', mb: -1, start, end, bytes: 64 });

describe('the copies’ sum in a run report', () => {
  it('worked by hand: each ring from its last member’s start to its last member’s end, the wait for the last, the step with it and what it adds', () => {
    // p 2: rank 0 holds stages 0 (model 0) and 3 (model 1), rank 1 stages 1 and 2. Rank 1 finishes its compute at 10,
    // rank 0 at 8: rank 0 waits 2 ms in its first ring, which takes 5 ms from rank 1's start (rank 0's interval, 4 ms,
    // ends before rank 1's write-back does).
    const a = step([
      { rank: 0, stage: 0, op: 'F', mb: 0, start: 0, end: 8 },
      { rank: 1, stage: 1, op: 'F', mb: 0, start: 0, end: 10 },
      sum(0, 0, 8, 12), sum(1, 2, 10, 15),
      sum(0, 3, 15, 19), sum(1, 1, 15, 19),
    ]);
    const b = step([
      { rank: 0, stage: 0, op: 'F', mb: 0, start: 0, end: 10 },
      { rank: 1, stage: 1, op: 'F', mb: 0, start: 0, end: 10 },
      sum(0, 0, 10, 11), sum(1, 2, 10, 11),
      // Rank 1 starts last (11.5) but rank 0, which waited for it, ends last (13): the ring holds the pair 1.5.
      sum(0, 3, 11, 13), sum(1, 1, 11.5, 12.5),
    ]);
    const f = copySumFigures([a, b], s);
    if (!f) throw new Error('figures');
    expect(f.copies).toBe(2);
    expect(f.perModelStage.map((x) => [x.stages, x.ranks, x.bytes])).toEqual([[[0, 2], [0, 1], 64], [[1, 3], [1, 0], 64]]);
    // Model stage 0: rank 1 started last and ended last, 5 then 1 (not the shorter interval, rank 0's 4); waits 2 and 0 over the pair (mean 1), then 0.
    expect(f.perModelStage[0].ownMs).toBeCloseTo(3, 12);
    expect(f.perModelStage[0].waitMs).toBeCloseTo(0.5, 12);
    // Model stage 1: 4, then 1.5 (not rank 1's own 1); the waits 0, then 0.5 over the pair.
    expect(f.perModelStage[1].ownMs).toBeCloseTo(2.75, 12);
    expect(f.perModelStage[1].waitMs).toBeCloseTo(0.125, 12);
    expect(f.stepMs).toBeCloseTo((19 + 13) / 2, 12);
    expect(f.addedMs).toBeCloseTo((9 + 3) / 2, 12);
    // Schedule stage s holds model stage s mod 2.
    expect(copySumCosts(f, 4)).toEqual([3, 2.75, 3, 2.75]);
  });

  it('none for a schedule with one copy, or a run that summed nothing', () => {
    expect(copySumFigures([step([{ rank: 0, stage: 0, op: 'F', mb: 0, start: 0, end: 1 }])], s)).toBeNull();
    expect(copySumFigures([step([sum(0, 0, 0, 1)])], generateSchedule('1f1b', 2, 4))).toBeNull();
  });
});
