/** A tensor of the float64 CPU reference (cpu-backend.ts): its values in a Float64Array (f32) or an Int32Array (i32). */
import { ConfigError } from '../util/errors.ts';
import type { DType, Tensor } from './backend.ts';
import { checkDType } from './shapes.ts';

export class CpuTensor implements Tensor {
  readonly size: number;
  /** null after freeStorage (Backend.freeStorage), until allocStorage. */
  private store: Float64Array | Int32Array | null;

  constructor(
    readonly shape: readonly number[],
    readonly dtype: DType,
    data: Float64Array | Int32Array,
  ) {
    this.store = data;
    this.size = data.length;
  }

  get data(): Float64Array | Int32Array {
    if (this.store === null) throw new ConfigError('tensor', `[${this.shape.join(', ')}] ${this.dtype}`, 'had its storage freed (freeStorage) and was used before allocStorage gave it back (a missed gather?)');
    return this.store;
  }

  /** @internal CpuBackend's freeStorage / allocStorage. */
  setStore(data: Float64Array | Int32Array | null): void {
    this.store = data;
  }

  get hasStorage(): boolean {
    return this.store !== null;
  }
}

export function floats(t: Tensor): Float64Array {
  if (!(t instanceof CpuTensor)) throw new ConfigError('tensor', t, 'must come from the CPU backend');
  if (!(t.data instanceof Float64Array)) throw new ConfigError('tensor.dtype', t.dtype, 'must be f32 (float64 on the CPU reference)');
  return t.data;
}

export function ints(t: Tensor): Int32Array {
  if (!(t instanceof CpuTensor)) throw new ConfigError('tensor', t, 'must come from the CPU backend');
  checkDType('indices', t, 'i32');
  return t.data as Int32Array;
}

