/**
 * A stage's tensors laid end to end as one host vector, the unit every ring
 * collective moves (ring-allreduce.ts): read off the device, and written back
 * piece by piece.
 */
import type { Backend, Tensor } from '../../nn/backend.ts';
import type { Vector } from './ring-allreduce.ts';

/** Tensors read off the device together: one wait where the backend reads several at once (Backend.readMany). */
export function readAll(be: Pick<Backend, 'read' | 'readMany'>, tensors: readonly Tensor[]): Promise<(Float32Array | Float64Array | Int32Array)[]> {
  return be.readMany ? be.readMany(tensors) : Promise.all(tensors.map((t) => be.read(t)));
}

/** The stage's gradients (or weights) laid end to end as one vector, read off the device (one wait). */
export async function readVector(be: Backend, tensors: readonly Tensor[]): Promise<Vector> {
  const parts = await readAll(be, tensors);
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
