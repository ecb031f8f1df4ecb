/**
 * Training on the WebGPU backend (Dawn; SwiftShader on a machine without a
 * GPU, so sizes are kept small enough for CI on 2 cores): the spiral MLP
 * reaches ≥ 95% training accuracy and the names model beats the bigram
 * baseline (2.43 nats/char) on held-out names, under 2.25.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GpuBackend } from '../gpu/gpu-backend.ts';
import { createTestBackend } from '../gpu/testing/node-gpu.ts';
import { sampleNames } from '../data/sample-names.ts';
import { nextCharLogits } from './sample.ts';
import { defaultTrainConfig } from './train-config.ts';
import type { TrainConfig } from './train-config.ts';
import { trainSingleDevice } from './train.ts';

let gpu: GpuBackend;

beforeAll(async () => {
  gpu = await createTestBackend();
});
afterAll(() => gpu?.destroy());

describe('training on the GPU backend', () => {
  it('spiral: ≥ 95% training accuracy in 60 steps', async () => {
    const cfg: TrainConfig = { ...defaultTrainConfig('spiral'), steps: 60, microbatches: 2, evalEvery: 0 };
    const r = await trainSingleDevice(gpu, cfg);
    console.log(`gpu spiral: ${cfg.steps} steps, ${(r.ms / 1000).toFixed(1)} s, train accuracy ${r.final.trainAccuracy.toFixed(3)}, val accuracy ${r.final.valAccuracy.toFixed(3)}, loss ${r.losses.at(-1)?.toFixed(4)}`);
    expect(r.final.trainAccuracy).toBeGreaterThanOrEqual(0.95);
  });

  it('names: validation loss < 2.25 nats/char in 150 steps, and it samples names', async () => {
    const cfg: TrainConfig = { ...defaultTrainConfig('names'), steps: 150, batchSize: 256, microbatches: 1, lr: 0.015, evalEvery: 0 };
    let samples: string[] = [];
    const r = await trainSingleDevice(gpu, cfg, {
      onDone: async (model) => {
        samples = await sampleNames(nextCharLogits(gpu, model), { count: 12, context: cfg.context, seed: 1 });
      },
    });
    console.log(`gpu names: ${cfg.steps} steps, ${(r.ms / 1000).toFixed(1)} s, val loss ${r.final.valLoss.toFixed(4)} nats/char, val accuracy ${r.final.valAccuracy.toFixed(3)}; samples: ${samples.join(' ')}`);
    expect(r.final.valLoss).toBeLessThan(2.25);
    expect(samples.filter((s) => s.length >= 2).length).toBeGreaterThan(8);
  });
});
