/** Compare with PipeDream and PipeDream-2BW: their entries are the stream of the measured steps; links carry them. */
import { describe, expect, it } from 'vitest';
import { defaultRunConfig } from '../../config/run-config.ts';
import { compareConfigs, simulateAll } from './compare.ts';
import { compareParamsFromQuery, compareParamsToQuery, defaultCompareParams } from '../store/compare-params.ts';

describe('Compare: the asynchronous schedules', () => {
  it('simulates a stream over the measured steps (1F1B over steps × m), a synchronous schedule over its step', () => {
    const base = { ...defaultRunConfig(), ranks: 4, microbatches: 8, steps: 300 };
    const [one, bw, pd] = simulateAll(base, ['1f1b', 'pipedream-2bw', 'pipedream'], 1, 3);
    expect(one.config.steps).toBe(300);
    expect(one.prediction?.schedule.microbatches).toBe(8);
    expect(one.prediction?.result.makespan).toBe(3 * (8 + 3));
    for (const e of [bw, pd]) {
      expect(e.problem).toBeNull();
      expect(e.config.steps).toBe(3);
      expect(e.prediction?.schedule.microbatches).toBe(24);
      // No flush between the 3 steps: 3(24 + 3) units, where three 1F1B steps take 3 · 33.
      expect(e.prediction?.result.makespan).toBe(81);
      expect(e.prediction?.closed?.bubble).toBeCloseTo(3 / 27, 12);
    }
    // A step's own rule still holds: 2BW needs m ≥ p.
    const [small] = simulateAll({ ...base, microbatches: 2, batchSize: 64 }, ['pipedream-2bw'], 1, 3);
    expect(small.problem).toMatch(/^microbatches = 2: PipeDream-2BW needs m ≥ p = 4/);
    expect(small.prediction).toBeNull();
    expect(compareConfigs(base, ['pipedream'], 1).get('pipedream')?.steps).toBe(300);
  });

  it('a link carries them, in the registry order', () => {
    const q = new URLSearchParams();
    compareParamsToQuery({ ...defaultCompareParams(), schedules: ['1f1b', 'pipedream', 'pipedream-2bw'] }, q, true);
    const back = compareParamsFromQuery(q);
    expect(back.errors).toEqual([]);
    expect(back.params.schedules).toEqual(['1f1b', 'pipedream', 'pipedream-2bw']);
    const bad = compareParamsFromQuery(new URLSearchParams('compare.schedules=1f1b,pipedream-3bw'));
    expect(bad.errors.map((e) => e.message)).toEqual([expect.stringMatching(/^compare\.schedules = "1f1b,pipedream-3bw": "pipedream-3bw" not among gpipe, .*, pipedream, pipedream-2bw$/)]);
  });
});
