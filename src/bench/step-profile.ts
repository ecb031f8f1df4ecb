/**
 * Where one training step's GPU time goes, per op, on each side:
 *
 * - ours: every Backend op the step calls on a GpuBackend is wrapped in a
 *   timestamp span (GpuBackend.beginTiming), so each op is timed on the GPU
 *   alone. The wrapping makes every op its own submit, so the profiled step is
 *   slower than a plain one: read the shares, not the total.
 * - TF.js: tf.profile, whose per-kernel times come from the WebGPU backend's
 *   own timestamp queries.
 *
 * Bench code only: the backend is wrapped from outside, src/gpu is unchanged.
 */
import type { GpuBackend } from '../gpu/gpu-backend.ts';
import type { MatmulOptions } from '../nn/backend.ts';
import type { Tf } from './tfjs-models.ts';

export interface OpTime {
  op: string;
  calls: number;
  ms: number;
}

export interface StepProfile {
  /** Sum of the ops' GPU times. */
  gpuMs: number;
  /** Wall time of the profiled step (inflated by the profiling). */
  wallMs: number;
  /** Heaviest first. */
  ops: OpTime[];
  source: string;
}

const OPS = [
  'tensor', 'zeros', 'clone', 'fill', 'copyInto', 'matmul', 'matmulAcc', 'biasAdd', 'colSumAcc', 'activation', 'activationBackward',
  'layerNorm', 'layerNormBackwardInput', 'layerNormBackwardWeightAcc', 'embedding', 'embeddingBackwardAcc', 'softmaxCrossEntropy',
  'axpy', 'scale', 'sgdStep', 'adamwStep',
] as const;

function sorted(m: Map<string, OpTime>): OpTime[] {
  return [...m.values()].sort((a, b) => b.ms - a.ms);
}

/** Runs `step` once with every op of `be` timed on the GPU. */
export async function profileOurStep(be: GpuBackend, step: () => Promise<void>): Promise<StepProfile> {
  const times = new Map<string, OpTime>();
  const pending: Promise<void>[] = [];
  const target = be as unknown as Record<string, (...a: unknown[]) => unknown>;
  let depth = 0;
  for (const name of OPS) {
    const orig = target[name];
    if (typeof orig !== 'function') continue;
    target[name] = (...args: unknown[]) => {
      if (depth > 0) return orig.apply(be, args);
      let key: string = name;
      if (name === 'matmul' || name === 'matmulAcc') {
        const o = (args[name === 'matmul' ? 2 : 3] ?? {}) as MatmulOptions;
        key = `${name} ${o.transA ? 'T' : 'N'}${o.transB ? 'T' : 'N'}`;
      }
      depth++;
      const span = be.beginTiming();
      try {
        return orig.apply(be, args);
      } finally {
        depth--;
        pending.push(
          span.end().then((r) => {
            const t = times.get(key) ?? { op: key, calls: 0, ms: 0 };
            t.calls++;
            t.ms += r.ms;
            times.set(key, t);
          }),
        );
      }
    };
  }
  const t0 = performance.now();
  try {
    await step();
    await Promise.all(pending);
  } finally {
    for (const name of OPS) delete target[name];
  }
  const wallMs = performance.now() - t0;
  const ops = sorted(times);
  return { gpuMs: ops.reduce((a, o) => a + o.ms, 0), wallMs, ops, source: be.hasTimestamps ? 'timestamp-query per op' : 'wall time per op' };
}

/** Runs `step` once under tf.profile. */
export async function profileTfjsStep(tf: Tf, step: () => Promise<void>): Promise<StepProfile> {
  const t0 = performance.now();
  const info = await tf.profile(async () => {
    await step();
    return [];
  });
  const wallMs = performance.now() - t0;
  const times = new Map<string, OpTime>();
  for (const k of info.kernels) {
    const ms = Number(await k.kernelTimeMs) || 0;
    const t = times.get(k.name) ?? { op: k.name, calls: 0, ms: 0 };
    t.calls++;
    t.ms += ms;
    times.set(k.name, t);
  }
  const ops = sorted(times);
  return { gpuMs: ops.reduce((a, o) => a + o.ms, 0), wallMs, ops, source: 'tf.profile (timestamp-query per kernel)' };
}
