/**
 * Shape rules of the mixture-of-experts ops, shared by every backend so a mismatch gets the same message on the
 * CPU and on the GPU (field, value, rule).
 *
 * Layouts (row-major), for one group of S token rows routed to E experts, k choices each, `cap` rows per expert:
 * - probs [S, E]: the router's softmax;
 * - sel i32 [S, k]: each token's experts, best first (ties to the lower expert index);
 * - slot i32 [S, k]: the row of the experts' buffer a choice was given (e·cap + position), −1 when over capacity;
 * - rowToken i32 [E·cap]: the inverse: s·k + j for the choice that holds the row, −1 for an empty row;
 * - gates [S, k]; the experts' buffers xe, ye [E·cap, C] (expert e's rows e·cap .. e·cap + cap − 1).
 */
import { ConfigError, requireInt } from '../../util/errors.ts';
import type { MatmulOptions, Tensor } from '../backend.ts';
import { check2d, checkDType, matmulDims } from '../shapes.ts';

/** The largest k a router takes (GShard's top-2). */
export const MAX_TOP_K = 2;

export function routeDims(op: string, probs: Tensor, k: number, capacity: number): { S: number; E: number } {
  const [S, E] = check2d(`${op} probs`, probs);
  requireInt(`${op} k`, k, 1, Math.min(MAX_TOP_K, E));
  requireInt(`${op} capacity`, capacity, 1, S);
  return { S, E };
}

/** S, k from sel or slot i32 [S, k]. */
export function choiceDims(field: string, t: Tensor, S?: number): { S: number; k: number } {
  checkDType(field, t, 'i32');
  const [rows, k] = check2d(field, t);
  if (S !== undefined && rows !== S) throw new ConfigError(`${field}.shape`, t.shape, `must have ${S} rows, one per token`);
  if (k < 1 || k > MAX_TOP_K) throw new ConfigError(`${field}.shape`, t.shape, `must have 1 or ${MAX_TOP_K} columns (top-k)`);
  return { S: rows, k };
}

export function checkRowToken(field: string, t: Tensor): number {
  checkDType(field, t, 'i32');
  if (t.shape.length !== 1) throw new ConfigError(`${field}.shape`, t.shape, 'must have 1 dimension [E·capacity]');
  return t.shape[0];
}

export function checkRows(field: string, t: Tensor, rows: number, cols?: number): number {
  const [r, c] = check2d(field, t);
  if (r !== rows) throw new ConfigError(`${field}.shape`, t.shape, `must have ${rows} rows`);
  if (cols !== undefined && c !== cols) throw new ConfigError(`${field}.shape`, t.shape, `must have ${cols} columns`);
  return c;
}

/**
 * Group g of a grouped matmul: a's rows and b's rows split into `groups` equal parts; part g of the output is
 * matmul(a_g, b_g, opts). Returns [M, N, K] of one group and the rows of a group's a and b.
 */
export function groupedDims(a: Tensor, b: Tensor, groups: number, opts: MatmulOptions = {}): { M: number; N: number; K: number; ar: number; br: number } {
  requireInt('groupedMatmul groups', groups, 1);
  const [arAll, ac] = check2d('groupedMatmul a', a);
  const [brAll, bc] = check2d('groupedMatmul b', b);
  if (arAll % groups !== 0) throw new ConfigError('groupedMatmul a.shape', a.shape, `rows must divide into ${groups} groups`);
  if (brAll % groups !== 0) throw new ConfigError('groupedMatmul b.shape', b.shape, `rows must divide into ${groups} groups`);
  const ar = arAll / groups, br = brAll / groups;
  const [M, N, K] = matmulDims({ shape: [ar, ac], dtype: 'f32', size: ar * ac }, { shape: [br, bc], dtype: 'f32', size: br * bc }, opts);
  return { M, N, K, ar, br };
}

/** Rows of one expert's buffer: capacityFactor·k·S/E rounded up (at least 1, at most S); 0: dropless (S, every token fits). */
export function expertCapacity(capacityFactor: number, k: number, S: number, E: number): number {
  if (!(Number.isFinite(capacityFactor) && capacityFactor >= 0)) throw new ConfigError('capacityFactor', capacityFactor, 'must be a number ≥ 0 (0: dropless)');
  if (capacityFactor === 0) return S;
  return Math.min(S, Math.max(1, Math.ceil((capacityFactor * k * S) / E)));
}
