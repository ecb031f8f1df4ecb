/**
 * Matmul throughput per form and size, of the GPU backend and of a peer
 * (tfjs-matmul-bench.ts: TensorFlow.js's WebGPU backend), with one timing
 * loop for both (benchSide): warm-up, then the median of several timed
 * repeats, each from a settled queue to queue completion (so the numbers
 * include submit and completion, as a training step sees them).
 * `compareRows` puts the two side by side.
 */
import type { GpuBackend, MatmulForm } from '../gpu/gpu-backend.ts';

export type MatmulSize = readonly [M: number, N: number, K: number];

/** The sizes of the benchmark issue: two training-like shapes, a square one, and a ragged one. */
export const BENCH_SIZES: readonly MatmulSize[] = [
  [64, 256, 256],
  [256, 256, 256],
  [512, 512, 512],
  [129, 257, 191],
];

/** What `--big` adds on a real GPU (where the chip's fp32 peak is measured against, at 2048³ and 4096³). */
export const BIG_BENCH_SIZES: readonly MatmulSize[] = [
  [1024, 1024, 1024],
  [2048, 2048, 2048],
  [4096, 4096, 4096],
];

export const BENCH_FORMS: readonly MatmulForm[] = ['NN', 'NT', 'TN'];

export interface MatmulBenchOptions {
  /** Forms to measure. Default NN, NT, TN (A·B, A·Bᵀ, Aᵀ·B). */
  forms?: readonly MatmulForm[];
  /** Untimed runs before timing (pipeline compile, caches). Default 2. */
  warmup?: number;
  /** Timed repeats; the median is reported. Default 5. */
  repeats?: number;
  /** Matmuls per timed repeat (amortises submit/sync latency for small sizes). Default: enough for ~20 MFLOP, at most 16. */
  batch?: number;
  /** A matmul variant name to measure instead of the backend's current choice per form. */
  variant?: string;
  /**
   * A process CPU clock in ms (Node: process.cpuUsage). When given, rows also
   * carry CPU time per matmul: on a software adapter that is the work done,
   * whatever else the machine is running.
   */
  cpuClockMs?: () => number;
  /** Called after each row (progress on a page). */
  onRow?: (row: MatmulBenchRow) => void;
}

export interface MatmulBenchRow {
  impl: string;
  /** The variant that ran (for PipeLab) or the peer's name. */
  variant: string;
  form: MatmulForm;
  M: number;
  N: number;
  K: number;
  /** Median and best milliseconds per matmul. */
  medianMs: number;
  minMs: number;
  /** 2·M·N·K / median time. */
  gflops: number;
  repeats: number;
  batch: number;
  /** Median CPU milliseconds per matmul (with opts.cpuClockMs) and 2·M·N·K per CPU second. */
  cpuMs?: number;
  gflopsPerCpuS?: number;
}

const now = (): number => (typeof performance !== 'undefined' ? performance.now() : Date.now());

export function defaultBatch(M: number, N: number, K: number): number {
  return Math.max(1, Math.min(16, Math.round(20e6 / (2 * M * N * K))));
}

/**
 * Matmuls per timed repeat on a real GPU (`npm run bench -- --big`): enough
 * for ~100 GFLOP, at most 64. Waiting for the queue cost ~2.5 ms a repeat in
 * Chromium on an H200 (bench/GPU.md), which defaultBatch's ~20 MFLOP left in
 * every figure below 4096³ (1024³ read 2.8 ms a matmul where batches gave 0.5).
 */
export function gpuBatch(M: number, N: number, K: number): number {
  return Math.max(1, Math.min(64, Math.round(100e9 / (2 * M * N * K))));
}

/** Shapes of A and B for a form: A is [M, K] or (transposed) [K, M]; B is [K, N] or [N, K]. */
export function operandShapes(form: MatmulForm, M: number, N: number, K: number): { a: [number, number]; b: [number, number] } {
  return { a: form[0] === 'T' ? [K, M] : [M, K], b: form[1] === 'T' ? [N, K] : [K, N] };
}

export function randomOperand(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 4294967296 - 0.5;
  }
  return out;
}

/** cpuMs and gflopsPerCpuS from per-matmul CPU times (none when not measured). */
export function cpuFields(cpu: number[], M: number, N: number, K: number): { cpuMs?: number; gflopsPerCpuS?: number } {
  if (!cpu.length) return {};
  const c = median(cpu);
  return { cpuMs: c, gflopsPerCpuS: (2 * M * N * K) / (c * 1e6) };
}

