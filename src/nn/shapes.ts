/**
 * Shape rules shared by every backend, so a mismatch gets the same message on
 * the CPU and on the GPU: the field, the value and the rule.
 */
import { ConfigError } from '../util/errors.ts';
import type { DType, MatmulOptions, Tensor } from './backend.ts';

export function checkShape(field: string, shape: readonly number[]): number {
  if (!Array.isArray(shape) || shape.length === 0) {
    throw new ConfigError(field, shape, 'must be a non-empty list of dimensions');
  }
  let n = 1;
  for (const d of shape) {
    if (!Number.isInteger(d) || d <= 0) {
      throw new ConfigError(field, shape, 'every dimension must be a positive integer');
    }
    n *= d;
  }
  return n;
}

export function checkDType(field: string, t: Tensor, dtype: DType): void {
  if (t.dtype !== dtype) throw new ConfigError(`${field}.dtype`, t.dtype, `must be ${dtype}`);
}

export function check2d(field: string, t: Tensor): [number, number] {
  if (t.shape.length !== 2) throw new ConfigError(`${field}.shape`, t.shape, 'must have 2 dimensions [rows, cols]');
  return [t.shape[0], t.shape[1]];
}

export function check1d(field: string, t: Tensor, len: number, rule: string): void {
  if (t.shape.length !== 1 || t.shape[0] !== len) throw new ConfigError(`${field}.shape`, t.shape, rule);
}

/** Returns [M, N, K] for C[M,N] = op(A)[M,K] · op(B)[K,N]. */
export function matmulDims(a: Tensor, b: Tensor, opts: MatmulOptions = {}): [number, number, number] {
  const [ar, ac] = check2d('matmul a', a);
  const [br, bc] = check2d('matmul b', b);
  const M = opts.transA ? ac : ar;
  const Ka = opts.transA ? ar : ac;
  const Kb = opts.transB ? bc : br;
  const N = opts.transB ? br : bc;
  if (Ka !== Kb) {
    const fa = opts.transA ? 'a.shape[0] (A is transposed)' : 'a.shape[1]';
    const fb = opts.transB ? 'b.shape[1] (B is transposed)' : 'b.shape[0]';
    throw new ConfigError(`matmul ${fb}`, Kb, `must equal ${fa} = ${Ka} (the shared dimension K)`);
  }
  return [M, N, Ka];
}

export function checkSameShape(field: string, a: Tensor, ref: Tensor, refName: string): void {
  if (a.shape.length !== ref.shape.length || a.shape.some((d, i) => d !== ref.shape[i])) {
    throw new ConfigError(`${field}.shape`, a.shape, `must equal ${refName}.shape = [${ref.shape.join(', ')}]`);
  }
}

/** copyInto's range: the same size without an offset; else src fits in dst from element `dstOffset`. */
export function checkCopyRange(dst: Tensor, src: Tensor, dstOffset?: number): void {
  if (dstOffset === undefined) {
    if (dst.size !== src.size) throw new ConfigError('copyInto dst.size', dst.size, `must equal src.size = ${src.size}`);
    return;
  }
  if (!Number.isInteger(dstOffset) || dstOffset < 0 || dstOffset + src.size > dst.size) {
    throw new ConfigError('copyInto dstOffset', dstOffset, `must be an integer from 0 to ${dst.size - src.size} (dst.size − src.size = ${dst.size} − ${src.size})`);
  }
}

export function checkFiniteNumber(field: string, v: number): void {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new ConfigError(field, v, 'must be a finite number');
}
