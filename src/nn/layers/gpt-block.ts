/**
 * One pre-LayerNorm transformer block (makemore / nanoGPT), on the residual
 * stream x [B·T, C]:
 *
 *   x1 = x  + c_proj(attn(c_attn(ln_1(x))))       causal multi-head, scale 1/sqrt(D)
 *   y  = x1 + mlp.c_proj(gelu_tanh(mlp.c_fc(ln_2(x1))))
 *
 * Parameters carry makemore's state-dict names and PyTorch layouts
 * (`${prefix}.attn.c_attn.weight` [3C, C], ...). The backward is split:
 * backwardInput computes dx and leaves in `saved` exactly what backwardWeight
 * needs (the weight ops' inputs and output gradients), so zero-bubble
 * schedules defer the whole W half.
 *
 * Tensor parallel over a tp group of t workers (Megatron-LM §3, tp-shard.ts):
 * this worker holds heads [j·H/t, (j+1)·H/t) of c_attn and attention, 4C/t
 * columns of the MLP, and the matching input columns of both projections.
 * Forward: each projection's partial product is summed over the group (g)
 * before its bias and the residual; backward: the gradients at the inputs of
 * c_attn and c_fc (the ln_1 and ln_2 outputs) are summed (f). Two all-reduces
 * each way per block; with t = 1 (SOLO) none, and the same kernels as before.
 *
 * Sequence parallelism (Korthikanti et al. 2022, §4.2.2; `sequenceParallel`, t > 1): the block's input and
 * output, its LayerNorms and residual adds hold this worker's block of token rows only ([R/t, C]). Forward:
 * each LayerNorm's output is all-gathered into whole rows before its column-parallel linear, and each
 * row-parallel linear's partial sums are reduce-scattered (this worker keeps its rows, then the bias and the
 * residual). Backward: dy is all-gathered for the MLP's c_proj, dx1 for attn's c_proj, and the input
 * gradients of c_fc and c_attn are reduce-scattered; the LayerNorm outputs were kept as row blocks and are
 * gathered again (with dy, in one exchange) for the weight gradients, as Megatron does, so everything the
 * forward keeps is 1/t. A LayerNorm's weight gradient sums over rows, which are now split: each worker's
 * gradients hold its rows' part only (`gradsSummedOverTp`), and its stage adds them over the group once,
 * where its update policy next reads the gradients (Megatron's LayerNorm all-reduce before the optimizer;
 * stage.ts sumGradsOverTp), so every worker's copy of the LayerNorms stays the same. The forward gives the
 * same bits as without it.
 *
 * Selective recomputation (Korthikanti et al. 2022, §5; `recomputeAttention`):
 * forward keeps everything but the attention probabilities P [B·H·T, T], the
 * stash's only T² tensor; backwardInput recomputes them from the saved qkv
 * with the forward's own kernels, so the gradients are the same bits.
 */
import type { Backend, Tensor } from '../backend.ts';
import type { GptBlockSpec } from '../model-spec.ts';
import type { Param } from '../param.ts';
import { SOLO, type TpGroup } from '../tensor-parallel.ts';
import type { Layer, LayerForward } from './layer.ts';
import {
  createTorchLayerNorm, createTpTorchLinear, GPT_LN_EPS, rowParallelForward, torchLinearBackwardInput, torchLinearBackwardWeight, torchLinearForward, torchLinearParams,
  type TorchLayerNorm, type TorchLinear,
} from './torch-linear.ts';
import { blockAttentionProbs, causalProbs } from './attention-probs.ts';

/** Indices into `saved` after forward. */
const FULL = { x: 0, m1: 1, r1: 2, a: 3, qkv: 4, P: 5, o: 6, x1: 7, m2: 8, r2: 9, c: 10, h: 11, g: 12 } as const;
/** The same with selective recomputation: the probabilities are not kept. */
const FS = { x: 0, m1: 1, r1: 2, a: 3, qkv: 4, P: -1, o: 5, x1: 6, m2: 7, r2: 8, c: 9, h: 10, g: 11 } as const;
/** Indices into `saved` after backwardInput (what backwardWeight reads). */
const Wd = { x: 0, m1: 1, r1: 2, a: 3, o: 4, x1: 5, m2: 6, r2: 7, c: 8, g: 9, dh: 10, dc: 11, dx1: 12, dqkv: 13, da: 14 } as const;
/** The same with sequence parallelism: whole rows gathered again, and the LayerNorms' gradients over this worker's rows. */
const Ws = { a: 0, o: 1, c: 2, g: 3, dh: 4, dy: 5, dx1: 6, dqkv: 7, dw1: 8, db1: 9, dw2: 10, db2: 11 } as const;

