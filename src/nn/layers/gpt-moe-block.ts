/**
 * A transformer block whose MLP is a mixture of experts (Switch / GShard; moe-mlp.ts), on the residual stream
 * x [B·T, C]:
 *
 *   x1 = x  + c_proj(attn(c_attn(ln_1(x))))       as gpt-block.ts (one worker: no tensor or sequence parallelism)
 *   y  = x1 + moe(ln_2(x1))                        the micro-batch's B·T tokens are the routing group
 *
 * With an ep group (moe-mlp.ts), x holds this worker's sequences of the micro-batch, the attention half is
 * data-parallel, and the routing group is the micro-batch over the ep group.
 *
 * Parameters: makemore's names for the attention half and ln_2, then `${prefix}.mlp.router.weight` [E, C],
 * `${prefix}.mlp.experts.c_fc.weight` [E·4C, C], `${prefix}.mlp.experts.c_proj.weight` [E·C, 4C].
 *
 * The load-balancing loss: the forward that keeps its stash also computes the group's aux (moe-reference.ts);
 * backwardInput adds α·(S / stepTokens)·∂aux to the router's gradient (α = auxLossWeight, S the group's rows,
 * stepTokens the step's token rows over all micro-batches and replicas, so the step's objective is the
 * cross-entropy plus α × the token-weighted mean of the groups' aux) and the same weighted aux into `auxLoss`,
 * which the stage reads and zeroes (Stage.takeAuxLoss). It is counted in backwardInput, so a stage that
 * recomputes its forward counts it once.
 */
import type { Backend, Tensor } from '../backend.ts';
import type { GptMoeBlockSpec } from '../model-spec.ts';
import type { Param } from '../param.ts';
import { SOLO_EP, type EpGroup } from '../expert-parallel.ts';
import type { Layer, LayerForward, RouteLoad } from './layer.ts';
import { MoeMlp } from './moe-mlp.ts';
import {
  createTorchLayerNorm, createTorchLinear, GPT_LN_EPS, torchLinearBackwardInput, torchLinearBackwardWeight, torchLinearForward, torchLinearParams,
  type TorchLayerNorm, type TorchLinear,
} from './torch-linear.ts';
import { blockAttentionProbs, causalProbs } from './attention-probs.ts';

/** The attention half's stash (indices into `saved` after forward); the MoE's follows from MOE_AT, then aux and dP. */
const A = { x: 0, m1: 1, r1: 2, a: 3, qkv: 4, P: 5, o: 6, x1: 7, m2: 8, r2: 9 } as const;
const MOE_AT = 10;
/** After backwardInput: the attention half's weight inputs and gradients, then the MoE's kept tensors. */
const W = { x: 0, m1: 1, r1: 2, a: 3, o: 4, x1: 5, m2: 6, r2: 7, du: 8, dx1: 9, dqkv: 10, da: 11 } as const;
const MOE_KEPT_AT = 12;

export class GptMoeBlock implements Layer {
  readonly params: readonly Param[];
  /** α-weighted aux loss accumulated over this step's backwards (Stage.takeAuxLoss reads and zeroes it). */
  readonly auxLoss: Tensor;
  private readonly ln1: TorchLayerNorm;
  private readonly attn: TorchLinear;
  private readonly proj: TorchLinear;
  private readonly ln2: TorchLayerNorm;
  private readonly moe: MoeMlp;
  private readonly scale: number;
  /** The last saving forward's routing counts, until the stage takes them (takeRouteLoad). */
  private load: RouteLoad | null = null;

  constructor(
    private readonly be: Backend,
    readonly name: string,
    private readonly spec: GptMoeBlockSpec,
    seed: number,
    ep: EpGroup = SOLO_EP,
  ) {
    const C = spec.dim, p = spec.prefix;
    this.ln1 = createTorchLayerNorm(be, `${p}.ln_1`, C, seed);
    this.attn = createTorchLinear(be, `${p}.attn.c_attn`, C, 3 * C, spec.init, seed);
    this.proj = createTorchLinear(be, `${p}.attn.c_proj`, C, C, spec.projInit, seed);
    this.ln2 = createTorchLayerNorm(be, `${p}.ln_2`, C, seed);
    this.moe = new MoeMlp(be, { prefix: `${p}.mlp`, dim: C, experts: spec.experts, topK: spec.topK, capacityFactor: spec.capacityFactor, init: spec.init, projInit: spec.projInit }, seed, ep);
    this.params = [this.ln1.weight, this.ln1.bias, ...torchLinearParams(this.attn), ...torchLinearParams(this.proj), this.ln2.weight, this.ln2.bias, ...this.moe.params];
    this.scale = 1 / Math.sqrt(C / spec.heads);
    this.auxLoss = be.zeros([1]);
  }

  /** The weight of a group of S rows' aux in the step's objective. */
  auxWeight(S: number): number {
    return (this.spec.auxLossWeight * S) / this.spec.stepTokens;
  }

