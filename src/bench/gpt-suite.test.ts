/**
 * The GPT benchmark's configurations: the grid the issue names (p = 4; gpipe,
 * 1f1b, zb-h1, interleaved v = 2; m = 4, 8), every case a run the runtime
 * accepts on the page's default GPT; and the training step on that GPT with
 * Adam's settings both sides can share (no weight decay, constant lr).
 */
import { describe, expect, it } from 'vitest';
import { validateRunConfig } from '../config/run-config.ts';
import { buildModelSpec, GPT_DEFAULTS } from '../nn/model-config.ts';
import { gptScheduleGrid } from './gpt-suite.ts';
import { benchConfig, GPT_BENCH_MICROBATCH } from './schedules-suite.ts';
import { trainingBenchConfig } from './training-suite.ts';
import { isGptSpec } from './tfjs-gpt.ts';

describe('the GPT schedule grid', () => {
  it('is p = 4 × {gpipe, 1f1b, zb-h1, interleaved v = 2} × m ∈ {4, 8}, and quick keeps gpipe and 1f1b', () => {
    const key = (c: { schedule: string; ranks: number; microbatches: number; virtual?: number }) => `${c.schedule}/${c.ranks}/${c.microbatches}/${c.virtual ?? 1}`;
    const want = [4, 8].flatMap((m) => [`gpipe/4/${m}/1`, `1f1b/4/${m}/1`, `zb-h1/4/${m}/1`, `interleaved-1f1b/4/${m}/2`]);
    const dense = (q: boolean) => gptScheduleGrid(q).filter((c) => !c.experts);
    expect(dense(false).map(key).sort()).toEqual(want.sort());
    expect(dense(true).map(key).sort()).toEqual(want.filter((k) => k.startsWith('gpipe') || k.startsWith('1f1b')).sort());
  });

  it('ends with MoE rows: ep 2 × pp 2 (4 workers), 1F1B and DualPipe, m = 4 (and 8 in the full run), each a valid run of an MoE GPT', () => {
    const moe = (q: boolean) => gptScheduleGrid(q).filter((c) => c.experts);
    const key = (c: { schedule: string; ranks: number; microbatches: number; ep?: number }) => `${c.schedule}/${c.ranks}/${c.ep}/${c.microbatches}`;
    expect(moe(true).map(key)).toEqual(['1f1b/2/2/4', 'dualpipe/2/2/4']);
    expect(moe(false).map(key)).toEqual(['1f1b/2/2/4', 'dualpipe/2/2/4', '1f1b/2/2/8', 'dualpipe/2/2/8']);
    for (const c of moe(false)) {
      const cfg = benchConfig(c, 4);
      expect(() => validateRunConfig(cfg)).not.toThrow();
      expect(cfg).toMatchObject({ model: 'gpt', experts: 4, topK: 2, ep: 2, ranks: 2, dp: 1 });
      expect(cfg.batchSize).toBe(GPT_BENCH_MICROBATCH * c.microbatches);
    }
  });

  it('runs the default GPT with p·v transformer blocks, each case a valid run', () => {
    for (const c of gptScheduleGrid(false).filter((x) => !x.experts)) {
      const cfg = benchConfig(c, 4);
      expect(() => validateRunConfig(cfg)).not.toThrow();
      const v = c.virtual ?? 1;
      expect(cfg).toMatchObject({ dataset: 'names', model: 'gpt', layers: 4 * v, width: GPT_DEFAULTS.width, heads: GPT_DEFAULTS.heads, ranks: 4, virtual: v, microbatches: c.microbatches });
      expect(cfg.batchSize).toBe(GPT_BENCH_MICROBATCH * c.microbatches);
      expect(isGptSpec(buildModelSpec(cfg))).toBe(true);
    }
  });

  it('leaves the names grid on the char-MLP', () => {
    const cfg = benchConfig({ schedule: '1f1b', ranks: 2, microbatches: 4 }, 4);
    expect(cfg.model).toBe('char-mlp');
    expect(isGptSpec(buildModelSpec(cfg))).toBe(false);
  });
});

describe('the GPT training step', () => {
  it('is the page\'s default GPT, one stage, Adam without weight decay at a constant lr', () => {
    const cfg = trainingBenchConfig({ dataset: 'names', model: 'gpt', warmup: 1, steps: 2 });
    expect(cfg).toMatchObject({ model: 'gpt', layers: GPT_DEFAULTS.layers, width: GPT_DEFAULTS.width, heads: GPT_DEFAULTS.heads, stages: 1, microbatches: 1, weightDecay: 0, lrSchedule: 'constant', steps: 3, batchSize: 32, lr: 5e-3 });
  });
});
