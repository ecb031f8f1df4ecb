/**
 * "Your text" as a data set: the corpus (text-corpus.ts) cut into blocks of
 * blockSize + 1 characters (block b holds characters [b·(T+1), (b+1)·(T+1));
 * a tail shorter than a block is left out), a seeded 90/10 split by block
 * (a shuffle of the block indices, then the first round(0.1·n), at least one,
 * are held out), and each block turned into examples:
 *
 * - the GPT: one row per block, x = its first T characters, y = its last T
 *   (every position takes a loss; there is no padding);
 * - the char-MLP: one row per position j = k … T of a block, the k characters
 *   before it as the context and character j as the target (context ≤ blockSize).
 */
import { ConfigError, requireInt } from '../util/errors.ts';
import { Rng } from '../util/rng.ts';
import type { Dataset, Examples } from './examples.ts';
import { fileField, type TextCorpus } from './text-corpus.ts';

/** The block size a text run starts with (the GPT's positions). */
export const TEXT_DEFAULT_BLOCK = 32;

export interface TextSplit {
  /** Block indices, in the seeded order. */
  readonly train: readonly number[];
  readonly val: readonly number[];
}

export interface TextDataset extends Dataset {
  readonly corpus: TextCorpus;
  readonly blockSize: number;
  readonly split: TextSplit;
}

/** Whole blocks of blockSize + 1 characters in `chars` characters. */
export function textBlockCount(chars: number, blockSize: number): number {
  return Math.floor(chars / (blockSize + 1));
}

/** Throws unless the text gives at least two blocks (one to train on, one held out). */
export function requireTextBlocks(corpus: TextCorpus, blockSize: number): number {
  const n = textBlockCount(corpus.ids.length, blockSize);
  if (n < 2) {
    throw new ConfigError(
      fileField(corpus.name),
      `${corpus.ids.length} characters`,
      `is shorter than two blocks of blockSize + 1 = ${blockSize + 1} characters (one to train on, one held out): pick a longer text or a smaller block size`,
    );
  }
  return n;
}

/** The seeded split of n blocks: a shuffle, then the first round(valFraction · n) (at least one) held out. */
export function splitTextBlocks(n: number, seed: number, valFraction = 0.1): TextSplit {
  requireInt('blocks', n, 2);
  const order = Array.from({ length: n }, (_, i) => i);
  new Rng(seed).fork('text:split').shuffle(order);
  const nVal = Math.max(1, Math.round(valFraction * n));
  return { val: order.slice(0, nVal), train: order.slice(nVal) };
}

/** GPT rows: x = a block's first T characters, y = its last T. */
export function textSequences(ids: Uint8Array, blocks: readonly number[], blockSize: number): Examples {
  const T = blockSize;
  const n = blocks.length;
  const inputs = new Int32Array(n * T);
  const labels = new Int32Array(n * T);
  blocks.forEach((b, r) => {
    const o = b * (T + 1);
    inputs.set(ids.subarray(o, o + T), r * T);
    labels.set(ids.subarray(o + 1, o + T + 1), r * T);
  });
  return { n, inputs, inputCols: T, inputDType: 'i32', labels, labelCols: T };
}

/** char-MLP rows: for each block and each position j = k … T, the k characters before j and character j. */
export function textContextWindows(ids: Uint8Array, blocks: readonly number[], blockSize: number, context: number): Examples {
  const T = blockSize, k = context;
  if (k > T) throw new ConfigError('context', k, `must be at most blockSize = ${T} on a text (each block of blockSize + 1 characters gives blockSize + 1 − context examples)`);
  const per = T + 1 - k;
  const n = blocks.length * per;
  const inputs = new Int32Array(n * k);
  const labels = new Int32Array(n);
  let row = 0;
  for (const b of blocks) {
    const o = b * (T + 1);
    for (let j = k; j <= T; j++, row++) {
      inputs.set(ids.subarray(o + j - k, o + j), row * k);
      labels[row] = ids[o + j];
    }
  }
  return { n, inputs, inputCols: k, inputDType: 'i32', labels };
}

export function createTextDataset(corpus: TextCorpus, model: string | undefined, blockSize: number, context: number, seed: number, valFraction = 0.1): TextDataset {
  requireInt('blockSize', blockSize, 1);
  const split = splitTextBlocks(requireTextBlocks(corpus, blockSize), seed, valFraction);
  const gpt = model === 'gpt';
  const toExamples = (blocks: readonly number[]) => (gpt ? textSequences(corpus.ids, blocks, blockSize) : textContextWindows(corpus.ids, blocks, blockSize, context));
  return {
    name: 'text',
    classes: corpus.symbols.length,
    inputCols: gpt ? blockSize : context,
    inputDType: 'i32',
    train: toExamples(split.train),
    val: toExamples(split.val),
    corpus,
    blockSize,
    split,
  };
}
