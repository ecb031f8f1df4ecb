import { describe, expect, it } from 'vitest';
import { MEMORY_KINDS, type StepMemory } from '../../nn/memory-ledger.ts';
import { LANE_SERIES, memoryCounters, memoryLanes } from './memory-lanes.ts';

const live = (o: Partial<Record<(typeof MEMORY_KINDS)[number], number>>) => MEMORY_KINDS.map((k) => o[k] ?? 0);
const m: StepMemory = {
  samples: [
    { t: 0, live: live({ weights: 100, grads: 100 }), pooled: 0 },
    { t: 2, live: live({ weights: 100, grads: 100, stash: 30, temp: 5, staging: 1 }), pooled: 8 },
  ],
  peak: { t: 1, live: live({ weights: 100, gathered: 50, grads: 100, stash: 30, temp: 9 }), pooled: 0 },
};

describe('memory lanes', () => {
  it('every kind lands in exactly one stacked series; the peak sits among the points in time order', () => {
    expect(LANE_SERIES.flatMap((s) => s.kinds).sort()).toEqual([...MEMORY_KINDS].sort());
    const [lane] = memoryLanes([m]);
    expect(lane.points.map((p) => p.t)).toEqual([0, 1, 2]);
    expect(lane.points[1].stack).toEqual([150, 100, 0, 30, 9, 0, 0]);
    expect(lane.points[2].stack).toEqual([100, 100, 0, 30, 5, 1, 0]);
    expect(lane.peak).toEqual({ t: 1, bytes: 289 });
  });

  it('trace counters: live bytes by kind and pooled bytes per worker, one per sample', () => {
    const c = memoryCounters([m, m]);
    expect(c.map((x) => [x.lane, x.name])).toEqual([
      [0, 'memory of worker 0 (bytes)'],
      [0, 'pooled of worker 0 (bytes)'],
      [1, 'memory of worker 1 (bytes)'],
      [1, 'pooled of worker 1 (bytes)'],
    ]);
    expect(c[0].samples[1].values).toMatchObject({ weights: 100, stash: 30, temp: 5, staging: 1 });
    expect(c[1].samples.map((s) => s.values.pooled)).toEqual([0, 8]);
  });
});
