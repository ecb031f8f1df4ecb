/**
 * A Linear in PyTorch's layout, as the GPT's layers hold it (so exported
 * weights load into PyTorch unchanged): W [out, in], y = x·Wᵀ (+ b).
 * dx = dy·W; dW += dyᵀ·x; db += Σ_rows dy.
 */
import type { Backend, Tensor } from '../backend.ts';
import { createParam, type InitSpec, type Param } from '../param.ts';

export interface TorchLinear {
  readonly W: Param;
  readonly b: Param | null;
}

export function createTorchLinear(be: Backend, name: string, inCols: number, outCols: number, init: InitSpec, seed: number, bias = true): TorchLinear {
  return {
    W: createParam(be, `${name}.weight`, [outCols, inCols], init, seed, true),
    b: bias ? createParam(be, `${name}.bias`, [outCols], { kind: 'const', value: 0 }, seed, false) : null,
  };
}

export function torchLinearParams(l: TorchLinear): Param[] {
  return l.b ? [l.W, l.b] : [l.W];
}

export function torchLinearForward(be: Backend, l: TorchLinear, x: Tensor): Tensor {
  const z = be.matmul(x, l.W.value, { transB: true });
  if (!l.b) return z;
  const y = be.biasAdd(z, l.b.value);
  be.dispose(z);
  return y;
}

export function torchLinearBackwardInput(be: Backend, l: TorchLinear, dy: Tensor): Tensor {
  return be.matmul(dy, l.W.value);
}

export function torchLinearBackwardWeight(be: Backend, l: TorchLinear, x: Tensor, dy: Tensor): void {
  be.matmulAcc(l.W.grad, dy, x, { transA: true });
  if (l.b) be.colSumAcc(l.b.grad, dy);
}

/** LayerNorm parameters in PyTorch's names: `${name}.weight` (1) and `${name}.bias` (0). */
export interface TorchLayerNorm {
  readonly weight: Param;
  readonly bias: Param;
}

export const GPT_LN_EPS = 1e-5;

export function createTorchLayerNorm(be: Backend, name: string, dim: number, seed: number): TorchLayerNorm {
  return {
    weight: createParam(be, `${name}.weight`, [dim], { kind: 'const', value: 1 }, seed, false),
    bias: createParam(be, `${name}.bias`, [dim], { kind: 'const', value: 0 }, seed, false),
  };
}
