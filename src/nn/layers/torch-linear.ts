/**
 * A Linear in PyTorch's layout, as the GPT's layers hold it (so exported
 * weights load into PyTorch unchanged): W [out, in], y = x·Wᵀ (+ b).
 * dx = dy·W; dW += dyᵀ·x; db += Σ_rows dy.
 */
import type { Backend, Tensor } from '../backend.ts';
import { createParam, createTpParam, type InitSpec, type Param } from '../param.ts';
import type { TpGroup } from '../tensor-parallel.ts';
import type { TpRule } from '../tp-shard.ts';

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

/**
 * Tensor-parallel worker `tp.index`'s piece of a Linear (tp-shard.ts): 'column' holds its output rows of W
 * ([out/t, in]; with `parts` = 3, the rows of each third — q, k and v by heads) and of b; 'row' holds its
 * input columns of W ([out, in/t]) and the whole b, added once after the all-reduce (rowParallelForward).
 */
export function createTpTorchLinear(
  be: Backend,
  name: string,
  inCols: number,
  outCols: number,
  init: InitSpec,
  seed: number,
  tp: TpGroup,
  split: { kind: 'column'; parts: number } | { kind: 'row' },
): TorchLinear {
  const t = tp.size, j = tp.index;
  const w: TpRule = split.kind === 'column' ? { kind: 'rows', parts: split.parts } : { kind: 'cols' };
  const b: TpRule = split.kind === 'column' ? { kind: 'rows', parts: split.parts } : { kind: 'whole' };
  return {
    W: createTpParam(be, `${name}.weight`, [outCols, inCols], init, seed, true, { rule: w, t, j }),
    b: createTpParam(be, `${name}.bias`, [outCols], { kind: 'const', value: 0 }, seed, false, { rule: b, t, j }),
  };
}

/** A row-parallel Linear's forward: this worker's partial x·Wⱼᵀ, summed over the tp group (Megatron's g), then the bias once. */
export async function rowParallelForward(be: Backend, l: TorchLinear, x: Tensor, tp: TpGroup): Promise<Tensor> {
  const z = await tp.allReduce(be.matmul(x, l.W.value, { transB: true }));
  if (!l.b) return z;
  const y = be.biasAdd(z, l.b.value);
  be.dispose(z);
  return y;
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