export class GptBlock implements Layer {
  readonly params: readonly Param[];
  private readonly ln1: TorchLayerNorm;
  private readonly attn: TorchLinear;
  private readonly proj: TorchLinear;
  private readonly ln2: TorchLayerNorm;
  private readonly fc: TorchLinear;
  private readonly mproj: TorchLinear;
  /** This worker's heads (H / t). */
  private readonly heads: number;
  private readonly T: number;
  private readonly scale: number;
  /** Sequence parallelism over a group of more than one. */
  private readonly sp: boolean;

  constructor(
    private readonly be: Backend,
    readonly name: string,
    spec: GptBlockSpec,
    seed: number,
    private readonly tp: TpGroup = SOLO,
    /** Selective recomputation: P is recomputed in the backward rather than kept. */
    private readonly recomputeAttention = false,
    /** Sequence parallelism: the residual stream's token rows split over the tp group (no effect alone). */
    sequenceParallel = false,
  ) {
    this.sp = sequenceParallel && tp.size > 1;
    const C = spec.dim, p = spec.prefix;
    this.ln1 = createTorchLayerNorm(be, `${p}.ln_1`, C, seed);
    this.attn = createTpTorchLinear(be, `${p}.attn.c_attn`, C, 3 * C, spec.init, seed, tp, { kind: 'column', parts: 3 });
    this.proj = createTpTorchLinear(be, `${p}.attn.c_proj`, C, C, spec.projInit, seed, tp, { kind: 'row' });
    this.ln2 = createTorchLayerNorm(be, `${p}.ln_2`, C, seed);
    this.fc = createTpTorchLinear(be, `${p}.mlp.c_fc`, C, 4 * C, spec.init, seed, tp, { kind: 'column', parts: 1 });
    this.mproj = createTpTorchLinear(be, `${p}.mlp.c_proj`, 4 * C, C, spec.projInit, seed, tp, { kind: 'row' });
    this.params = [
      this.ln1.weight, this.ln1.bias, ...torchLinearParams(this.attn), ...torchLinearParams(this.proj),
      this.ln2.weight, this.ln2.bias, ...torchLinearParams(this.fc), ...torchLinearParams(this.mproj),
    ];
    this.heads = spec.heads / tp.size;
    this.T = spec.blockSize;
    this.scale = 1 / Math.sqrt(C / spec.heads);
  }

  /** With sequence parallelism, the parameters whose gradients hold this worker's rows' part only: the LayerNorms'. */
  get gradsSummedOverTp(): readonly Param[] {
    return this.sp ? [this.ln1.weight, this.ln1.bias, this.ln2.weight, this.ln2.bias] : [];
  }

  /** The causal attention probabilities [B·H·T, T] from qkv. */
  private probs(qkv: Tensor): Tensor {
    return causalProbs(this.be, qkv, this.heads, this.T, this.scale);
  }

  /** The attention probabilities [B·H·T, T] this worker's heads give the block's input x (for pictures; nothing kept). */
  attentionProbs(x: Tensor): Tensor {
    return blockAttentionProbs(this.be, this.ln1, this.attn, x, this.heads, this.T, this.scale);
  }

  /** A column-parallel linear's forward on a LayerNorm's output: with sequence parallelism, on its rows all-gathered first. */
  private async columnForward(l: TorchLinear, y: Tensor): Promise<Tensor> {
    if (!this.sp) return torchLinearForward(this.be, l, y);
    const [all] = await this.tp.allGatherRows([y]);
    const out = torchLinearForward(this.be, l, all);
    this.be.dispose(all);
    return out;
  }

