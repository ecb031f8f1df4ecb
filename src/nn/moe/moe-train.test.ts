/**
 * The MoE GPT trained on one device (the float64 reference; the GPU's step equals it, moe-gpu-parity.test.ts):
 * on the names, top-1 (Switch) and top-2 (GShard) with a capacity, and dropless, the training loss falls well
 * below its start in a few steps, and the aux loss is reported beside it (near its balanced value α·1 per MoE
 * block, at most α·E). The held-out loss falls too. And on a text of one's own (the page's "your text").
 */
import { describe, expect, it } from 'vitest';
import { defaultRunConfig, toTrainConfig, withDataset } from '../../config/run-config.ts';
import { buildCorpus } from '../../data/text-corpus.ts';
import { registerCorpus } from '../../data/text-registry.ts';
import { CpuBackend } from '../cpu-backend.ts';
import { defaultGptConfig } from '../model-config.ts';
import { defaultTrainConfig, type TrainConfig } from '../train-config.ts';
import { trainSingleDevice } from '../train.ts';

const cpu = new CpuBackend();

describe('training the MoE GPT on the names', () => {
  it.each([
    // topK, capacityFactor, moeEvery
    [1, 1.25, 1],
    [2, 1.25, 2],
    [2, 0, 1],
  ])('top-%i, capacity factor %s, experts every %i block(s): the loss falls, the aux loss is reported', async (topK, capacityFactor, moeEvery) => {
    const cfg: TrainConfig = {
      ...defaultTrainConfig('names'),
      ...defaultGptConfig(),
      layers: 2,
      heads: 2,
      width: 16,
      batchSize: 32,
      microbatches: 2,
      lr: 0.02,
      weightDecay: 0.01,
      steps: 16,
      evalEvery: 0,
      experts: 4,
      topK,
      capacityFactor,
      moeEvery,
      auxLossWeight: 0.01,
    };
    const r = await trainSingleDevice(cpu, cfg);
    const moeBlocks = r.spec.blocks.flatMap((b) => b.layers).filter((l) => l.kind === 'gpt-moe-block').length;
    expect(moeBlocks).toBe(moeEvery === 1 ? 2 : 1);
    expect(r.losses[0]).toBeGreaterThan(3.2); // about ln 28
    const last = r.losses.slice(-4).reduce((a, b) => a + b, 0) / 4;
    expect(last).toBeLessThan(r.losses[0] - 0.5);
    expect(r.final.valLoss).toBeLessThan(r.losses[0] - 0.5);
    expect(r.auxLosses).toHaveLength(cfg.steps);
    // E·Σ f·P̄ is 1 when balanced and at most E; weighted by α, summed over the MoE blocks.
    for (const a of r.auxLosses) {
      expect(a).toBeGreaterThan(0.5 * 0.01 * moeBlocks);
      expect(a).toBeLessThanOrEqual(4 * 0.01 * moeBlocks + 1e-6);
    }
  }, 180_000);
});

describe('training the MoE GPT on your own text', () => {
  it('top-2 over 4 experts, capacity factor 1: the loss falls', async () => {
    const corpus = buildCorpus('spleen.txt', 'It is a way I have of driving off the spleen, and regulating the circulation. '.repeat(12), '5eed5eed5eed5eed');
    registerCorpus(corpus);
    const cfg = toTrainConfig({
      ...withDataset(defaultRunConfig(), 'text', corpus.hash),
      layers: 1, heads: 2, width: 16, blockSize: 12, batchSize: 16, microbatches: 2, steps: 16, lr: 0.02, evalEvery: 0, ranks: 1,
      experts: 4, topK: 2, capacityFactor: 1,
    });
    const r = await trainSingleDevice(cpu, cfg);
    expect(r.spec.blocks[0].layers.map((l) => l.kind)).toEqual(['gpt-embedding', 'gpt-moe-block']);
    const last = r.losses.slice(-4).reduce((a, b) => a + b, 0) / 4;
    expect(last).toBeLessThan(r.losses[0] - 0.5);
    expect(r.auxLosses.every((a) => a > 0)).toBe(true);
  }, 60_000);
});
