/**
 * PipeDream (asynchronous 1F1B with weight stashing) through the pipeline runtime on the float64 CPU reference,
 * in-process over real MessageChannels, against its independent one-device reference (nn/train-pipedream.ts: every
 * stage updates after each backward, micro-batch k on stage s at version max(0, k − p + s + 1) of its weights):
 * the same losses and weights to float64 rounding at p > 1, where nothing else pins the rule down.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { pipeDreamVersion, trainPipeDream } from '../../nn/train-pipedream.ts';
import { trainSingleDevice } from '../../nn/train.ts';
import { maxRelErr, relErrByName } from '../../util/rel-err.ts';
import { defaultRunConfig, toTrainConfig, withDataset, type RunConfig } from '../../config/run-config.ts';
import { stageCut } from '../../config/run-limits.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';

const hosts = (r: number) => new InProcessRankHost(r, new CpuBackend());

function small(over: Partial<RunConfig>): RunConfig {
  const p = over.ranks ?? 2;
  return { ...defaultRunConfig(), schedule: 'pipedream', layers: Math.max(3, p), hidden: 6, batchSize: 16, steps: 3, lr: 0.01, evalEvery: 0, ...over };
}

async function expectReference(cfg: RunConfig) {
  const report = await runPipeline(cfg, { hostFactory: hosts, readWeights: true, recvTimeoutMs: 5000 });
  const ref = await trainPipeDream(new CpuBackend(), toTrainConfig(cfg), stageCut(cfg).stageBlocks);
  expect(report.losses).toHaveLength(cfg.steps);
  expect(ref.losses).toHaveLength(cfg.steps);
  let worst = 0;
  for (let t = 0; t < cfg.steps; t++) {
    const d = Math.abs(report.losses[t] - ref.losses[t]) / Math.abs(ref.losses[t]);
    worst = Math.max(worst, d);
    expect(d, `loss of step ${t}`).toBeLessThanOrEqual(1e-12);
  }
  for (const [n, e] of Object.entries(relErrByName(report.weights, ref.params))) {
    worst = Math.max(worst, e);
    expect(e, n).toBeLessThanOrEqual(1e-12);
  }
  return { report, ref, worst };
}

describe('PipeDream on the CPU reference equals its one-device rule (weight stashing, an update after every backward)', () => {
  it('the version rule: the last stage sees every earlier update, stage s is p − 1 − s updates behind', () => {
    expect([0, 1, 2, 3, 4, 5].map((k) => pipeDreamVersion(k, 3, 4))).toEqual([0, 1, 2, 3, 4, 5]);
    expect([0, 1, 2, 3, 4, 5].map((k) => pipeDreamVersion(k, 0, 4))).toEqual([0, 0, 0, 0, 1, 2]);
    expect([0, 1, 2, 3].map((k) => pipeDreamVersion(k, 0, 1))).toEqual([0, 1, 2, 3]);
  });

  const cases: [number, number, 'adamw' | 'sgd'][] = [[2, 2, 'adamw'], [2, 4, 'sgd'], [3, 2, 'adamw'], [4, 4, 'adamw'], [4, 8, 'sgd']];
  it.each(cases)('spiral MLP, p = %i, m = %i, %s (the default cosine learning rate: a rate per step)', async (p, m, optimizer) => {
    const cfg = small({ ranks: p, microbatches: m, optimizer, momentum: 0.9, lr: optimizer === 'sgd' ? 0.1 : 0.01 });
    const { worst } = await expectReference(cfg);
    console.log(`pipedream p=${p} m=${m} ${optimizer}: worst relative difference ${worst.toExponential(2)}`);
  });

  it('the reference at p = 1 is per-micro-batch training on one device (train.ts); at p = 2 the staleness moves it elsewhere', async () => {
    const cfg = small({ ranks: 1, layers: 3, microbatches: 4, lrSchedule: 'constant' });
    const perMicrobatch = await trainSingleDevice(new CpuBackend(), { ...toTrainConfig(cfg), batchSize: cfg.batchSize / 4, microbatches: 1, steps: cfg.steps * 4 });
    const one = await trainPipeDream(new CpuBackend(), toTrainConfig(cfg));
    expect(maxRelErr(one.params, perMicrobatch.params)).toBeLessThanOrEqual(1e-12);
    expect(one.microbatchLosses).toHaveLength(cfg.steps * 4);
    one.microbatchLosses.forEach((l, k) => expect(Math.abs(l - perMicrobatch.losses[k]), `micro-batch ${k}`).toBeLessThanOrEqual(1e-12 * Math.abs(l)));
    const two = await trainPipeDream(new CpuBackend(), toTrainConfig({ ...cfg, ranks: 2 }), stageCut({ ...cfg, ranks: 2 }).stageBlocks);
    expect(maxRelErr(two.params, perMicrobatch.params)).toBeGreaterThan(1e-6);
  });

  it('char-MLP on the names, p = 3, m = 3, AdamW', async () => {
    await expectReference(small({ ...withDataset(defaultRunConfig(), 'names'), schedule: 'pipedream', model: 'char-mlp', context: 3, embedDim: 4, layers: 3, hidden: 8, ranks: 3, microbatches: 3, batchSize: 24, steps: 3, lr: 0.01, evalEvery: 0 }));
  });

  it('the GPT on the names, p = 3, m = 4, AdamW', async () => {
    await expectReference(small({ ...withDataset(defaultRunConfig(), 'names'), schedule: 'pipedream', model: 'gpt', layers: 3, heads: 2, width: 8, blockSize: 16, ranks: 3, microbatches: 4, batchSize: 16, steps: 2, optimizer: 'adamw', lr: 0.01, evalEvery: 0 }));
  });

});
