/**
 * The GPT's head on the last stage: `transformer.ln_f` then `lm_head` (no
 * bias, untied from wte), [B·T, C] → logits [B·T, V]. backwardInput leaves in
 * `saved` what backwardWeight needs.
 */
import type { Backend, Tensor } from '../backend.ts';
import type { GptHeadSpec } from '../model-spec.ts';
import type { Param } from '../param.ts';
import type { Layer, LayerForward } from './layer.ts';
import {
  createTorchLayerNorm, createTorchLinear, GPT_LN_EPS, torchLinearBackwardInput, torchLinearBackwardWeight, torchLinearForward,
  type TorchLayerNorm, type TorchLinear,
} from './torch-linear.ts';

export class GptHead implements Layer {
  readonly params: readonly Param[];
  private readonly lnf: TorchLayerNorm;
  private readonly lm: TorchLinear;

  constructor(
    private readonly be: Backend,
    readonly name: string,
    spec: GptHeadSpec,
    seed: number,
  ) {
    this.lnf = createTorchLayerNorm(be, 'transformer.ln_f', spec.dim, seed);
    this.lm = createTorchLinear(be, 'lm_head', spec.dim, spec.vocab, spec.init, seed, false);
    this.params = [this.lnf.weight, this.lnf.bias, this.lm.W];
  }

  /** saved = [x, mean, rstd, ln_f(x)]. */
  forward(x: Tensor, save: boolean): LayerForward {
    const l = this.be.layerNorm(x, this.lnf.weight.value, this.lnf.bias.value, GPT_LN_EPS);
    const y = torchLinearForward(this.be, this.lm, l.y);
    if (save) return { y, saved: [x, l.mean, l.rstd, l.y] };
    for (const t of [l.mean, l.rstd, l.y]) this.be.dispose(t);
    return { y, saved: [] };
  }

  /** dx; appends dln_f (the LayerNorm's output gradient) for backwardWeight. */
  backwardInput(saved: Tensor[], dy: Tensor): Tensor {
    const [x, mean, rstd] = saved;
    const da = torchLinearBackwardInput(this.be, this.lm, dy);
    const dx = this.be.layerNormBackwardInput(x, this.lnf.weight.value, mean, rstd, da);
    saved.push(da);
    return dx;
  }

  backwardWeight(saved: readonly Tensor[], dy: Tensor): void {
    const [x, mean, rstd, a, da] = saved;
    torchLinearBackwardWeight(this.be, this.lm, a, dy);
    this.be.layerNormBackwardWeightAcc(this.lnf.weight.grad, this.lnf.bias.grad, x, mean, rstd, da);
  }
}
