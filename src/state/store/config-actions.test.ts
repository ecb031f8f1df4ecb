import { describe, expect, it } from 'vitest';
import { defaultRunConfig, validateRunConfig, type RunConfig } from '../../config/run-config.ts';
import { predict } from './derived.ts';
import { depthFor, suggestFix, withSchedule } from './config-actions.ts';

describe('choosing a schedule', () => {
  it('that takes virtual stages sets a working number of them and the depth they need', () => {
    const base = defaultRunConfig(); // 4 ranks, 3 layers (4 blocks), v = 1
    for (const name of ['interleaved-1f1b', 'looped-bfs', 'zb-v', 'hanayo'] as const) {
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
    // Hanayo takes 2 stages per rank in each wave: v = 3 becomes two waves, v = 4, and the model deepens to a block each.
    const two = withSchedule(cfg, 'hanayo');
    expect(two).toMatchObject({ virtual: 4, layers: 15 });
    expect(() => validateRunConfig(two)).not.toThrow();
    expect(predict(two)!.schedule.stageToRank).toEqual([0, 1, 2, 3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0]);
  });

  it('refuses hanayo with an odd virtual, naming the field, the value and the rule', () => {
    const cfg: RunConfig = { ...defaultRunConfig(), schedule: 'hanayo', virtual: 3, layers: 11 };
    expect(() => validateRunConfig(cfg)).toThrow('virtual = 3: hanayo holds 2 stages per rank in each of its W waves (down the ranks and back up), so virtual = 2W must be even (2, 4, …)');
  });

  it('depthFor gives exactly one block per stage', () => {
    expect(depthFor(4, 2)).toBe(7);
    expect(depthFor(1, 1)).toBe(1);
    expect(() => validateRunConfig({ ...defaultRunConfig(), virtual: 2, schedule: 'interleaved-1f1b', layers: depthFor(4, 2) })).not.toThrow();
    expect(() => validateRunConfig({ ...defaultRunConfig(), virtual: 2, schedule: 'interleaved-1f1b', layers: depthFor(4, 2) - 1 })).toThrow(/virtual/);
  });
});

describe('a one-click fix for a form edit that breaks a rule', () => {
  it('deepens the model to a block per stage', () => {
    const cfg: RunConfig = { ...defaultRunConfig(), ranks: 8 };
    expect(() => validateRunConfig(cfg)).toThrow(/ranks = 8/);
    const fix = suggestFix(cfg)!;
    expect(fix.label).toBe('Deepen the model to 7 layers (a block per stage)');
    expect(fix.config).toEqual({ ...cfg, layers: 7 });
    expect(() => validateRunConfig(fix.config)).not.toThrow();
  });

  it('rounds the batch to a multiple of dp × micro-batches', () => {
    const cfg: RunConfig = { ...defaultRunConfig(), microbatches: 6 };
    const fix = suggestFix(cfg)!;
    expect(fix.config.batchSize).toBe(66);
    expect(() => validateRunConfig(fix.config)).not.toThrow();
    const dp = suggestFix({ ...defaultRunConfig(), ranks: 2, dp: 3, microbatches: 4 })!;
    expect(dp.label).toBe('Set the batch to 60 (a multiple of dp × micro-batches = 12)');
  });

  it('does both when both are needed, and offers nothing it cannot make valid', () => {
    const both = suggestFix({ ...defaultRunConfig(), ranks: 8, microbatches: 6 })!;
    expect(both.config).toMatchObject({ layers: 7, batchSize: 66 });
    expect(() => validateRunConfig(both.config)).not.toThrow();
    expect(suggestFix(defaultRunConfig())).toBeNull();
    // A learning rate of 0 is nothing either fix touches.
    expect(suggestFix({ ...defaultRunConfig(), lr: 0 })).toBeNull();
  });
});
