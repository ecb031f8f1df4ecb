/**
 * Sampling text: from a fixed table (a model that always names the next symbol
 * of a cycle) and from a small GPT trained here on a periodic text, whose
 * samples must continue the period (the text's own next characters).
 */
import { describe, expect, it } from 'vitest';
import { sampleText } from './sample-text.ts';
import { buildCorpus, decodeIds } from './text-corpus.ts';
import { registerCorpus } from './text-registry.ts';
import { createDataset } from './datasets.ts';
import type { TextDataset } from './text-dataset.ts';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice } from '../nn/train.ts';
import { windowLogits } from '../nn/sample.ts';
import { defaultRunConfig, toTrainConfig, withDataset } from '../config/run-config.ts';

/** Logits with a huge value on (last symbol + 1) mod V. */
const cycle = (V: number, W: number) => async (x: Int32Array, rows: number) => {
  const out = new Float64Array(rows * V);
  for (let r = 0; r < rows; r++) out[r * V + ((x[r * W + W - 1] + 1) % V)] = 60;
  return out;
};

describe('sampleText', () => {
  it('continues each prompt from its last window, one model call per position', async () => {
    let calls = 0;
    const model = cycle(5, 3);
    const counted = async (x: Int32Array, rows: number) => {
      calls++;
      return model(x, rows);
    };
    const out = await sampleText(counted, { prompts: [[0, 1, 2], [4, 4, 4, 3]], window: 3, vocab: 5, length: 6, seed: 1 });
    expect(out).toEqual([[3, 4, 0, 1, 2, 3], [4, 0, 1, 2, 3, 4]]);
    expect(calls).toBe(6);
  });

  it('is seeded, and a high temperature spreads the draws over the vocabulary', async () => {
    const flat = async (_x: Int32Array, rows: number) => new Float64Array(rows * 7);
    const o = { prompts: [[0, 0]], window: 2, vocab: 7, length: 400, seed: 9 };
    const a = await sampleText(flat, o);
    expect(await sampleText(flat, o)).toEqual(a);
    expect(new Set(a[0]).size).toBe(7);
  });

  it('refuses a prompt shorter than the window and a temperature of 0', async () => {
    await expect(sampleText(cycle(5, 3), { prompts: [[1, 2]], window: 3, vocab: 5, length: 2, seed: 1 })).rejects.toThrow('prompts[0].length = 2: must be an integer at least 3');
    await expect(sampleText(cycle(5, 3), { prompts: [[1, 2, 3]], window: 3, vocab: 5, length: 2, seed: 1, temperature: 0 })).rejects.toThrow('temperature = 0: must be greater than 0');
  });
});

describe('a GPT trained on a periodic text continues it', () => {
  it('after training on "the whale. " repeated, its samples are the text’s next characters', async () => {
    const text = 'the whale. '.repeat(300);
    const corpus = buildCorpus('period.txt', text, 'feedfacefeedface');
    registerCorpus(corpus);
    const cfg = {
      ...withDataset(defaultRunConfig(), 'text', corpus.hash),
      layers: 1, heads: 2, width: 16, blockSize: 11, batchSize: 16, microbatches: 1, steps: 120, lr: 0.02, weightDecay: 0, evalEvery: 0, ranks: 1,
    };
    const be = new CpuBackend();
    let samples: number[][] = [];
    const data = createDataset(cfg) as TextDataset;
    const result = await trainSingleDevice(be, toTrainConfig(cfg), {
      onDone: async (model) => {
        const prompts = data.split.val.slice(0, 3).map((b) => corpus.ids.subarray(b * 12, b * 12 + 11));
        samples = await sampleText(windowLogits(be, model), { prompts, window: 11, vocab: corpus.symbols.length, length: 22, seed: 2, temperature: 0.5 });
      },
    });
    expect(result.final.valLoss).toBeLessThan(0.1);
    data.split.val.slice(0, 3).forEach((b, i) => {
      // The text after the prompt, from the text itself.
      const at = b * 12 + 11;
      expect(decodeIds(corpus.symbols, samples[i])).toBe(text.slice(at, at + 22));
    });
  }, 60_000);
});
