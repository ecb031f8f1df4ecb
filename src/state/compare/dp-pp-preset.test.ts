import { describe, expect, it } from 'vitest';
import { stageCut } from '../../config/run-limits.ts';
import { dpPpSentence, dpPpShapes, stageWeightBytes, type DpPpRow } from './dp-pp-preset.ts';

describe('dp × pp at 8 workers', () => {
  const shapes = dpPpShapes();
  it('four shapes on 8 workers, the same global batch, micro-batch rows and model', () => {
    expect(shapes.map((s) => s.key)).toEqual(['1×8', '2×4', '4×2', '8×1']);
    for (const s of shapes) {
      expect(s.dp * s.ranks).toBe(8);
      expect(s.config.dp).toBe(s.dp);
      expect(s.config.ranks).toBe(s.ranks);
      expect(s.config.batchSize).toBe(32);
      // Each replica takes batch / dp rows in micro-batches of 2 rows: m = 16, 8, 4, 2.
      expect(s.config.microbatches * 2 * s.dp).toBe(32);
      expect(Number.isInteger(s.config.microbatches)).toBe(true);
    }
    expect(shapes.map((s) => s.config.microbatches)).toEqual([16, 8, 4, 2]);
    const { ranks: _r, dp: _d, microbatches: _m, ...model } = shapes[0].config;
    for (const s of shapes.slice(1)) {
      const { ranks: _r2, dp: _d2, microbatches: _m2, ...other } = s.config;
      expect(other).toEqual(model);
    }
  });

  it('every shape cuts the same weights: the stages of 1×8 sum to the one stage of 8×1', () => {
    const deep = stageWeightBytes(shapes[0].config);
    const flat = stageWeightBytes(shapes[3].config);
    expect(deep.length).toBe(8);
    expect(flat.length).toBe(1);
    expect(deep.reduce((a, b) => a + b, 0)).toBe(flat[0]);
    // 8 blocks, one per stage at 1 × 8.
    expect(stageCut(shapes[0].config).spec.blocks.length).toBe(8);
  });

  const row = (key: string, bubble: number, allReduceShare: number, stepMs: number): DpPpRow => {
    const [dp, ranks] = key.split('×').map(Number);
    return { key, dp, ranks, measured: { bubble, allReduceShare, stepMs }, memoryBytes: 0 };
  };

  it('the sentence reads the first, last and fastest rows', () => {
    const rows = [row('1×8', 0.6, 0, 120), row('2×4', 0.45, 0.05, 90), row('4×2', 0.3, 0.12, 70.25), row('8×1', 0.02, 0.3, 80)];
    expect(dpPpSentence(rows)).toBe(
      'At 8 workers, going from 1×8 to 8×1 cut the bubble from 60.0% to 2.0% while the all-reduce grew to 30.0% of the step; the fastest was 4×2 at 70.3 ms per step.',
    );
  });

  it('the sentence says so when the numbers go the other way, and waits for two rows', () => {
    expect(dpPpSentence([row('1×8', 0.1, 0.2, 50), row('8×1', 0.2, 0.1, 60)])).toBe(
      'At 8 workers, going from 1×8 to 8×1 raised the bubble from 10.0% to 20.0% while the all-reduce fell to 10.0% of the step; the fastest was 1×8 at 50.0 ms per step.',
    );
    expect(dpPpSentence([row('1×8', 0.1, 0, 50)])).toBeNull();
  });
});

describe('compare.preset in the URL', () => {
  it('round-trips and refuses an unknown preset by field, value and rule', async () => {
    const { compareParamsFromQuery, compareParamsToQuery, defaultCompareParams } = await import('../store/compare-params.ts');
    const q = new URLSearchParams();
    compareParamsToQuery({ ...defaultCompareParams(), preset: 'dp-pp' }, q, false);
    expect(q.get('compare.preset')).toBe('dp-pp');
    expect(compareParamsFromQuery(q)).toEqual({ params: { ...defaultCompareParams(), preset: 'dp-pp' }, errors: [] });
    const bad = compareParamsFromQuery(new URLSearchParams('compare.preset=zz'));
    expect(bad.errors.map((e) => e.message)).toEqual(['compare.preset = "zz": must be one of dp-pp, zero, wins, fit, ep']);
    expect(bad.params.preset).toBeUndefined();
  });
});

describe("Compare's simulated side with the Train configuration's dp", () => {
  it('draws dp × ranks lanes; replicas with a free all-reduce keep the pipeline bubble (p − 1)/(m + p − 1)', async () => {
    const { simulateAll } = await import('./compare.ts');
    const { defaultRunConfig } = await import('../../config/run-config.ts');
    const { laneCount } = await import('../../schedule/index.ts');
    const [e] = simulateAll({ ...defaultRunConfig(), dp: 2, ranks: 4, microbatches: 8, batchSize: 64 }, ['1f1b'], 2);
    expect(e.problem).toBeNull();
    const t = e.prediction?.result.timeline;
    expect(t?.dp).toBe(2);
    expect(t ? laneCount(t) : 0).toBe(8);
    expect(e.prediction?.result.bubble).toBeCloseTo(3 / 11, 12);
    expect(e.prediction?.result.makespan).toBe(3 * 11);
  });
});
