/** A tensor of the float64 CPU reference (cpu-backend.ts): its values in a Float64Array (f32) or an Int32Array (i32). */
import { ConfigError } from '../util/errors.ts';
import type { DType, Tensor } from './backend.ts';
import { checkDType } from './shapes.ts';

export class CpuTensor implements Tensor {
  constructor(
    readonly shape: readonly number[],
    readonly dtype: DType,
    readonly data: Float64Array | Int32Array,
  ) {}
  get size(): number {
    return this.data.length;
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

