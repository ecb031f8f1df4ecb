/**
 * The peer of matmul-bench.ts: TensorFlow.js's WebGPU backend doing the same
 * matmuls, timed the same way (warm-up, then the median of timed repeats from
 * a settled queue to queue completion), so a page can print both and the
 * ratio (formatBench / compareRows in matmul-bench.ts).
 *
 * TensorFlow.js is loaded on demand (dynamic import): pages that never run
 * the benchmark do not carry it.
 */
import { BENCH_FORMS, BENCH_SIZES, benchRow, defaultBatch, operandShapes, randomOperand, type MatmulBenchOptions, type MatmulBenchRow, type MatmulSize } from './matmul-bench.ts';

type Tf = typeof import('@tensorflow/tfjs');

interface TfWebGpuBackendLike {
  device?: GPUDevice;
  commandEncoder?: GPUCommandEncoder | null;
  endComputePassEncoder?: () => void;
  submitQueue?: () => void;
}

let tfPromise: Promise<Tf> | null = null;

/** Loads TensorFlow.js with its WebGPU backend selected (once). Throws if WebGPU cannot be used. */
export function loadTfjsWebGpu(): Promise<Tf> {
  if (!tfPromise) {
    tfPromise = (async () => {
      const tf = await import('@tensorflow/tfjs');
      // Registers the 'webgpu' backend (only where navigator.gpu exists at import time).
      await import('@tensorflow/tfjs-backend-webgpu');
      let ok = false;
      try {
        ok = await tf.setBackend('webgpu');
      } catch (e) {
        throw new Error(`TensorFlow.js could not start its WebGPU backend: ${(e as Error).message ?? e}`);
      }
      if (!ok || tf.getBackend() !== 'webgpu') throw new Error('TensorFlow.js could not start its WebGPU backend (navigator.gpu missing or no adapter)');
      await tf.ready();
      return tf;
    })();
    tfPromise.catch(() => {
      tfPromise = null;
    });
  }
  return tfPromise;
}

/** Waits until TF.js's WebGPU queue is idle (its own batching flushed first). */
async function settle(tf: Tf, last: { data(): Promise<unknown> } | null): Promise<void> {
  const be = tf.backend() as unknown as TfWebGpuBackendLike;
  if (be.device && typeof be.submitQueue === 'function') {
    // What TF.js itself does when its batch is full: end the pass, submit the encoder.
    be.endComputePassEncoder?.();
    if (be.commandEncoder) be.submitQueue();
    await be.device.queue.onSubmittedWorkDone();
  } else if (last) {
    await last.data();
  }
}

const now = (): number => (typeof performance !== 'undefined' ? performance.now() : Date.now());

/** Measures tf.matMul (WebGPU backend) per form and size; options as benchMatmul (variant is ignored). */
export async function benchTfjsMatmul(sizes: readonly MatmulSize[] = BENCH_SIZES, opts: MatmulBenchOptions = {}): Promise<MatmulBenchRow[]> {
  const tf = await loadTfjsWebGpu();
  const forms = opts.forms ?? BENCH_FORMS;
  const warmup = opts.warmup ?? 2;
  const repeats = opts.repeats ?? 5;
  const rows: MatmulBenchRow[] = [];
  for (const [M, N, K] of sizes) {
    for (const form of forms) {
      const { a: as, b: bs } = operandShapes(form, M, N, K);
      const a = tf.tensor2d(randomOperand(M * K, 1), as);
      const b = tf.tensor2d(randomOperand(K * N, 2), bs);
      const ta = form[0] === 'T';
      const tb = form[1] === 'T';
      const batch = opts.batch ?? defaultBatch(M, N, K);
      for (let i = 0; i < warmup; i++) {
        const c = tf.matMul(a, b, ta, tb);
        await c.data(); // compiles and really runs
        c.dispose();
      }
      await settle(tf, null);
      const times: number[] = [];
      const cpu: number[] = [];
      for (let r = 0; r < repeats; r++) {
        const c0 = opts.cpuClockMs?.() ?? 0;
        const t0 = now();
        let last: ReturnType<Tf['matMul']> | null = null;
        for (let i = 0; i < batch; i++) {
          if (last) last.dispose();
          last = tf.matMul(a, b, ta, tb);
        }
        await settle(tf, last);
        times.push((now() - t0) / batch);
        if (opts.cpuClockMs) cpu.push((opts.cpuClockMs() - c0) / batch);
        last?.dispose();
      }
      a.dispose();
      b.dispose();
      const row = benchRow('tfjs-webgpu', 'tf.matMul', form, [M, N, K], times, cpu, repeats, batch);
      rows.push(row);
      opts.onRow?.(row);
    }
  }
  return rows;
}
