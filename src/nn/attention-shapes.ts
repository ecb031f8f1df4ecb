/**
 * Shape rules of the causal self-attention ops, shared by every backend so a
 * mismatch gets the same message on the CPU and on the GPU.
 *
 * Layouts (row-major, as PyTorch's makemore / nanoGPT lays them out):
 * - qkv [B·T, 3C]: row b·T + t holds q | k | v of token t of sequence b; head h
 *   owns columns h·D .. h·D+D−1 of each part (D = C / heads).
 * - scores, probs and their gradients [B·H·T, T]: row (b·H + h)·T + t, column j
 *   (the key position); j > t is masked (0).
 * - y, dy [B·T, C].
 */
import { ConfigError, requireInt } from '../util/errors.ts';
import type { Tensor } from './backend.ts';
import { check2d, checkFiniteNumber } from './shapes.ts';

export interface AttentionDims {
  /** Sequences. */
  B: number;
  /** Tokens per sequence. */
  T: number;
  H: number;
  /** Head width C / H. */
  D: number;
  C: number;
}

/** Dims from qkv [B·T, 3C], heads and T. */
export function qkvDims(op: string, qkv: Tensor, heads: number, T: number): AttentionDims {
  const [rows, c3] = check2d(`${op} qkv`, qkv);
  requireInt(`${op} heads`, heads, 1);
  requireInt(`${op} T`, T, 1);
  if (c3 % 3 !== 0) throw new ConfigError(`${op} qkv.shape[1]`, c3, 'must be 3·C (q | k | v side by side)');
  const C = c3 / 3;
  if (C % heads !== 0) throw new ConfigError(`${op} heads`, heads, `must divide the width C = ${C}`);
  if (rows % T !== 0) throw new ConfigError(`${op} qkv.shape[0]`, rows, `must be B·T, a multiple of T = ${T}`);
  return { B: rows / T, T, H: heads, D: C / heads, C };
}

/** T from scores/probs [B·H·T, T] (rows a multiple of T). */
export function scoresT(op: string, s: Tensor): number {
  const [rows, T] = check2d(`${op} scores`, s);
  if (rows % T !== 0) throw new ConfigError(`${op} scores.shape[0]`, rows, `must be B·H·T, a multiple of T = ${T} (its columns)`);
  return T;
}

/** Checks probs [B·H·T, T] against qkv; returns the dims. */
export function probsDims(op: string, probs: Tensor, qkv: Tensor, heads: number): AttentionDims {
  const T = scoresT(op, probs);
  const dims = qkvDims(op, qkv, heads, T);
  if (probs.shape[0] !== dims.B * dims.H * T) {
    throw new ConfigError(`${op} probs.shape[0]`, probs.shape[0], `must be B·H·T = ${dims.B * dims.H * T}`);
  }
  return dims;
}

export function checkDy(op: string, dy: Tensor, dims: AttentionDims): void {
  const [r, c] = check2d(`${op} dy`, dy);
  if (r !== dims.B * dims.T || c !== dims.C) throw new ConfigError(`${op} dy.shape`, dy.shape, `must be [B·T, C] = [${dims.B * dims.T}, ${dims.C}]`);
}

export function checkScale(op: string, scale: number): void {
  checkFiniteNumber(`${op} scale`, scale);
}