  /** A row-parallel linear's forward: its partial sums all-reduced, or with sequence parallelism reduce-scattered into this worker's rows; then the bias. */
  private async rowForward(l: TorchLinear, x: Tensor): Promise<Tensor> {
    if (!this.sp) return rowParallelForward(this.be, l, x, this.tp);
    const z = await this.tp.reduceScatterRows(this.be.matmul(x, l.W.value, { transB: true }));
    const y = this.be.biasAdd(z, (l.b as NonNullable<TorchLinear['b']>).value);
    this.be.dispose(z);
    return y;
  }

  async forward(x: Tensor, save: boolean): Promise<LayerForward> {
    const be = this.be;
    const l1 = be.layerNorm(x, this.ln1.weight.value, this.ln1.bias.value, GPT_LN_EPS);
    const qkv = await this.columnForward(this.attn, l1.y);
    const P = this.probs(qkv);
    const o = be.attentionValues(P, qkv, this.heads);
    const ap = await this.rowForward(this.proj, o);
    const x1 = be.add(x, ap);
    be.dispose(ap);
    const l2 = be.layerNorm(x1, this.ln2.weight.value, this.ln2.bias.value, GPT_LN_EPS);
    const h = await this.columnForward(this.fc, l2.y);
    const g = be.activation('gelu', h);
    const mp = await this.rowForward(this.mproj, g);
    const y = be.add(x1, mp);
    be.dispose(mp);
    const saved = [x, l1.mean, l1.rstd, l1.y, qkv, P, o, x1, l2.mean, l2.rstd, l2.y, h, g];
    if (save && this.recomputeAttention) {
      be.dispose(P);
      saved.splice(FULL.P, 1);
    }
    if (save) return { y, saved };
    for (const t of saved.slice(1)) be.dispose(t);
    return { y, saved: [] };
  }

  /** dx; replaces `saved` by what backwardWeight needs (the stage frees the rest). */
  async backwardInput(saved: Tensor[], dy: Tensor): Promise<Tensor> {
    if (this.sp) return this.backwardInputSp(saved, dy);
    const be = this.be;
    const s = saved;
    const F = this.recomputeAttention ? FS : FULL;
    // MLP branch: y = x1 + mproj(gelu(fc(ln_2(x1)))).
    const dg = torchLinearBackwardInput(be, this.mproj, dy);
    const dh = be.activationBackward('gelu', s[F.h], dg);
    be.dispose(dg);
    const dc = await this.tp.allReduce(torchLinearBackwardInput(be, this.fc, dh));
    const dln2 = be.layerNormBackwardInput(s[F.x1], this.ln2.weight.value, s[F.m2], s[F.r2], dc);
    const dx1 = be.add(dy, dln2); // the gradient split: the residual and the branch
    be.dispose(dln2);
    // Attention branch: x1 = x + proj(attn(qkv)).
    const dqkv = this.attentionBackward(s, dx1);
    const da = await this.tp.allReduce(torchLinearBackwardInput(be, this.attn, dqkv));
    const dln1 = be.layerNormBackwardInput(s[F.x], this.ln1.weight.value, s[F.m1], s[F.r1], da);
    const dx = be.add(dx1, dln1);
    be.dispose(dln1);
    const keep = [s[F.x], s[F.m1], s[F.r1], s[F.a], s[F.o], s[F.x1], s[F.m2], s[F.r2], s[F.c], s[F.g], dh, dc, dx1, dqkv, da];
    saved.splice(0, saved.length, ...keep);
    return dx;
  }

  /** The attention branch's backward from the gradient at its c_proj output (whole rows): dqkv. */
  private attentionBackward(s: readonly Tensor[], dx1: Tensor): Tensor {
    const be = this.be;
    const F = this.recomputeAttention ? FS : FULL;
    const dout = torchLinearBackwardInput(be, this.proj, dx1);
    const P = this.recomputeAttention ? this.probs(s[F.qkv]) : s[F.P];
    const dP = be.attentionProbsGrad(s[F.qkv], dout, this.heads, this.T);
    const dS = be.causalSoftmaxBackward(P, dP);
    be.dispose(dP);
    const dqkv = be.attentionQkvGrad(s[F.qkv], P, dS, dout, this.heads, this.scale);
    be.dispose(dS);
    be.dispose(dout);
    if (this.recomputeAttention) be.dispose(P);
    return dqkv;
  }