/** One result row from the timed repeats (ms) of a form at a size: the median, the best, GFLOP/s. */
export function benchRow(
  impl: MatmulBenchRow['impl'],
  variant: string,
  form: MatmulBenchRow['form'],
  [M, N, K]: MatmulSize,
  times: number[],
  cpu: number[],
  repeats: number,
  batch: number,
): MatmulBenchRow {
  const med = median(times);
  return { impl, variant, form, M, N, K, medianMs: med, minMs: Math.min(...times), gflops: (2 * M * N * K) / (med * 1e6), repeats, batch, ...cpuFields(cpu, M, N, K) };
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** One side of the comparison (ours, TF.js, ...) at one form and size: how to run a matmul and wait for it. */
export interface MatmulRun {
  /** What runs (our variant, or the peer's op). */
  readonly variant: string;
  /** Runs one matmul to completion, untimed (compiles pipelines, fills caches). */
  warm(): Promise<void>;
  /** Issues one matmul; the side frees results it no longer needs. */
  issue(): void;
  /** Waits until every issued matmul has completed. */
  settle(): Promise<void>;
  /** Frees the operands and any result still held. */
  release(): void;
}

export interface MatmulSide {
  readonly impl: string;
  /** Operands of `form` at `size` on this side; `variant` picks ours (ignored by peers). */
  prepare(form: MatmulForm, size: MatmulSize, variant: string | undefined): Promise<MatmulRun>;
}

/**
 * The one timing loop of the matmul benchmark, for every side: warm-up runs,
 * then `repeats` timed batches, each from a settled queue to queue completion,
 * so both sides pay submit and completion as a training step does.
 */
export async function benchSide(side: MatmulSide, sizes: readonly MatmulSize[] = BENCH_SIZES, opts: MatmulBenchOptions = {}): Promise<MatmulBenchRow[]> {
  const forms = opts.forms ?? BENCH_FORMS;
  const warmup = opts.warmup ?? 2;
  const repeats = opts.repeats ?? 5;
  const rows: MatmulBenchRow[] = [];
  for (const size of sizes) {
    const [M, N, K] = size;
    for (const form of forms) {
      const run = await side.prepare(form, size, opts.variant);
      const batch = opts.batch ?? defaultBatch(M, N, K);
      try {
        const { times, cpu } = await timeRuns(run, warmup, repeats, batch, opts.cpuClockMs);
        const row = benchRow(side.impl, run.variant, form, size, times, cpu, repeats, batch);
        rows.push(row);
        opts.onRow?.(row);
      } finally {
        run.release();
      }
    }
  }
  return rows;
}

/**
 * The timing itself: `warmup` untimed runs, then `repeats` batches of `batch`
 * issues, each timed from a settled queue to queue completion; milliseconds
 * (and CPU milliseconds, with `cpuClockMs`) per issue. Shared by every bench
 * that times GPU ops this way (matmuls here, reductions in reduce-bench.ts).
 */
export async function timeRuns(
  run: Pick<MatmulRun, 'warm' | 'issue' | 'settle'>,
  warmup: number,
  repeats: number,
  batch: number,
  cpuClockMs?: () => number,
): Promise<{ times: number[]; cpu: number[] }> {
  for (let i = 0; i < warmup; i++) await run.warm();
  await run.settle();
  const times: number[] = [];
  const cpu: number[] = [];
  for (let r = 0; r < repeats; r++) {
    const c0 = cpuClockMs?.() ?? 0;
    const t0 = now();
    for (let i = 0; i < batch; i++) run.issue();
    await run.settle();
    times.push((now() - t0) / batch);
    if (cpuClockMs) cpu.push((cpuClockMs() - c0) / batch);
  }
  return { times, cpu };
}

/** Our side: `backend.matmulWith` with the backend's choice for the form (or `variant`). */
export function pipelabSide(backend: GpuBackend): MatmulSide {
  return {
    impl: 'pipelab',
    async prepare(form, [M, N, K], variant) {
      const { a: as, b: bs } = operandShapes(form, M, N, K);
      const a = backend.tensor(randomOperand(M * K, 1), as);
      const b = backend.tensor(randomOperand(K * N, 2), bs);
      const o = { transA: form[0] === 'T', transB: form[1] === 'T' };
      const v = variant ?? backend.matmulChoice()[form];
      const issue = (): void => backend.dispose(backend.matmulWith(v, a, b, o));
      return {
        variant: v,
        async warm() {
          issue();
          await backend.sync();
        },
        issue,
        settle: () => backend.sync(),
        release() {
          backend.dispose(a);
          backend.dispose(b);
        },
      };
    },
  };
}

/** Measures `backend.matmul` per form and size. */
export function benchMatmul(backend: GpuBackend, sizes: readonly MatmulSize[] = BENCH_SIZES, opts: MatmulBenchOptions = {}): Promise<MatmulBenchRow[]> {
  return benchSide(pipelabSide(backend), sizes, opts);
}

export interface ComparedRow {
  form: MatmulForm;
  M: number;
  N: number;
  K: number;
  ours: MatmulBenchRow;
  peer: MatmulBenchRow | undefined;
  /** ours.gflops / peer.gflops */
  ratio: number | undefined;
}

/** Pairs our rows with a peer's rows of the same form and size. */
export function compareRows(ours: readonly MatmulBenchRow[], peer: readonly MatmulBenchRow[]): ComparedRow[] {
  return ours.map((r) => {
    const p = peer.find((x) => x.form === r.form && x.M === r.M && x.N === r.N && x.K === r.K);
    return { form: r.form, M: r.M, N: r.N, K: r.K, ours: r, peer: p, ratio: p ? r.gflops / p.gflops : undefined };
  });
}

/** A plain-text table of the rows (and the peer's, with the ratio, when given). */
export function formatBench(ours: readonly MatmulBenchRow[], peer: readonly MatmulBenchRow[] = []): string {
  const withCpu = ours.some((r) => r.gflopsPerCpuS !== undefined);
  const head = 'size (MxNxK)   form  variant    ms/matmul  GFLOP/s' + (withCpu ? '  GFLOP/cpu-s' : '') + (peer.length ? `  ${peer[0].impl} GFLOP/s  ratio` : '');
  const lines = [head];
  for (const c of compareRows(ours, peer)) {
    const size = `${c.M}x${c.N}x${c.K}`.padEnd(14);
    let line = `${size} ${c.form.padEnd(5)} ${c.ours.variant.padEnd(10)} ${c.ours.medianMs.toFixed(2).padStart(9)}  ${c.ours.gflops.toFixed(2).padStart(7)}`;
    if (withCpu) line += `  ${(c.ours.gflopsPerCpuS ?? NaN).toFixed(2).padStart(11)}`;
    if (peer.length) line += c.peer ? `  ${c.peer.gflops.toFixed(2).padStart(13)}  ${c.ratio!.toFixed(2).padStart(5)}x` : '  (not measured)';
    lines.push(line);
  }
  return lines.join('\n');
}
