/**
 * The n-gram baselines of the names data, counted from the data: what a
 * trained model must beat on held-out names (names.test.ts pins the figures:
 * unigram ≈ 2.85, bigram ≈ 2.43, trigram ≈ 2.20 nats/char).
 */
import type { Examples } from './examples.ts';
import { NAMES_VOCAB_SIZE } from './names.ts';

export /** Cross-entropy (nats/char) on `test` of an add-alpha smoothed (n−1)-context model counted on `train`. */
function ngramLoss(train: Examples, test: Examples, context: number, alpha: number): number {
  const key = (ex: Examples, r: number) => Array.from(ex.inputs.subarray(r * ex.inputCols + ex.inputCols - context, (r + 1) * ex.inputCols)).join(',');
  const pair = new Map<string, number>();
  const ctx = new Map<string, number>();
  for (let r = 0; r < train.n; r++) {
    const k = key(train, r);
    ctx.set(k, (ctx.get(k) ?? 0) + 1);
    pair.set(`${k}|${train.labels[r]}`, (pair.get(`${k}|${train.labels[r]}`) ?? 0) + 1);
  }
  let nll = 0;
  for (let r = 0; r < test.n; r++) {
    const k = key(test, r);
    nll -= Math.log(((pair.get(`${k}|${test.labels[r]}`) ?? 0) + alpha) / ((ctx.get(k) ?? 0) + NAMES_VOCAB_SIZE * alpha));
  }
  return nll / test.n;
}

