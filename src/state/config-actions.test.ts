import { describe, expect, it } from 'vitest';
import { defaultRunConfig, validateRunConfig, type RunConfig } from '../config/run-config.ts';
import { predict } from './derived.ts';
import { depthFor, withSchedule } from './config-actions.ts';

describe('choosing a schedule', () => {
  it('that takes virtual stages sets a working number of them and the depth they need', () => {
    const base = defaultRunConfig(); // 4 ranks, 3 layers (4 blocks), v = 1
    for (const name of ['interleaved-1f1b', 'looped-bfs', 'zb-v'] as const) {
      const next = withSchedule(base, name);
      expect(next.virtual, name).toBe(2);
      expect(next.layers + 1, name).toBeGreaterThanOrEqual(next.ranks * next.virtual);
      expect(() => validateRunConfig(next), name).not.toThrow();
      // And it is not 1F1B in disguise: the prediction has 2 stages per rank.
      expect(predict(next)!.schedule.stages, name).toBe(8);
    }
  });

  it('keeps a larger virtual and depth that already work, and one-stage schedules go back to v = 1', () => {
    const cfg: RunConfig = { ...defaultRunConfig(), schedule: 'interleaved-1f1b', virtual: 3, layers: 15 };
    expect(withSchedule(cfg, 'looped-bfs')).toMatchObject({ virtual: 3, layers: 15 });
    expect(withSchedule(cfg, '1f1b')).toMatchObject({ virtual: 1, layers: 15 });
    expect(withSchedule(cfg, 'pipedream')).toMatchObject({ virtual: 1 });
  });

  it('depthFor gives exactly one block per stage', () => {
    expect(depthFor(4, 2)).toBe(7);
    expect(depthFor(1, 1)).toBe(1);
    expect(() => validateRunConfig({ ...defaultRunConfig(), virtual: 2, schedule: 'interleaved-1f1b', layers: depthFor(4, 2) })).not.toThrow();
    expect(() => validateRunConfig({ ...defaultRunConfig(), virtual: 2, schedule: 'interleaved-1f1b', layers: depthFor(4, 2) - 1 })).toThrow(/virtual/);
  });
});
