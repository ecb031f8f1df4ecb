/**
 * Activation swapping (vDNN) on the float64 CPU host, in-process over real MessageChannels: a swapped stage's stash
 * leaves the device after its forward and comes back before its backward, and the run equals one device exactly
 * (≤ 1e-12 relative) under GPipe, 1F1B, ZB-H1's split backward, interleaving, recomputation and the GPT; the device's
 * stash peak falls (and stays within the plan's bound), the host holds what left, each stash's copy back is issued
 * before the action ahead of its backward (the prefetch), and the field's rules refuse by field, value and rule.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { trainSingleDevice } from '../../nn/train.ts';
import { runPipeline } from '../coordinator.ts';
import { recordingHosts } from '../executor/in-process-host.ts';
import { configFromQuery, configToQuery, defaultRunConfig, toTrainConfig, validateRunConfig, type RunConfig } from '../../config/run-config.ts';
import { maxRelErr } from '../../util/rel-err.ts';
import type { StepResult } from '../executor/index.ts';
import { plannedPeaks } from '../../config/memory-budget.ts';
import { ConfigError } from '../../util/errors.ts';

function cfgOf(over: Partial<RunConfig>): RunConfig {
  const cfg = { ...defaultRunConfig(), layers: 3, hidden: 6, batchSize: 16, microbatches: 4, ranks: 2, steps: 2, optimizer: 'adamw' as const, lr: 0.01, evalEvery: 0, schedule: 'gpipe' as const, swap: 'all' as const, ...over };
  validateRunConfig(cfg);
  return cfg;
}

async function run(cfg: RunConfig) {
  const seen: StepResult[][] = [];
  const report = await runPipeline(cfg, { hostFactory: recordingHosts(seen, () => new CpuBackend()), readWeights: true, recvTimeoutMs: 5000 });
  return { report, seen };
}

async function expectEqualsOneDevice(cfg: RunConfig) {
  const r = await run(cfg);
  const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
  let worst = 0;
  for (let i = 0; i < cfg.steps; i++) worst = Math.max(worst, Math.abs(r.report.losses[i] - ref.losses[i]) / Math.abs(ref.losses[i]));
  worst = Math.max(worst, maxRelErr(r.report.weights, ref.params));
  expect(worst).toBeLessThan(1e-12);
  return r;
}

const peakOf = (seen: StepResult[][], w: number) => Math.max(...seen.map((s) => Object.values(s[w].peakStashBytes).reduce((a, b) => a + b, 0)));

describe('activation swapping equals one device on the CPU host', () => {
  const CASES: [string, Partial<RunConfig>][] = [
    ['GPipe, every stage', {}],
    ['1F1B, stage 0', { schedule: '1f1b', swap: [0] }],
    ['ZB-H1 (I and W split)', { schedule: 'zb-h1' }],
    ['interleaved 1F1B, two stages a rank', { schedule: 'interleaved-1f1b', virtual: 2, layers: 3 }],
    ['GPipe with full recomputation (the stage inputs swap)', { recompute: true }],
    ['GPT, GPipe', { dataset: 'names', model: 'gpt', layers: 1, heads: 2, width: 8, blockSize: 16, batchSize: 8 }],
  ];
  for (const [title, over] of CASES) {
    it(title, async () => {
      const cfg = cfgOf(over);
      const { report, seen } = await expectEqualsOneDevice(cfg);
      const { swap: _swap, ...unswapped } = cfg;
      const plain = await run(unswapped);
      const plan = plannedPeaks(cfg);
      for (let w = 0; w < cfg.ranks; w++) {
        // The device's stash falls where a stash waited, within the plan's bound; the host held what left.
        expect(peakOf(seen, w)).toBeLessThanOrEqual(plan[w].stash);
        expect(peakOf(seen, w)).toBeLessThanOrEqual(peakOf(plain.seen, w));
      }
      expect(peakOf(seen, 0)).toBeLessThan(peakOf(plain.seen, 0));
      expect(Math.max(...seen.flat().map((r) => r.hostStashBytes ?? 0))).toBeGreaterThan(0);
      // Every stash that left came back: one swap-in per swap-out, before its backward, issued before the action ahead of it.
      const ivs = report.timeline.intervals;
      const outs = ivs.filter((iv) => iv.comm === 'swap-out');
      const ins = ivs.filter((iv) => iv.comm === 'swap-in');
      expect(outs.length).toBeGreaterThan(0);
      expect(ins.map((iv) => `${iv.stage}:${iv.mb}`).sort()).toEqual(outs.map((iv) => `${iv.stage}:${iv.mb}`).sort());
      for (const sin of ins) {
        const back = ivs.find((iv) => iv.rank === sin.rank && iv.stage === sin.stage && iv.mb === sin.mb && (iv.op === 'B' || iv.op === 'I'));
        expect(back).toBeDefined();
        const computes = ivs.filter((iv) => iv.rank === sin.rank && (iv.op === 'F' || iv.op === 'B' || iv.op === 'I' || iv.op === 'W')).sort((a, b) => a.start - b.start);
        const ahead = computes[computes.indexOf(back!) - 1];
        if (ahead) expect(sin.start).toBeLessThanOrEqual(ahead.start);
        expect(sin.end).toBeLessThanOrEqual(back!.start);
      }
    });
  }
});

describe('the swap field', () => {
  const refusal = (cfg: RunConfig): ConfigError => {
    try {
      validateRunConfig(cfg);
    } catch (e) {
      if (e instanceof ConfigError) return e;
      throw e;
    }
    throw new Error('not refused');
  };
  const base = { ...defaultRunConfig(), steps: 2, evalEvery: 0 };

  it('refuses a stage that stashes nothing that waits, a stage the run lacks, and a malformed list, by field, value and rule', () => {
    // 1F1B's last stage runs each backward right after its forward: nothing of it could leave.
    expect(refusal({ ...base, schedule: '1f1b', swap: [3] }).message).toMatch(/^swap = \[3\]: stage 3 stashes nothing that waits: under 1f1b its rank runs every micro-batch's backward right after its forward/);
    expect(refusal({ ...base, swap: [4] }).message).toMatch(/^swap = \[4\]: names stage 4, but the run has stages 0–3/);
    for (const bad of [[], [0, 0], [1.5], 'some' as unknown as number[]]) expect(refusal({ ...base, swap: bad }).field).toBe('swap');
    expect(() => validateRunConfig({ ...base, swap: [0, 2] })).not.toThrow();
  });

  it('travels in a link: all, or the stages', () => {
    for (const swap of ['all', [0, 2]] as const) {
      const q = configToQuery({ ...base, swap: swap as RunConfig['swap'] });
      const back = configFromQuery(q);
      expect(back.errors).toEqual([]);
      expect(back.config.swap).toEqual(swap);
    }
    const bad = configFromQuery('swap=x');
    expect(bad.errors.map((e) => e.message)).toEqual([expect.stringMatching(/^swap = "?x"?: must be 'all' or the stages to swap/)]);
  });
});
