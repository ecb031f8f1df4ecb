/**
 * Seeded batches and micro-batches.
 *
 * `BatchSampler.batch(step)` is a pure function of (seed, step): examples are
 * drawn without replacement in epochs, each epoch a fresh seeded permutation
 * of the training rows, and batch `step` takes the next `batchSize` positions
 * of that endless sequence (a batch may straddle two epochs). Any worker can
 * ask for any step's batch and get the same rows.
 */
import { ConfigError, requireInt } from '../util/errors.ts';
import { Rng } from '../util/rng.ts';
import { gatherRows, sliceRows } from './examples.ts';
import type { Examples } from './examples.ts';

export class BatchSampler {
  private readonly perms = new Map<number, Uint32Array>();

  constructor(
    readonly examples: Examples,
    readonly batchSize: number,
    readonly seed: number,
  ) {
    requireInt('batchSize', batchSize, 1);
    if (examples.n < 1) throw new ConfigError('examples.n', examples.n, 'must be at least 1');
  }

  /** The rows (indices into `examples`) of batch `step`. */
  rows(step: number): Uint32Array {
    requireInt('step', step, 0);
    const n = this.examples.n;
    const out = new Uint32Array(this.batchSize);
    for (let i = 0; i < this.batchSize; i++) {
      const g = step * this.batchSize + i;
      out[i] = this.permutation(Math.floor(g / n))[g % n];
    }
    return out;
  }

  batch(step: number): Examples {
    return gatherRows(this.examples, this.rows(step));
  }

  private permutation(epoch: number): Uint32Array {
    let p = this.perms.get(epoch);
    if (!p) {
      const order = Array.from({ length: this.examples.n }, (_, i) => i);
      new Rng(this.seed).fork(`batches:epoch${epoch}`).shuffle(order);
      p = Uint32Array.from(order);
      if (this.perms.size >= 2) this.perms.delete(this.perms.keys().next().value as number);
      this.perms.set(epoch, p);
    }
    return p;
  }
}

/** Splits a batch of B rows into m consecutive micro-batches of B/m rows (views, no copy). */
export function splitMicrobatches(batch: Examples, microbatches: number): Examples[] {
  requireInt('microbatches', microbatches, 1);
  if (batch.n % microbatches !== 0) {
    throw new ConfigError('microbatches', microbatches, `must divide the batch size ${batch.n} evenly`);
  }
  const size = batch.n / microbatches;
  return Array.from({ length: microbatches }, (_, i) => sliceRows(batch, i * size, (i + 1) * size));
}
