/**
 * The peer of matmul-bench.ts: TensorFlow.js's WebGPU backend doing the same
 * matmuls, timed by the same loop (benchSide), so a page can print both and
 * the ratio (formatBench / compareRows in matmul-bench.ts).
 *
 * TensorFlow.js is loaded on demand (dynamic import): pages that never run
 * the benchmark do not carry it.
 */
import { BENCH_SIZES, benchSide, operandShapes, randomOperand, type MatmulBenchOptions, type MatmulBenchRow, type MatmulSide, type MatmulSize } from './matmul-bench.ts';

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
export async function settle(tf: Tf, last: { data(): Promise<unknown> } | null): Promise<void> {
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

/** TF.js's side: tf.matMul(a, b, transposeA, transposeB) on its WebGPU backend. */
export function tfjsSide(tf: Tf): MatmulSide {
  return {
    impl: 'tfjs-webgpu',
    async prepare(form, [M, N, K]) {
      const { a: as, b: bs } = operandShapes(form, M, N, K);
      const a = tf.tensor2d(randomOperand(M * K, 1), as);
      const b = tf.tensor2d(randomOperand(K * N, 2), bs);
      const ta = form[0] === 'T';
      const tb = form[1] === 'T';
      let last: ReturnType<Tf['matMul']> | null = null;
      return {
        variant: 'tf.matMul',
        async warm() {
          const c = tf.matMul(a, b, ta, tb);
          await c.data(); // compiles and really runs
          c.dispose();
        },
        issue() {
          last?.dispose();
          last = tf.matMul(a, b, ta, tb);
        },
        async settle() {
          await settle(tf, last);
          last?.dispose();
          last = null;
        },
        release() {
          last?.dispose();
          a.dispose();
          b.dispose();
        },
      };
    },
  };
}

/** Measures tf.matMul (WebGPU backend) per form and size; options as benchMatmul (variant is ignored). */
export async function benchTfjsMatmul(sizes: readonly MatmulSize[] = BENCH_SIZES, opts: MatmulBenchOptions = {}): Promise<MatmulBenchRow[]> {
  return benchSide(tfjsSide(await loadTfjsWebGpu()), sizes, opts);
}