  /** backwardInput with sequence parallelism (dy and dx: this worker's rows). */
  private async backwardInputSp(saved: Tensor[], dy: Tensor): Promise<Tensor> {
    const be = this.be;
    const s = saved;
    const F = this.recomputeAttention ? FS : FULL;
    // Whole rows of dy for the MLP's c_proj, and of both LayerNorm outputs for the weight gradients: one exchange.
    const [dyAll, cAll, aAll] = await this.tp.allGatherRows([dy, s[F.c], s[F.a]]);
    const dg = torchLinearBackwardInput(be, this.mproj, dyAll);
    const dh = be.activationBackward('gelu', s[F.h], dg);
    be.dispose(dg);
    const dc = await this.tp.reduceScatterRows(torchLinearBackwardInput(be, this.fc, dh));
    const dln2 = be.layerNormBackwardInput(s[F.x1], this.ln2.weight.value, s[F.m2], s[F.r2], dc);
    const dx1 = be.add(dy, dln2);
    be.dispose(dln2);
    const [dx1All] = await this.tp.allGatherRows([dx1]);
    const dqkv = this.attentionBackward(s, dx1All);
    const da = await this.tp.reduceScatterRows(torchLinearBackwardInput(be, this.attn, dqkv));
    const dln1 = be.layerNormBackwardInput(s[F.x], this.ln1.weight.value, s[F.m1], s[F.r1], da);
    const dx = be.add(dx1, dln1);
    be.dispose(dln1);
    // The LayerNorms' weight gradients over this worker's rows (its stage sums them over the group later).
    const C = this.ln1.weight.value.shape[0];
    const parts = [be.zeros([C]), be.zeros([C]), be.zeros([C]), be.zeros([C])];
    be.layerNormBackwardWeightAcc(parts[0], parts[1], s[F.x], s[F.m1], s[F.r1], da);
    be.layerNormBackwardWeightAcc(parts[2], parts[3], s[F.x1], s[F.m2], s[F.r2], dc);
    for (const t of [dx1, dc, da]) be.dispose(t);
    saved.splice(0, saved.length, aAll, s[F.o], cAll, s[F.g], dh, dyAll, dx1All, dqkv, ...parts);
    return dx;
  }

  private backwardWeightSp(s: readonly Tensor[]): void {
    const be = this.be;
    torchLinearBackwardWeight(be, this.mproj, s[Ws.g], s[Ws.dy]);
    torchLinearBackwardWeight(be, this.fc, s[Ws.c], s[Ws.dh]);
    torchLinearBackwardWeight(be, this.proj, s[Ws.o], s[Ws.dx1]);
    torchLinearBackwardWeight(be, this.attn, s[Ws.a], s[Ws.dqkv]);
    const acc = (into: Tensor, sum: Tensor) => be.axpy(into, sum, 1);
    acc(this.ln1.weight.grad, s[Ws.dw1]);
    acc(this.ln1.bias.grad, s[Ws.db1]);
    acc(this.ln2.weight.grad, s[Ws.dw2]);
    acc(this.ln2.bias.grad, s[Ws.db2]);
  }

  backwardWeight(saved: readonly Tensor[], dy: Tensor): void {
    if (this.sp) return this.backwardWeightSp(saved);
    const be = this.be;
    const s = saved;
    torchLinearBackwardWeight(be, this.mproj, s[Wd.g], dy);
    torchLinearBackwardWeight(be, this.fc, s[Wd.c], s[Wd.dh]);
    be.layerNormBackwardWeightAcc(this.ln2.weight.grad, this.ln2.bias.grad, s[Wd.x1], s[Wd.m2], s[Wd.r2], s[Wd.dc]);
    torchLinearBackwardWeight(be, this.proj, s[Wd.o], s[Wd.dx1]);
    torchLinearBackwardWeight(be, this.attn, s[Wd.a], s[Wd.dqkv]);
    be.layerNormBackwardWeightAcc(this.ln1.weight.grad, this.ln1.bias.grad, s[Wd.x], s[Wd.m1], s[Wd.r1], s[Wd.da]);
  }
}
