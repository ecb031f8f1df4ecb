/**
 * A tensor of the WebGPU backend: a pooled storage buffer, its shape and
 * dtype, and (for i32 tensors) a host copy of the values. Its lifetime is kept
 * by GpuCore (gpu-core.ts): created there, disposed there, counted there.
 */
import type { DType, Tensor } from '../nn/backend.ts';

export class GpuTensor implements Tensor {
  /** @internal */ buf: GPUBuffer | null;
  /** For i32 tensors: a host copy of the values (i32 tensors change only through tensor/zeros/fill/copyInto). */
  /** @internal */ host: Int32Array | null = null;
  /** @internal True while its storage is freed (Backend.freeStorage): buf is null, the tensor still live. */
  storageFreed = false;
  readonly size: number;

  /** @internal */
  constructor(
    readonly shape: readonly number[],
    readonly dtype: DType,
    buf: GPUBuffer,
    /** @internal */ readonly owner: object,
  ) {
    this.buf = buf;
    this.size = shape.reduce((a, b) => a * b, 1);
  }

  get disposed(): boolean {
    return this.buf === null && !this.storageFreed;
  }

  get byteLength(): number {
    return this.size * 4;
  }
}

/** A tensor for an error message: its shape and class. */
export function describeTensor(t: unknown): string {
  if (t && typeof t === 'object' && 'shape' in t) {
    const s = (t as Tensor).shape;
    return `tensor [${Array.isArray(s) ? s.join(', ') : '?'}] of ${(t as { constructor?: { name?: string } }).constructor?.name ?? 'unknown'}`;
  }
  return String(t);
}
