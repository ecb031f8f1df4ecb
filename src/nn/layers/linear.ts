/** y = x·W + b; W [in, out], b [out]. dx = dy·Wᵀ; dW += xᵀ·dy; db += Σ_rows dy. */
import type { Backend, Tensor } from '../backend.ts';
import type { LinearSpec } from '../model-spec.ts';
import { createParam } from '../param.ts';
import type { Param } from '../param.ts';
import type { Layer, LayerForward } from './layer.ts';

export class Linear implements Layer {
  readonly W: Param;
  readonly b: Param;
  readonly params: readonly Param[];

  constructor(
    private readonly be: Backend,
    readonly name: string,
    spec: LinearSpec,
    seed: number,
  ) {
    this.W = createParam(be, `${name}.W`, [spec.in, spec.out], spec.init, seed, true);
    this.b = createParam(be, `${name}.b`, [spec.out], { kind: 'const', value: 0 }, seed, false);
    this.params = [this.W, this.b];
  }

  forward(x: Tensor, save: boolean): LayerForward {
    const z = this.be.matmul(x, this.W.value);
    const y = this.be.biasAdd(z, this.b.value);
    this.be.dispose(z);
    return { y, saved: save ? [x] : [] };
  }

  backwardInput(_saved: readonly Tensor[], dy: Tensor): Tensor {
    return this.be.matmul(dy, this.W.value, { transB: true });
  }

  backwardWeight(saved: readonly Tensor[], dy: Tensor): void {
    this.be.matmulAcc(this.W.grad, saved[0], dy, { transA: true });
    this.be.colSumAcc(this.b.grad, dy);
  }
}
