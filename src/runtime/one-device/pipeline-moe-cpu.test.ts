/**
 * The MoE GPT (ep = 1: each stage holds its blocks' experts) through the pipeline runtime on the float64 CPU
 * reference at p = 2: the losses and weights of one device to 1e-12, top-1 and top-2, with a capacity and
 * dropless, with the backward split (zero bubble) and with whole-forward recomputation; the aux loss the workers
 * report each step too; with dp = 2; and a checkpoint resumed to the uninterrupted run exactly. The routing group is a
 * micro-batch's tokens on both sides, so the decisions and the aux loss's gradient are the same.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { compareGrads } from '../../nn/testing/gradcheck.ts';
import { trainSingleDevice } from '../../nn/train.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import { defaultRunConfig, toTrainConfig, type RunConfig } from '../../config/run-config.ts';
import type { TrainProgress } from '../../nn/train.ts';
import { decodeRunState, encodeRunState } from '../../run-state/codec.ts';
import { runStateOf } from '../../run-state/run-state.ts';
import { expectSameRun } from '../../run-state/testing/same-run.ts';

const hosts = (r: number) => new InProcessRankHost(r, new CpuBackend());

function moeConfig(over: Partial<RunConfig>): RunConfig {
  return {
    ...defaultRunConfig(),
    dataset: 'names',
    model: 'gpt',
    layers: 3,
    heads: 2,
    width: 6,
    blockSize: 16,
    batchSize: 8,
    microbatches: 4,
    steps: 2,
    optimizer: 'adamw',
    lr: 0.01,
    evalEvery: 0,
    ranks: 2,
    experts: 3,
    auxLossWeight: 0.1,
    ...over,
  };
}

describe('the MoE GPT through the pipeline equals single-device training (CPU reference)', () => {
  it.each([
    ['1f1b', 1, 1.25, false],
    ['gpipe', 2, 1, false],
    ['zb-h1', 2, 0, false],
    ['1f1b', 2, 1.25, true],
  ] as const)('%s, top-%i, capacity factor %s, recompute %s', async (schedule, topK, capacityFactor, recompute) => {
    const cfg = moeConfig({ schedule, topK, capacityFactor, recompute });
    const aux: number[] = [];
    const report = await runPipeline(cfg, { hostFactory: hosts, readWeights: true, recvTimeoutMs: 10000, onStep: (p) => aux.push(p.auxLoss ?? NaN) });
    const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
    expect(ref.spec.blocks.flatMap((b) => b.layers).filter((l) => l.kind === 'gpt-moe-block')).toHaveLength(3);
    expect(report.losses).toHaveLength(cfg.steps);
    for (let i = 0; i < cfg.steps; i++) expect(Math.abs(report.losses[i] - ref.losses[i])).toBeLessThan(1e-12 * Math.abs(ref.losses[i]));
    // The aux loss each step reports (summed over the workers) is one device's.
    expect(ref.auxLosses).toHaveLength(cfg.steps);
    for (let i = 0; i < cfg.steps; i++) expect(Math.abs(aux[i] - ref.auxLosses[i])).toBeLessThan(1e-12 * ref.auxLosses[i]);
    const names = Object.keys(ref.params).sort();
    expect(names).toContain('transformer.h.2.mlp.router.weight');
    expect(Object.keys(report.weights ?? {}).sort()).toEqual(names);
    for (const n of names) expect(compareGrads((report.weights ?? {})[n], ref.params[n]).relErr, n).toBeLessThan(1e-12);
  });

  it('dp = 2 × 2 ranks: each replica routes its own micro-batches, as one device does with dp × m micro-batches', async () => {
    const cfg = moeConfig({ schedule: '1f1b', topK: 2, capacityFactor: 1, dp: 2, microbatches: 2 });
    const aux: number[] = [];
    const report = await runPipeline(cfg, { hostFactory: hosts, readWeights: true, recvTimeoutMs: 10000, onStep: (p) => aux.push(p.auxLoss ?? NaN) });
    // Replica d's micro-batch j is rows [d·B/2 + j·B/4, …): one device's micro-batch 2d + j of four.
    const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig({ ...cfg, dp: 1, microbatches: 4 }));
    for (let i = 0; i < cfg.steps; i++) {
      expect(Math.abs(report.losses[i] - ref.losses[i])).toBeLessThan(1e-12 * Math.abs(ref.losses[i]));
      expect(Math.abs(aux[i] - ref.auxLosses[i])).toBeLessThan(1e-12 * ref.auxLosses[i]);
    }
    for (const n of Object.keys(ref.params)) expect(compareGrads((report.weights ?? {})[n], ref.params[n]).relErr, n).toBeLessThan(1e-12);
  });

  it('a checkpoint after step 2 of 4, through the file, resumes to the uninterrupted run exactly', async () => {
    const cfg = moeConfig({ schedule: '1f1b', topK: 2, capacityFactor: 1, steps: 4 });
    const full = await runPipeline(cfg, { hostFactory: hosts, readWeights: true, recvTimeoutMs: 10000 });
    const stop = new AbortController();
    const saved: TrainProgress[] = [];
    await runPipeline(cfg, { hostFactory: hosts, recvTimeoutMs: 10000, signal: stop.signal, onStep: (p) => p.step + 1 === 2 && stop.abort(), onProgress: (p) => saved.push(p) });
    expect(saved.map((p) => p.stepsDone)).toEqual([2]);
    const state = decodeRunState(encodeRunState(runStateOf(cfg, saved[0])), { config: cfg });
    const resumed = await runPipeline(cfg, { hostFactory: hosts, readWeights: true, recvTimeoutMs: 10000, from: state });
    expectSameRun(resumed, full);
  });
});
