/**
 * A small GPT trained on the WebGPU backend (Dawn; SwiftShader on a machine
 * without a GPU) for a bounded number of steps beats the bigram baseline on
 * held-out names, the baseline counted from the same split (a behaviour check:
 * no wall time is asserted).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNamesDataset } from '../data/names.ts';
import { ngramLoss } from '../data/ngram-baseline.ts';
import type { GpuBackend } from '../gpu/gpu-backend.ts';
import { createTestBackend } from '../gpu/testing/node-gpu.ts';
import { defaultGptConfig } from './model-config.ts';
import { defaultTrainConfig, type TrainConfig } from './train-config.ts';
import { trainSingleDevice } from './train.ts';

let gpu: GpuBackend;

beforeAll(async () => {
  gpu = await createTestBackend();
});
afterAll(() => gpu?.destroy());

describe('training the GPT', () => {
  it('a 1-layer, 2-head, 32-wide GPT beats the bigram baseline on held-out names in 80 steps', async () => {
    const cfg: TrainConfig = {
      ...defaultTrainConfig('names'),
      ...defaultGptConfig(),
      layers: 1,
      heads: 2,
      width: 32,
      batchSize: 64,
      microbatches: 1,
      lr: 0.02,
      weightDecay: 0.01,
      steps: 80,
      evalEvery: 0,
    };
    const chars = createNamesDataset(1, cfg.seed); // the same split by name (same seed), as one-character contexts
    const bigram = ngramLoss(chars.train, chars.val, 1, 0.01);
    const r = await trainSingleDevice(gpu, cfg);
    console.log(`gpt ${cfg.layers}x${cfg.heads}x${cfg.width}: ${cfg.steps} steps, ${(r.ms / 1000).toFixed(1)} s, held-out ${r.final.valLoss.toFixed(4)} nats/char (bigram ${bigram.toFixed(4)})`);
    expect(r.losses[0]).toBeGreaterThan(3.2); // starts at about ln 28
    expect(r.final.valLoss).toBeLessThan(bigram);
  }, 180_000);
});
