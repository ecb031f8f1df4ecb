/**
 * The tp benchmark's grid, its per-row figures and the micro-benchmark's model:
 * every (dp, tp, pp) of 4 workers, each case a run the runtime accepts with the
 * same global batch; the tp collectives read off a timeline; the direct
 * exchange's α–β fit recovering its parameters.
 */
import { describe, expect, it } from 'vitest';
import { validateRunConfig } from '../config/run-config.ts';
import type { TpFigures } from '../runtime/report/report-tp.ts';
import { benchConfig } from './schedules-suite.ts';
import { exchangeNote, fitTpExchange, tpGrid, tpMisses, tpModelMs, tpRow, tpShapes, type TpGridRow } from './tp-suite.ts';
import type { ScheduleBenchRow } from './schedules-suite.ts';

describe('the tp grid', () => {
  it('takes every (dp, tp, pp) of 4 workers', () => {
    expect(tpShapes(4).map((s) => `${s.dp}×${s.tp}×${s.pp}`)).toEqual(['1×1×4', '1×2×2', '1×4×1', '2×1×2', '2×2×1', '4×1×1']);
    expect(tpShapes(4).every((s) => s.dp * s.tp * s.pp === 4)).toBe(true);
  });

  it('runs each shape on the char-MLP and the GPT with the same model and global batch, each a valid run; the GPT’s tp ≥ 2 shapes again with sequence parallelism', () => {
    const grid = tpGrid();
    expect(grid).toHaveLength(15);
    expect(grid.filter((c) => c.sequenceParallel).map((c) => `${c.dp}×${c.tp}×${c.ranks}`)).toEqual(['1×2×2', '1×4×1', '2×2×1']);
    expect(benchConfig(grid[14], 4).sequenceParallel).toBe(true);
    const batches = new Set<string>();
    for (const c of grid) {
      const cfg = benchConfig(c, 4);
      expect(() => validateRunConfig(cfg)).not.toThrow();
      expect(cfg.dp * cfg.tp * cfg.ranks).toBe(4);
      expect(cfg.layers).toBe(4);
      batches.add(`${cfg.model}:${cfg.batchSize}`);
    }
    expect([...batches].sort()).toEqual(['char-mlp:512', 'gpt:64']);
  });
});

describe('the tp all-reduce model', () => {
  it('is one round: α + (t − 1)·bytes/β, and the fit recovers α and β for t = 2 and 4', () => {
    const truth = { latencyMs: 0.05, bytesPerMs: 400_000 };
    expect(tpModelMs({ latencyMs: 1, bytesPerMs: 100 }, 300, 3)).toBe(7);
    for (const t of [2, 4]) {
      const fit = fitTpExchange([1024, 16384, 262144, 1 << 20].map((bytes) => ({ bytes, ms: tpModelMs(truth, bytes, t) })), t);
      expect(fit.latencyMs).toBeCloseTo(truth.latencyMs, 9);
      expect(fit.bytesPerMs / truth.bytesPerMs).toBeCloseTo(1, 9);
    }
  });

  it('gives each row its shape, its errors, the micro-benchmark at each of its sizes, and says the misses with their parts', () => {
    const tp = {
      t: 2, perStage: [{ splitLayers: 2, perMicrobatch: { F: 4, B: 4 }, perLayer: 4, bytes: 16384, ownMs: 1, waitMs: 0.5 }],
      perWorker: { count: 64, bytes: 64 * 16384, ms: 20, ownMs: 10 }, stepMs: 100, exposedMs: 20, share: 0.2, ownShare: 0.1,
      fit: { latencyMs: 1, bytesPerMs: Infinity, sizes: 1, points: 64 }, points: [{ bytes: 16384, ms: 1, n: 64 }], bytesPerElement: 4,
      simulated: { stepMs: 85, share: 0.12, exposedMs: 10 },
    } satisfies TpFigures;
    const base = { model: 'gpt', p: 2, makespanMeasuredMs: 100, makespanSimulatedMs: 90 } as ScheduleBenchRow;
    const r = tpRow({ ...base, tp, mesh: { dp: 1, stepMs: 100, stepSimulatedMs: 85, perStage: [] } as unknown as ScheduleBenchRow['mesh'] }, { 2: { latencyMs: 0.1, bytesPerMs: 16384 } });
    expect(r.shape).toEqual({ dp: 1, tp: 2, pp: 2 });
    expect(r.error).toBeCloseTo(-0.15, 12);
    expect(r.computeError).toBeCloseTo(-0.1, 12);
    expect(r.tpSizes).toEqual([{ bytes: 16384, runMs: 1, benchMs: 1.1 }]);
    expect(tpMisses([r])).toContain('1 of 1 rows miss the 10% target: gpt 1×2×2 -15.0% (compute-only makespan -10.0%; tp collectives 20.0% of the step measured (10.0% their own time, the rest waits for slower members, 0.5 ms per collective at most), 12.0% simulated)');
    expect(tpMisses([{ ...r, error: 0.05 } as TpGridRow])).toContain('within 10%');
  });

  it('says how a collective in the run compares with the exchange alone, in words that follow the ratio', () => {
    const row = (runMs: number, benchMs: number) => ({ model: 'gpt', shape: { dp: 1, tp: 2, pp: 2 }, tpSizes: [{ bytes: 2048, runMs: 0.1, benchMs: 0.1 }, { bytes: 16384, runMs, benchMs }] }) as unknown as TpGridRow;
    const fits = { 2: { latencyMs: 0.05, bytesPerMs: 16384 } };
    const slow = exchangeNote([row(1.2, 0.3), row(0.9, 0.3), row(0.6, 0.3)], fits);
    expect(slow).toContain('gpt 1×2×2 16 KiB: 1.20 ms in the run, 0.300 ms exchanged alone (4.0×)');
    expect(slow).toContain('takes 3.0× the exchange alone (median over the rows): the rest is reading the tensor off the device');
    expect(slow).toContain('t = 2: α = 0.050 ms');
    const near = exchangeNote([row(0.35, 0.3)], fits);
    expect(near).toContain('takes about the exchange alone (1.2×, median over the rows)');
    expect(exchangeNote([], fits)).toBe('no tp row measured a collective (the exchange alone: t = 2: α = 0.050 ms).');
  });
});
