/**
 * y = x·W + b; W [in, out], b [out]. dx = dy·Wᵀ; dW += xᵀ·dy; db += Σ_rows dy.
 *
 * Tensor parallel over a tp group of t workers (tp-shard.ts): column-parallel,
 * worker j holds W's output columns [j·out/t, (j+1)·out/t) and that slice of b,
 * computes its columns of y and all-gathers the rest (the next layer, a
 * LayerNorm or a Linear, needs whole rows: Megatron's gather_output). Backward:
 * its own columns of dy give its weight gradients and a partial dx, summed
 * over the group (Megatron's f). With t = 1 (SOLO): the same kernels as a plain Linear.
 */
import type { Backend, Tensor } from '../backend.ts';
import type { LinearSpec } from '../model-spec.ts';
import { createTpParam } from '../param.ts';
import type { Param } from '../param.ts';
import { SOLO, type TpGroup } from '../tensor-parallel.ts';
import type { Layer, LayerForward } from './layer.ts';

export class Linear implements Layer {
  readonly W: Param;
  readonly b: Param;
  readonly params: readonly Param[];
  /** With t > 1, backwardInput takes this worker's columns of dy, which backwardWeight reads: run it even where dx is not wanted. */
  readonly needsBackwardInput: boolean;

  constructor(
    private readonly be: Backend,
    readonly name: string,
    spec: LinearSpec,
    seed: number,
    private readonly tp: TpGroup = SOLO,
  ) {
    const split = { t: tp.size, j: tp.index };
    this.W = createTpParam(be, `${name}.W`, [spec.in, spec.out], spec.init, seed, true, { rule: { kind: 'cols' }, ...split });
    this.b = createTpParam(be, `${name}.b`, [spec.out], { kind: 'const', value: 0 }, seed, false, { rule: { kind: 'rows', parts: 1 }, ...split });
    this.params = [this.W, this.b];
    this.needsBackwardInput = tp.size > 1;
  }

  async forward(x: Tensor, save: boolean): Promise<LayerForward> {
    const z = this.be.matmul(x, this.W.value);
    const y = this.be.biasAdd(z, this.b.value);
    this.be.dispose(z);
    return { y: await this.tp.allGather(y), saved: save ? [x] : [] };
  }

  /** dx; with t > 1 keeps this worker's columns of dy in `saved` for backwardWeight. */
  async backwardInput(saved: Tensor[], dy: Tensor): Promise<Tensor> {
    const mine = await this.tp.ownColumns(dy);
    if (mine !== dy) saved.splice(1, saved.length - 1, mine);
    return this.tp.allReduce(this.be.matmul(mine, this.W.value, { transB: true }));
  }

  backwardWeight(saved: readonly Tensor[], dy: Tensor): void {
    const mine = saved[1] ?? dy;
    this.be.matmulAcc(this.W.grad, saved[0], mine, { transA: true });
    this.be.colSumAcc(this.b.grad, mine);
  }
}
