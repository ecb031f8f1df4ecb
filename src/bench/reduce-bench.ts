/**
 * The reduction rows of the kernels suite: the bias gradient (colSumAcc, a sum
 * over rows per column) and the LayerNorm weight gradients
 * (layerNormBackwardWeightAcc: dgamma += Σ dy·x̂, dbeta += Σ dy) at the shapes
 * a GPT step runs them (rows = batch × block), ours beside what TF.js's WebGPU
 * backend runs for the same result (tf.sum(dy, 0); for LayerNorm x̂ from x,
 * mean and rstd, then the two sums), timed by matmul-bench.ts's loop
 * (timeRuns): each figure a batch of calls from a settled queue to completion.
 */
import type { GpuBackend } from '../gpu/gpu-backend.ts';
import { defaultBatch, median, randomOperand, timeRuns } from './matmul-bench.ts';
import { loadTfjsWebGpu, settle as settleTfjs } from './tfjs-matmul-bench.ts';

export type ReduceOp = 'colSumAcc' | 'layerNormBackwardWeightAcc';

export interface ReduceBenchRow {
  op: ReduceOp;
  rows: number;
  cols: number;
  /** Median milliseconds per call. */
  oursMs: number;
  tfjsMs: number;
  /** tfjsMs / oursMs (above 1: ours is faster). */
  ratio: number;
}

/** [op, rows, cols]: the GPT's default (batch 32 × block 16, width 32: biases of 32, 96, 128) and makemore's size (64 × 16, width 64, MLP 256). */
export const REDUCE_BENCH_CASES: readonly [ReduceOp, number, number][] = [
  ['colSumAcc', 512, 32],
  ['colSumAcc', 512, 128],
  ['colSumAcc', 1024, 256],
  ['layerNormBackwardWeightAcc', 512, 32],
  ['layerNormBackwardWeightAcc', 1024, 64],
];

export interface ReduceBenchOptions {
  warmup: number;
  repeats: number;
}

/** Times one case on both sides (ours first). */
export async function benchReduce(be: GpuBackend, [op, rows, cols]: readonly [ReduceOp, number, number], o: ReduceBenchOptions): Promise<ReduceBenchRow> {
  // Calls per timed batch: about as much memory traffic as a defaultBatch of matmuls moves flops, at least 8.
  const batch = Math.max(8, Math.min(64, defaultBatch(rows, cols, 64)));
  const dyData = randomOperand(rows * cols, 3);
  const xData = randomOperand(rows * cols, 4);
  const meanData = randomOperand(rows, 5);
  const rstdData = randomOperand(rows, 6).map((v) => 1 + v);
  const dy = be.tensor(dyData, [rows, cols]);
  const x = be.tensor(xData, [rows, cols]);
  const mean = be.tensor(meanData, [rows]);
  const rstd = be.tensor(rstdData, [rows]);
  const g = be.zeros([cols]);
  const b = be.zeros([cols]);
  const issue = op === 'colSumAcc' ? () => be.colSumAcc(g, dy) : () => be.layerNormBackwardWeightAcc(g, b, x, mean, rstd, dy);
  const ours = await timeRuns(
    {
      async warm() {
        issue();
        await be.sync();
      },
      issue,
      settle: () => be.sync(),
    },
    o.warmup,
    o.repeats,
    batch,
  );
  for (const t of [dy, x, mean, rstd, g, b]) be.dispose(t);

  const tf = await loadTfjsWebGpu();
  const tdy = tf.tensor2d(dyData, [rows, cols]);
  const tx = tf.tensor2d(xData, [rows, cols]);
  const tmean = tf.tensor2d(meanData, [rows, 1]);
  const trstd = tf.tensor2d(rstdData, [rows, 1]);
  let held: { dispose(): void; data(): Promise<unknown> }[] = [];
  const tfIssue = (): void => {
    if (op === 'colSumAcc') {
      held.push(tf.sum(tdy, 0));
      return;
    }
    const out = tf.tidy(() => {
      const xhat = tf.mul(tf.sub(tx, tmean), trstd);
      return [tf.sum(tf.mul(tdy, xhat), 0), tf.sum(tdy, 0)];
    });
    held.push(...out);
  };
  const drop = (): void => {
    for (const t of held) t.dispose();
    held = [];
  };
  const peer = await timeRuns(
    {
      async warm() {
        tfIssue();
        await held[held.length - 1].data();
        drop();
      },
      issue: tfIssue,
      async settle() {
        await settleTfjs(tf, held[held.length - 1] ?? null);
        drop();
      },
    },
    o.warmup,
    o.repeats,
    batch,
  );
  for (const t of [tdy, tx, tmean, trstd]) t.dispose();
  const oursMs = median(ours.times);
  const tfjsMs = median(peer.times);
  return { op, rows, cols, oursMs, tfjsMs, ratio: tfjsMs / oursMs };
}
