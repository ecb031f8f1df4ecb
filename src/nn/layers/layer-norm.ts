/** LayerNorm over the last axis with gain gamma [d] (init 1) and shift beta [d] (init 0). */
import type { Backend, Tensor } from '../backend.ts';
import type { LayerNormSpec } from '../model-spec.ts';
import { createParam } from '../param.ts';
import type { Param } from '../param.ts';
import type { Layer, LayerForward } from './layer.ts';

export class LayerNorm implements Layer {
  readonly gamma: Param;
  readonly beta: Param;
  readonly params: readonly Param[];
  private readonly eps: number;

  constructor(
    private readonly be: Backend,
    readonly name: string,
    spec: LayerNormSpec,
    seed: number,
  ) {
    this.gamma = createParam(be, `${name}.gamma`, [spec.dim], { kind: 'const', value: 1 }, seed, false);
    this.beta = createParam(be, `${name}.beta`, [spec.dim], { kind: 'const', value: 0 }, seed, false);
    this.params = [this.gamma, this.beta];
    this.eps = spec.eps;
  }

  /** saved = [x, mean, rstd]. */
  forward(x: Tensor, save: boolean): LayerForward {
    const { y, mean, rstd } = this.be.layerNorm(x, this.gamma.value, this.beta.value, this.eps);
    if (save) return { y, saved: [x, mean, rstd] };
    this.be.dispose(mean);
    this.be.dispose(rstd);
    return { y, saved: [] };
  }

  backwardInput(saved: readonly Tensor[], dy: Tensor): Tensor {
    const [x, mean, rstd] = saved;
    return this.be.layerNormBackwardInput(x, this.gamma.value, mean, rstd, dy);
  }

  backwardWeight(saved: readonly Tensor[], dy: Tensor): void {
    const [x, mean, rstd] = saved;
    this.be.layerNormBackwardWeightAcc(this.gamma.grad, this.beta.grad, x, mean, rstd, dy);
  }
}
