/**
 * The GPT's head on the last stage: `transformer.ln_f` then `lm_head` (no
 * bias, untied from wte), [B·T, C] → logits [B·T, V]. backwardInput leaves in
 * `saved` what backwardWeight needs.
 *
 * With sequence parallelism over a tp group of t (gpt-block.ts) its input is
 * this worker's block of rows: it gathers the whole rows first, so every
 * worker computes the whole logits and loss as without it, and hands back its
 * own rows of dx.
 */
import type { Backend, Tensor } from '../backend.ts';
import type { GptHeadSpec } from '../model-spec.ts';
import type { Param } from '../param.ts';
import type { Layer, LayerForward } from './layer.ts';
import { SOLO, type TpGroup } from '../tensor-parallel.ts';
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
    /** Sequence parallelism's group (its input's rows split over it); SOLO: whole rows. */
    private readonly sp: TpGroup = SOLO,
  ) {
    this.lnf = createTorchLayerNorm(be, 'transformer.ln_f', spec.dim, seed);
    this.lm = createTorchLinear(be, 'lm_head', spec.dim, spec.vocab, spec.init, seed, false);
    this.params = [this.lnf.weight, this.lnf.bias, this.lm.W];
  }

  /** saved = [x, mean, rstd, ln_f(x)]. */
  async forward(own: Tensor, save: boolean): Promise<LayerForward> {
    const x = this.sp.size === 1 ? own : (await this.sp.allGatherRows([own]))[0];
    const l = this.be.layerNorm(x, this.lnf.weight.value, this.lnf.bias.value, GPT_LN_EPS);
    const y = torchLinearForward(this.be, this.lm, l.y);
    if (save) return { y, saved: [x, l.mean, l.rstd, l.y] };
    for (const t of [l.mean, l.rstd, l.y]) this.be.dispose(t);
    if (x !== own) this.be.dispose(x);
    return { y, saved: [] };
  }

  /** dx; appends dln_f (the LayerNorm's output gradient) for backwardWeight. */
  async backwardInput(saved: Tensor[], dy: Tensor): Promise<Tensor> {
    const [x, mean, rstd] = saved;
    const da = torchLinearBackwardInput(this.be, this.lm, dy);
    const dx = this.be.layerNormBackwardInput(x, this.lnf.weight.value, mean, rstd, da);
    saved.push(da);
    if (this.sp.size === 1) return dx;
    const mine = await this.sp.ownRows(dx);
    this.be.dispose(dx);
    return mine;
  }

  backwardWeight(saved: readonly Tensor[], dy: Tensor): void {
    const [x, mean, rstd, a, da] = saved;
    torchLinearBackwardWeight(this.be, this.lm, a, dy);
    this.be.layerNormBackwardWeightAcc(this.lnf.weight.grad, this.lnf.bias.grad, x, mean, rstd, da);
  }
}
