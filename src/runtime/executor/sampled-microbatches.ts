/** A worker's micro-batches: its replica's (and ep rank's) rows of every step's batch from the seeded sampler. */
import { splitMicrobatches, type BatchSampler } from '../../data/batches.ts';
import { sliceRows, targetCount, type Examples } from '../../data/examples.ts';
import type { Backend, Tensor } from '../../nn/backend.ts';
import type { MicrobatchSource } from './rank-executor.ts';

/**
 * Micro-batch inputs and labels from the seeded sampler: the replica's rows of
 * each step's batch, cut into micro-batches (with ep, this worker's sequences of each); a stream (one window for the whole
 * run) numbers micro-batches across steps.
 */
export class SampledMicrobatches implements MicrobatchSource {
  private cached: { step: number; mbs: Examples[]; targets: number } | null = null;

  constructor(
    private readonly be: Backend,
    private readonly sampler: BatchSampler,
    private readonly microbatches: number,
    private readonly streaming: boolean,
    /** What a micro-batch's loss is divided by (registry UPDATE_WINDOWS lossOver). */
    private readonly lossOver: 'step' | 'microbatch',
    /** The replica's rows [lo, hi) of every batch (the whole batch with one pipeline). */
    private readonly rows: [number, number],
    /** A stream resumed at this step: its window's micro-batch 0 is the first of this step's batch. */
    private readonly firstStep = 0,
    /** Expert parallelism: this worker's slice [index·n/size, (index+1)·n/size) of every micro-batch's n sequences. */
    private readonly ep: { index: number; size: number } = { index: 0, size: 1 },
  ) {}

  /**
   * 'step' (synchronous; PipeDream-2BW, whose block of m micro-batches is a
   * step's batch): 1 / the whole step's targets, all replicas' rows (its size
   * for the MLPs, its non-padded positions for the GPT), so accumulating the
   * micro-batches, and summing over replicas, gives the batch mean.
   * 'microbatch' (PipeDream): every micro-batch is its own update, so 1 / its own targets.
   */
  lossScale(step: number, mb: number): number {
    const ex = this.examples(step, mb);
    if (this.lossOver === 'microbatch') return 1 / targetCount(ex);
    return 1 / (this.cached as { targets: number }).targets;
  }

  private examples(step: number, mb: number): Examples {
    const s = this.streaming ? this.firstStep + Math.floor(mb / this.microbatches) : step;
    const i = this.streaming ? mb % this.microbatches : mb;
    if (!this.cached || this.cached.step !== s) {
      const batch = this.sampler.batch(s);
      const [lo, hi] = this.rows;
      const mine = lo === 0 && hi === batch.n ? batch : sliceRows(batch, lo, hi);
      const { index, size } = this.ep;
      const mbs = splitMicrobatches(mine, this.microbatches).map((mb) => (size === 1 ? mb : sliceRows(mb, (index * mb.n) / size, ((index + 1) * mb.n) / size)));
      this.cached = { step: s, mbs, targets: targetCount(batch) };
    }
    return this.cached.mbs[i];
  }

  inputs(step: number, mb: number): Tensor {
    const ex = this.examples(step, mb);
    return this.be.tensor(ex.inputs, [ex.n, ex.inputCols], ex.inputDType);
  }

  labels(step: number, mb: number): Tensor {
    const ex = this.examples(step, mb);
    return this.be.tensor(ex.labels, [ex.labels.length], 'i32');
  }
}