  takeRouteLoad(): RouteLoad | null {
    const l = this.load;
    this.load = null;
    return l;
  }

  /** The causal attention probabilities [B·H·T, T] from qkv. */
  private probs(qkv: Tensor): Tensor {
    return causalProbs(this.be, qkv, this.spec.heads, this.spec.blockSize, this.scale);
  }

  /** The attention probabilities [B·H·T, T] the block gives its input x (for pictures; nothing kept). */
  attentionProbs(x: Tensor): Tensor {
    return blockAttentionProbs(this.be, this.ln1, this.attn, x, this.spec.heads, this.spec.blockSize, this.scale);
  }

  async forward(x: Tensor, save: boolean): Promise<LayerForward> {
    const be = this.be;
    const l1 = be.layerNorm(x, this.ln1.weight.value, this.ln1.bias.value, GPT_LN_EPS);
    const qkv = torchLinearForward(be, this.attn, l1.y);
    const P = this.probs(qkv);
    const o = be.attentionValues(P, qkv, this.spec.heads);
    const ap = torchLinearForward(be, this.proj, o);
    const x1 = be.add(x, ap);
    be.dispose(ap);
    const l2 = be.layerNorm(x1, this.ln2.weight.value, this.ln2.bias.value, GPT_LN_EPS);
    const m = await this.moe.forward(l2.y, save, save);
    const y = be.add(x1, m.out);
    be.dispose(m.out);
    if (m.load) {
      if (this.load) be.dispose(this.load.counts);
      this.load = { ...m.load, experts: this.spec.experts };
    }
    const attnSaved = [x, l1.mean, l1.rstd, l1.y, qkv, P, o, x1, l2.mean, l2.rstd];
    if (save) {
      const aux = m.aux as { loss: Tensor; dProbs: Tensor };
      return { y, saved: [...attnSaved, ...m.saved, aux.loss, aux.dProbs] };
    }
    for (const t of attnSaved.slice(1)) be.dispose(t);
    be.dispose(l2.y);
    return { y, saved: [] };
  }

  async backwardInput(saved: Tensor[], dy: Tensor): Promise<Tensor> {
    const be = this.be, s = saved;
    const n = this.moe.savedCount;
    const moeSaved = s.slice(MOE_AT, MOE_AT + n);
    const [auxLoss, auxDProbs] = s.slice(MOE_AT + n);
    // The group's weight (with ep the group is the ep workers' rows together).
    const w = this.auxWeight(this.moe.groupRows(dy.shape[0]));
    be.axpy(this.auxLoss, auxLoss, w);
    // MoE branch: y = x1 + moe(ln_2(x1)).
    const du = await this.moe.backwardInput(moeSaved, dy, { dProbs: auxDProbs, scale: w });
    const dln2 = be.layerNormBackwardInput(s[A.x1], this.ln2.weight.value, s[A.m2], s[A.r2], du);
    const dx1 = be.add(dy, dln2);
    be.dispose(dln2);
    // Attention branch: x1 = x + proj(attn(qkv)), as gpt-block.ts.
    const dout = torchLinearBackwardInput(be, this.proj, dx1);
    const dP = be.attentionProbsGrad(s[A.qkv], dout, this.spec.heads, this.spec.blockSize);
    const dS = be.causalSoftmaxBackward(s[A.P], dP);
    be.dispose(dP);
    const dqkv = be.attentionQkvGrad(s[A.qkv], s[A.P], dS, dout, this.spec.heads, this.scale);
    be.dispose(dS);
    be.dispose(dout);
    const da = torchLinearBackwardInput(be, this.attn, dqkv);
    const dln1 = be.layerNormBackwardInput(s[A.x], this.ln1.weight.value, s[A.m1], s[A.r1], da);
    const dx = be.add(dx1, dln1);
    be.dispose(dln1);
    const keep = [s[A.x], s[A.m1], s[A.r1], s[A.a], s[A.o], s[A.x1], s[A.m2], s[A.r2], du, dx1, dqkv, da, ...moeSaved];
    saved.splice(0, saved.length, ...keep);
    return dx;
  }

  backwardWeight(saved: readonly Tensor[], _dy: Tensor): void {
    const be = this.be, s = saved;
    this.moe.backwardWeight(s.slice(MOE_KEPT_AT));
    be.layerNormBackwardWeightAcc(this.ln2.weight.grad, this.ln2.bias.grad, s[W.x1], s[W.m2], s[W.r2], s[W.du]);
    torchLinearBackwardWeight(be, this.proj, s[W.o], s[W.dx1]);
    torchLinearBackwardWeight(be, this.attn, s[W.a], s[W.dqkv]);
    be.layerNormBackwardWeightAcc(this.ln1.weight.grad, this.ln1.bias.grad, s[W.x], s[W.m1], s[W.r1], s[W.da]);
  }
}
