/**
 * The causal self-attention ops and the residual add of the WebGPU backend
 * (kernels in shaders/attention.wgsl, layouts in src/nn/attention-shapes.ts).
 * GpuBackend's methods of the same names call these with its OpHost; checked
 * against the float64 reference in attention-ops.test.ts.
 */
import attentionSrc from '../../shaders/attention.wgsl?raw';
import type { Tensor } from '../nn/backend.ts';
import { checkDy, checkScale, probsDims, qkvDims, scoresT } from '../nn/attention-shapes.ts';
import { checkSameShape } from '../nn/shapes.ts';
import type { GpuTensor } from './gpu-tensor.ts';
import type { BindingKind, KernelSpec } from './pipelines.ts';

/** What an op module needs from the backend: input checks, allocation and a kernel launch. */
export interface OpHost {
  f32(field: string, t: Tensor): GpuTensor;
  alloc(shape: readonly number[]): GpuTensor;
  /** Dispatches `spec` over a grid-stride range of n items; bindings[i] goes to binding i. */
  launch(op: string, spec: KernelSpec, params: Uint8Array, bindings: readonly (GpuTensor | null)[], n: number): void;
}

const U: BindingKind = 'uniform';
const R: BindingKind = 'read';
const W: BindingKind = 'rw';
const k = (entry: string, bindings: (BindingKind | null)[]): KernelSpec => ({ file: 'attention', source: attentionSrc, entry, bindings });

export const ATTENTION_KERNELS = {
  pairDots: k('causal_pair_dots', [U, R, R, null, null, W]),
  softmax: k('causal_softmax', [U, R, null, null, null, W]),
  softmaxBwd: k('causal_softmax_bwd', [U, R, R, null, null, W]),
  values: k('attn_values', [U, R, R, null, null, W]),
  dqkv: k('attn_dqkv', [U, R, R, R, R, W]),
  add: k('residual_add', [U, R, R, null, null, W]),
} as const;

/** The uniform block of attention.wgsl: n, T, H, D, scale, and causal_pair_dots' a_cols, a_off, b_off. */
function params(n: number, T: number, H: number, D: number, scale: number, pair: [number, number, number] = [0, 0, 0]): Uint8Array {
  const u = new Uint32Array(8);
  u[0] = n;
  u[1] = T;
  u[2] = H;
  u[3] = D;
  new Float32Array(u.buffer)[4] = scale;
  u.set(pair, 5);
  return new Uint8Array(u.buffer);
}

export function attentionScores(g: OpHost, qkv: Tensor, heads: number, T: number, scale: number): GpuTensor {
  const dims = qkvDims('attentionScores', qkv, heads, T);
  checkScale('attentionScores', scale);
  const Q = g.f32('attentionScores qkv', qkv);
  const out = g.alloc([dims.B * dims.H * T, T]);
  const C = dims.C;
  g.launch('attentionScores', ATTENTION_KERNELS.pairDots, params(out.size, T, dims.H, dims.D, scale, [3 * C, 0, C]), [null, Q, Q, null, null, out], out.size);
  return out;
}

export function causalSoftmax(g: OpHost, scores: Tensor): GpuTensor {
  const T = scoresT('causalSoftmax', scores);
  const S = g.f32('causalSoftmax scores', scores);
  const out = g.alloc(S.shape);
  const rows = S.shape[0];
  g.launch('causalSoftmax', ATTENTION_KERNELS.softmax, params(rows, T, 1, 1, 1), [null, S, null, null, null, out], rows);
  return out;
}

export function causalSoftmaxBackward(g: OpHost, probs: Tensor, dProbs: Tensor): GpuTensor {
  const T = scoresT('causalSoftmaxBackward', probs);
  checkSameShape('causalSoftmaxBackward dProbs', dProbs, probs, 'probs');
  const P = g.f32('causalSoftmaxBackward probs', probs);
  const DP = g.f32('causalSoftmaxBackward dProbs', dProbs);
  const out = g.alloc(P.shape);
  const rows = P.shape[0];
  g.launch('causalSoftmaxBackward', ATTENTION_KERNELS.softmaxBwd, params(rows, T, 1, 1, 1), [null, P, DP, null, null, out], rows);
  return out;
}

export function attentionValues(g: OpHost, probs: Tensor, qkv: Tensor, heads: number): GpuTensor {
  const dims = probsDims('attentionValues', probs, qkv, heads);
  const P = g.f32('attentionValues probs', probs);
  const Q = g.f32('attentionValues qkv', qkv);
  const out = g.alloc([dims.B * dims.T, dims.C]);
  g.launch('attentionValues', ATTENTION_KERNELS.values, params(out.size, dims.T, dims.H, dims.D, 1), [null, P, Q, null, null, out], out.size);
  return out;
}

export function attentionProbsGrad(g: OpHost, qkv: Tensor, dy: Tensor, heads: number, T: number): GpuTensor {
  const dims = qkvDims('attentionProbsGrad', qkv, heads, T);
  checkDy('attentionProbsGrad', dy, dims);
  const Q = g.f32('attentionProbsGrad qkv', qkv);
  const DY = g.f32('attentionProbsGrad dy', dy);
  const out = g.alloc([dims.B * dims.H * T, T]);
  const C = dims.C;
  g.launch('attentionProbsGrad', ATTENTION_KERNELS.pairDots, params(out.size, T, dims.H, dims.D, 1, [C, 0, 2 * C]), [null, DY, Q, null, null, out], out.size);
  return out;
}

export function attentionQkvGrad(g: OpHost, qkv: Tensor, probs: Tensor, dScores: Tensor, dy: Tensor, heads: number, scale: number): GpuTensor {
  const dims = probsDims('attentionQkvGrad', probs, qkv, heads);
  checkSameShape('attentionQkvGrad dScores', dScores, probs, 'probs');
  checkDy('attentionQkvGrad', dy, dims);
  checkScale('attentionQkvGrad', scale);
  const Q = g.f32('attentionQkvGrad qkv', qkv);
  const P = g.f32('attentionQkvGrad probs', probs);
  const DS = g.f32('attentionQkvGrad dScores', dScores);
  const DY = g.f32('attentionQkvGrad dy', dy);
  const out = g.alloc([dims.B * dims.T, 3 * dims.C]);
  g.launch('attentionQkvGrad', ATTENTION_KERNELS.dqkv, params(out.size, dims.T, dims.H, dims.D, scale), [null, Q, P, DS, DY, out], out.size);
  return out;
}

export function residualAdd(g: OpHost, a: Tensor, b: Tensor): GpuTensor {
  checkSameShape('add b', b, a, 'a');
  const A = g.f32('add a', a);
  const B = g.f32('add b', b);
  const out = g.alloc(A.shape);
  g.launch('add', ATTENTION_KERNELS.add, params(out.size, 1, 1, 1, 1), [null, A, B, null, null, out], out.size);
  return out;
}
