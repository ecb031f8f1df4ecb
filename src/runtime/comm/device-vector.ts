/**
 * A stage's tensors laid end to end as one host vector, the unit every ring
 * collective moves (ring-allreduce.ts): read off the device, and written back
 * piece by piece.
 */
import type { Backend, Tensor } from '../../nn/backend.ts';
import type { Vector } from './ring-allreduce.ts';

/** The stage's gradients (or weights) laid end to end as one vector, read off the device. */
export async function readVector(be: Backend, tensors: readonly Tensor[]): Promise<Vector> {
  const parts = await Promise.all(tensors.map((t) => be.read(t)));
  const total = parts.reduce((s, p) => s + p.length, 0);
  const out = parts.some((p) => p instanceof Float64Array) ? new Float64Array(total) : new Float32Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Writes the vector back onto the device, piece by piece into `tensors` (the same order and sizes as readVector). */
export function writeVector(be: Backend, tensors: readonly Tensor[], x: Vector): void {
  let at = 0;
  for (const dst of tensors) {
    const t = be.memory.scope('staging', () => be.tensor(x.subarray(at, at + dst.size), dst.shape));
    be.copyInto(dst, t);
    be.dispose(t);
    at += dst.size;
  }
}
