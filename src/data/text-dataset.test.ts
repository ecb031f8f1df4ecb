/**
 * "Your text" as a data set: blocks of blockSize + 1 characters, the seeded
 * 90/10 split by block, the GPT's rows and the char-MLP's context windows,
 * each checked against the text itself (string slices of an ASCII text), and
 * the configuration rules of a text run (its text loaded, two blocks at least).
 */
import { describe, expect, it } from 'vitest';
import { createDataset } from './datasets.ts';
import { buildCorpus, decodeIds } from './text-corpus.ts';
import { createTextDataset, splitTextBlocks, textBlockCount } from './text-dataset.ts';
import { registerCorpus } from './text-registry.ts';
import { buildModelSpec, validateModelConfig } from '../nn/model-config.ts';
import { configFromQuery, configToQuery, defaultRunConfig, validateRunConfig, withDataset } from '../config/run-config.ts';

/** An ASCII text whose every block differs: a counter written out. */
const TEXT = Array.from({ length: 400 }, (_, i) => `line ${i}: the whale ${i % 7 === 0 ? 'breaches' : 'sounds'}.\n`).join('');
const corpus = buildCorpus('lines.txt', TEXT, '0123456789abcdef');
const decode = (ids: ArrayLike<number>) => decodeIds(corpus.symbols, ids);

describe('blocks and the seeded split', () => {
  it('cuts whole blocks of blockSize + 1 characters and holds out round(10%) of them, each block once', () => {
    for (const T of [8, 16, 31]) {
      const n = Math.floor(TEXT.length / (T + 1));
      expect(textBlockCount(TEXT.length, T)).toBe(n);
      const { train, val } = splitTextBlocks(n, 5);
      expect(val.length).toBe(Math.round(n / 10));
      expect([...train, ...val].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i));
    }
  });

  it('is seeded: the same seed gives the same split, another seed another', () => {
    expect(splitTextBlocks(500, 1)).toEqual(splitTextBlocks(500, 1));
    expect(splitTextBlocks(500, 1).val).not.toEqual(splitTextBlocks(500, 2).val);
  });

  it('holds out at least one block', () => {
    expect(splitTextBlocks(2, 1).val).toHaveLength(1);
    expect(splitTextBlocks(2, 1).train).toHaveLength(1);
  });
});

describe('examples', () => {
  it('GPT: x = a block’s first T characters, y = its last T, every position a target', () => {
    const T = 16;
    const d = createTextDataset(corpus, 'gpt', T, 4, 3);
    expect(d.classes).toBe(new Set(TEXT).size);
    expect(d.train.n + d.val.n).toBe(Math.floor(TEXT.length / (T + 1)));
    for (const [ex, blocks] of [[d.train, d.split.train], [d.val, d.split.val]] as const) {
      expect(ex.labelCols).toBe(T);
      blocks.forEach((b, r) => {
        const block = TEXT.slice(b * (T + 1), (b + 1) * (T + 1));
        expect(decode(ex.inputs.subarray(r * T, (r + 1) * T))).toBe(block.slice(0, T));
        expect(decode(ex.labels.subarray(r * T, (r + 1) * T))).toBe(block.slice(1));
      });
    }
  });

  it('char-MLP: for each block and position j = k … T, the k characters before j and character j', () => {
    const T = 10, k = 3;
    const d = createTextDataset(corpus, 'char-mlp', T, k, 3);
    const per = T + 1 - k;
    expect(d.val.n).toBe(d.split.val.length * per);
    d.split.val.forEach((b, i) => {
      for (let j = k; j <= T; j++) {
        const r = i * per + (j - k);
        const at = b * (T + 1) + j;
        expect(decode(d.val.inputs.subarray(r * k, (r + 1) * k))).toBe(TEXT.slice(at - k, at));
        expect(decode([d.val.labels[r]])).toBe(TEXT[at]);
      }
    });
  });
});

describe('a text run’s configuration', () => {
  registerCorpus(corpus);
  const base = { ...withDataset(defaultRunConfig(), 'text', corpus.hash), ranks: 2, layers: 2, batchSize: 8, microbatches: 2 };

  it('choosing the text brings the GPT with the text’s block size; its vocabulary is the text’s', () => {
    expect(base.model).toBe('gpt');
    expect(base.blockSize).toBe(32);
    expect(base.textHash).toBe(corpus.hash);
    validateRunConfig(base);
    expect(buildModelSpec(base).classes).toBe(corpus.symbols.length);
    expect(buildModelSpec({ ...base, model: 'char-mlp' }).classes).toBe(corpus.symbols.length);
    expect(createDataset(base).train.inputCols).toBe(32);
  });

  it('leaving the text drops its hash; a hash on another data set is refused', () => {
    expect(withDataset(base, 'names').textHash).toBeUndefined();
    expect(() => validateModelConfig({ ...withDataset(base, 'names'), textHash: corpus.hash })).toThrow(`textHash = "${corpus.hash}": names a text; it is only for dataset "text" (dataset = "names")`);
  });

  it('names an unloaded text, a malformed hash, a too-short text and a context past the block', () => {
    expect(() => validateRunConfig({ ...base, textHash: 'ffffffffffffffff' })).toThrow(
      'textHash = "ffffffffffffffff": no text with this content hash is loaded in this page (a link cannot carry a file): pick the file the run was made from',
    );
    expect(() => validateRunConfig({ ...base, textHash: undefined })).toThrow('textHash = "(none)": must name the text by its content hash (16 hex digits)');
    const short = buildCorpus('short.txt', 'abcdefghij'.repeat(5), 'aaaaaaaaaaaaaaaa');
    registerCorpus(short);
    expect(() => validateRunConfig({ ...base, textHash: short.hash })).toThrow(
      'text file "short.txt" = "50 characters": is shorter than two blocks of blockSize + 1 = 33 characters (one to train on, one held out): pick a longer text or a smaller block size',
    );
    expect(() => validateRunConfig({ ...base, textHash: short.hash, blockSize: 24 })).not.toThrow();
    expect(() => validateRunConfig({ ...base, model: 'char-mlp', context: 12, blockSize: 8 })).toThrow('context = 12: must be at most blockSize = 8 on a text');
  });

  it('a link carries the hash (not the text) and reads back the same configuration', () => {
    const q = configToQuery(base);
    expect(q).toContain(`textHash=${corpus.hash}`);
    expect(q.length).toBeLessThan(600);
    const back = configFromQuery(q);
    expect(back.errors.map((e) => e.message)).toEqual([]);
    expect(back.config).toEqual(base);
  });
});
