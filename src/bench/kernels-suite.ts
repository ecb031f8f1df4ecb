/**
 * The kernels suite: GFLOP/s of each matmul form (A·B, A·Bᵀ, Aᵀ·B) per size,
 * PipeLab's GpuBackend (with its start-up autotune) beside TensorFlow.js's
 * WebGPU backend (tf.matMul with transposeA/transposeB), in this page, on
 * this adapter. The measuring is src/bench/matmul-bench.ts (ours) and
 * src/bench/tfjs-matmul-bench.ts (TF.js), timed the same way; for each size the
 * two run one after the other, so a busy machine slows both alike.
 */
import { GpuBackend, type AutotuneReport, type MatmulForm } from '../gpu/gpu-backend.ts';
import { BENCH_FORMS, benchMatmul, compareRows, operandShapes, randomOperand, type MatmulBenchRow, type MatmulSize } from './matmul-bench.ts';
import { benchTfjsMatmul, loadTfjsWebGpu } from './tfjs-matmul-bench.ts';
import { diffCounts, gpuCounts, installGpuCounters } from './gpu-counters.ts';
import { benchReduce, type ReduceBenchOptions, type ReduceBenchRow, type ReduceOp } from './reduce-bench.ts';

export interface KernelBenchOptions {
  warmup: number;
  repeats: number;
  /** Matmuls per timed repeat, both sides (default: matmul-bench.ts's defaultBatch). */
  batch?: number;
}

export interface KernelBenchRow {
  form: MatmulForm;
  /** 'A·B', 'A·Bᵀ', 'Aᵀ·B'. */
  op: string;
  M: number;
  N: number;
  K: number;
  /** The matmul variant our backend ran (its autotuned choice for the form). */
  variant: string;
  oursGflops: number;
  oursMs: number;
  tfjsGflops: number;
  tfjsMs: number;
  /** oursGflops / tfjsGflops. */
  ratio: number;
  /** Matmuls per timed repeat, and repeats (the median is kept). */
  batch: number;
  repeats: number;
  ours: MatmulBenchRow;
  tfjs: MatmulBenchRow;
  /** One more matmul of each side, counted: WebGPU dispatches it took (ours: pads included), and TF.js's programs. */
  oursDispatches: number;
  tfjsDispatches: number;
  tfjsPrograms: string[];
}

export interface KernelAutotune {
  /** The variant per form after the autotune. */
  choice: Record<MatmulForm, string>;
  report: AutotuneReport | null;
  /** Milliseconds GpuBackend.create({ autotune: true }) took, device included. */
  createMs: number;
}

const OP: Record<MatmulForm, string> = { NN: 'A·B', NT: 'A·Bᵀ', TN: 'Aᵀ·B', TT: 'Aᵀ·Bᵀ' };

let backend: GpuBackend | null = null;
let autotune: KernelAutotune | null = null;

/** Our backend with the start-up autotune (once per page), and what the autotune picked. */
export async function kernelsSetup(): Promise<KernelAutotune> {
  if (!backend || backend.isDestroyed) {
    const t0 = performance.now();
    backend = await GpuBackend.create({ autotune: true });
    autotune = { choice: backend.matmulChoice(), report: backend.autotuneReport, createMs: performance.now() - t0 };
    await loadTfjsWebGpu();
  }
  return autotune!;
}

/** Measures one size: ours for every form, then TF.js for every form. */
export async function benchKernelSize(size: MatmulSize, o: KernelBenchOptions): Promise<KernelBenchRow[]> {
  await kernelsSetup();
  const be = backend!;
  const forms = BENCH_FORMS;
  const ours = await benchMatmul(be, [size], { forms, warmup: o.warmup, repeats: o.repeats, batch: o.batch });
  const peer = await benchTfjsMatmul([size], { forms, warmup: o.warmup, repeats: o.repeats, batch: o.batch });
  const probes = new Map<MatmulForm, { ours: number; tfjs: number; programs: string[] }>();
  for (const form of forms) probes.set(form, await probe(be, size, form));
  return compareRows(ours, peer).map((c) => {
    const pr = probes.get(c.form)!;
    if (!c.peer || c.ratio === undefined) throw new Error(`kernels: no TF.js figure for ${c.form} ${c.M}x${c.N}x${c.K}`);
    return {
      form: c.form,
      op: OP[c.form],
      M: c.M,
      N: c.N,
      K: c.K,
      variant: c.ours.variant,
      oursGflops: c.ours.gflops,
      oursMs: c.ours.medianMs,
      tfjsGflops: c.peer.gflops,
      tfjsMs: c.peer.medianMs,
      ratio: c.ratio,
      batch: c.ours.batch,
      repeats: c.ours.repeats,
      ours: c.ours,
      tfjs: c.peer,
      oursDispatches: pr.ours,
      tfjsDispatches: pr.tfjs,
      tfjsPrograms: pr.programs,
    };
  });
}

/** One reduction row (reduce-bench.ts) on the suite's backend. */
export async function benchKernelReduce(c: readonly [ReduceOp, number, number], o: ReduceBenchOptions): Promise<ReduceBenchRow> {
  await kernelsSetup();
  return benchReduce(backend!, c, o);
}

interface TfBackendLike {
  runWebGPUProgram?: (program: { shaderKey?: string }, ...rest: unknown[]) => unknown;
}

/** Runs one matmul on each side and counts its dispatches (and names TF.js's programs). */
async function probe(be: GpuBackend, [M, N, K]: MatmulSize, form: MatmulForm): Promise<{ ours: number; tfjs: number; programs: string[] }> {
  installGpuCounters();
  const tf = await loadTfjsWebGpu();
  const { a: as, b: bs } = operandShapes(form, M, N, K);
  const o = { transA: form[0] === 'T', transB: form[1] === 'T' };
  const a = be.tensor(randomOperand(M * K, 1), as);
  const b = be.tensor(randomOperand(K * N, 2), bs);
  await be.sync();
  let c0 = gpuCounts();
  const c = be.matmul(a, b, o);
  await be.sync();
  const ours = diffCounts(c0, gpuCounts()).dispatches;
  be.dispose(a);
  be.dispose(b);
  be.dispose(c);
  const ta = tf.tensor2d(randomOperand(M * K, 1), as);
  const tb = tf.tensor2d(randomOperand(K * N, 2), bs);
  await Promise.all([ta.data(), tb.data()]);
  const backend = tf.backend() as unknown as TfBackendLike;
  const programs: string[] = [];
  const orig = backend.runWebGPUProgram;
  const own = Object.prototype.hasOwnProperty.call(backend, 'runWebGPUProgram');
  if (orig) {
    backend.runWebGPUProgram = function (this: unknown, program: { shaderKey?: string }, ...rest: unknown[]) {
      programs.push((program.shaderKey ?? '?').split('_')[0]);
      return orig.call(this, program, ...rest);
    };
  }
  let tfjs: number;
  try {
    c0 = gpuCounts();
    const tc = tf.matMul(ta, tb, o.transA, o.transB);
    await tc.data();
    tfjs = diffCounts(c0, gpuCounts()).dispatches;
    tc.dispose();
  } finally {
    if (orig && own) backend.runWebGPUProgram = orig;
    else delete backend.runWebGPUProgram;
  }
  ta.dispose();
  tb.dispose();
  return { ours, tfjs, programs };
}

export function kernelsTeardown(): void {
  backend?.destroy();
  backend = null;
}
