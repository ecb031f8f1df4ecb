/**
 * An analytic profile of a GPT-style transformer of any size: FLOPs, times,
 * parameters and held activations per block, for the planner (mesh-plan.ts).
 * Blocks: the embedding, `layers` transformer layers, the head (final
 * LayerNorm, logits, loss), so a model has layers + 2 blocks.
 *
 * FLOPs (matmuls only, a multiply-add counted as 2; Narayanan et al., SC'21,
 * arXiv:2104.04473, §5.1 and appendix), for a micro-batch of b sequences of s
 * tokens, hidden size h, vocabulary V:
 *   layer forward F = 24·b·s·h² + 4·b·s²·h  (QKV 6bsh², scores 2bs²h, over the
 *       values 2bs²h, projection 2bsh², MLP 16bsh²);
 *   layer I (input gradient) = 24·b·s·h² + 8·b·s²·h: every weight matmul has
 *       one input-gradient matmul, and the two attention matmuls, whose both
 *       operands are activations, have two each (and no weight gradient);
 *   layer W (weight gradient) = 24·b·s·h²; so B = I + W = 2F;
 *   head F = I = W = 2·b·s·h·V; the embedding lookup counts 0.
 * With full activation recomputation a layer runs its forward again before its
 * backward: I gains F (the head is not recomputed). With selective
 * recomputation (Korthikanti et al. 2022, §5; Megatron's "core attention"
 * checkpoint) a layer runs only its attention's core again, the scores and the
 * attention over the values: I gains 4·b·s²·h. Over a whole step of B
 * sequences this is Megatron's F = 96·B·s·l·h²·(1 + s/6h + V/16lh) with
 * recomputation (their eq. 3), 72·B·s·l·h²·(1 + s/6h + V/12lh) without.
 * Time = FLOPs / (peak · efficiency) (device.ts).
 *
 * Parameters: a layer 12h² + 13h (Megatron's eq. 2 per layer); the embedding
 * V·h + s·h (tokens and learned positions); the head 2h (final LayerNorm) plus
 * V·h for its own copy of the embedding matrix when it sits on another device
 * than the embedding (Megatron keeps one on the last stage).
 *
 * Held activations (Korthikanti et al. 2022, arXiv:2205.05198, §4.1, eq. 5):
 * per layer s·b·h·(34 + 5·a·s/h) bytes at 16-bit without recomputation, i.e.
 * 16-bit tensors of 16·sbh + 2·as²b elements plus 1-byte dropout masks of
 * 2·sbh + as²b; at e bytes per element that is sbh·(16e + 2) + as²b·(2e + 1).
 * With full recomputation a layer keeps only its input, e·sbh (the paper's
 * 2sbh); with selective recomputation all but the attention's core, whose
 * as²b·(2e + 1) it recomputes: 34·sbh at 16-bit (the paper's Table 2). The
 * embedding keeps its dropout mask, sbh; the head the final LayerNorm's input
 * e·sbh and the fp32 logits for the loss, 4·sbV.
 *
 * Mixture of experts (moe.ts): with `moe` a layer's MLP is its experts' (the first denseLayers keep a dense
 * one), their FLOPs, parameters and held activations counted there; with ep > 1 each MoE layer's dispatch and
 * combine all-to-alls (schedule/ep-cost.ts) are added to its times, or hidden under them (DualPipe).
 *
 * Training state per parameter (Adam): 2 + 2 + 12 = 16 bytes in mixed
 * precision (bf16 weights and gradients, fp32 master weights, m and v); 4 + 4
 * + 8 = 16 in fp32. ZeRO divides it by dp stage by stage (zero.ts, the ZeRO
 * paper's §5): stage 1 the optimizer's share (12, resp. 8), stage 2 the
 * gradients' too, stage 3 the weights' too.
 */
import { ConfigError, requireInt } from '../util/errors.ts';
import { count } from '../util/count.ts';
import { allToAllLink, computeSeconds, type DeviceSpec } from './device.ts';
import { PROFILE_VERSION, type Profile } from './profile.ts';
import { modelStateBytesPerParam, type ZeroStage } from './zero.ts';
import { layerActivationBytesTp, NO_TP, tpAllReduceMs, tpCollectives, type TensorParallel } from './tensor-parallel.ts';
import { allToAllTime, withAllToAll } from '../schedule/ep-cost.ts';
import { allToAllBytes, allToAllCounts, checkMoe, isMoeLayer, mlpFlops, mlpHeldBytes, mlpParams, type MoeSpec } from './moe.ts';

export interface TransformerModel {
  layers: number;
  hidden: number;
  heads: number;
  /** Sequence length s. */
  seq: number;
  vocab: number;
  /** Bytes per element of weights, gradients and activations: 2 (bf16 mixed precision) or 4 (fp32). */
  bytesPerElement: 2 | 4;
  /**
   * Parameters of a layer's attention, all of them (default 4h² + 4h: Q, K, V, the projection, their biases);
   * DeepSeek's MLA gives its low-rank projections' count. Its forward FLOPs are 2·T·this (8·T·h² by default).
   */
  attentionParams?: number;
  /**
   * The attention core's width: over the heads, the sum of (query-key dim + value dim) / 2 (default h); the
   * scores and the attention over the values cost 4·b·s²·width forward (MLA: 128 heads × (192 + 128) / 2).
   */
  attentionCoreWidth?: number;
  /** Mixture-of-experts layers (moe.ts); absent: the dense GPT. */
  moe?: MoeSpec;
}

export const TRANSFORMER_LIMITS = { layers: 4096, hidden: 1 << 20, heads: 1 << 16, seq: 1 << 22, vocab: 1 << 24 } as const;

/** Checks every field; throws ConfigError naming `model.<field>`, the value and the rule. */
export function checkTransformer(m: TransformerModel): TransformerModel {
  for (const k of ['layers', 'hidden', 'heads', 'seq', 'vocab'] as const) requireInt(`model.${k}`, m[k], 1, TRANSFORMER_LIMITS[k]);
  if (m.hidden % m.heads !== 0) throw new ConfigError('model.heads', m.heads, `must divide hidden = ${m.hidden} evenly (each head takes hidden / heads columns)`);
  if (m.bytesPerElement !== 2 && m.bytesPerElement !== 4) throw new ConfigError('model.bytesPerElement', m.bytesPerElement, 'must be 2 (bf16 mixed precision) or 4 (fp32)');
  if (m.attentionParams !== undefined) requireInt('model.attentionParams', m.attentionParams, 1);
  if (m.attentionCoreWidth !== undefined) requireInt('model.attentionCoreWidth', m.attentionCoreWidth, 1, TRANSFORMER_LIMITS.hidden * 16);
  checkMoe(m);
  return m;
}

export interface OpFlops {
  F: number;
  I: number;
  W: number;
}

/** FLOPs of transformer layer i (0-based; all alike in a dense model) for a micro-batch of b sequences (no recomputation). */
export function layerFlops(m: TransformerModel, b: number, i = 0): OpFlops {
  const { seq: s, hidden: h } = m;
  const dense = 2 * b * s * (m.attentionParams ?? 4 * h * h) + mlpFlops(m, i, b * s);
  const attn = attentionCoreFlops(m, b);
  return { F: dense + attn, I: dense + 2 * attn, W: dense };
}

/** FLOPs of the head (logits) for b sequences. */
export function headFlops(m: TransformerModel, b: number): OpFlops {
  const x = 2 * b * m.seq * m.hidden * m.vocab;
  return { F: x, I: x, W: x };
}

/** Parameters of layer i: its attention, its two LayerNorms (4h) and its MLP, experts included (12h² + 13h for the GPT's). */
export function layerParams(m: TransformerModel, i = 0): number {
  const p = mlpParams(m, i);
  return (m.attentionParams ?? 4 * m.hidden * m.hidden + 4 * m.hidden) + 4 * m.hidden + p.dense + p.experts;
}

export function embeddingParams(m: TransformerModel): number {
  return (m.vocab + m.seq) * m.hidden;
}

/** The head's parameters: its final LayerNorm, plus its copy of the embedding matrix unless the embedding is on the same device. */
export function headParams(m: TransformerModel, tiedOnDevice: boolean): number {
  return 2 * m.hidden + (tiedOnDevice ? 0 : m.vocab * m.hidden);
}

/** Parameters of the model (one embedding matrix, shared by the head). */
export function modelParams(m: TransformerModel): number {
  let n = embeddingParams(m) + headParams(m, true);
  for (let i = 0; i < m.layers; i++) n += layerParams(m, i);
  return n;
}

/**
 * Korthikanti et al.'s activation bytes layer i holds for b sequences without recomputation (`selective`: less
 * the attention core's as²b·(2e + 1)): the attention's (7e + 1)·sbh and as²b·(2e + 1), the MLP's (moe.ts;
 * (9e + 1)·sbh for the GPT's, so sbh·(16e + 2) + as²b·(2e + 1) in all).
 */
export function layerActivationBytes(m: TransformerModel, b: number, i = 0, selective = false): number {
  const e = m.bytesPerElement;
  const sbh = m.seq * b * m.hidden;
  const as2b = selective ? 0 : m.heads * m.seq * m.seq * b;
  return sbh * (7 * e + 1) + mlpHeldBytes(m, i, m.seq * b) + as2b * (2 * e + 1);
}

/** What a layer holds with full recomputation: its input. */
export function layerInputBytes(m: TransformerModel, b: number): number {
  return m.bytesPerElement * m.seq * b * m.hidden;
}

/** K: Adam's bytes a parameter, 12 in mixed precision (fp32 master weights, m, v), 8 in fp32 (m, v). */
export function optimizerBytesPerParam(m: TransformerModel): number {
  return m.bytesPerElement === 2 ? 12 : 8;
}

/**
 * Bytes of weights, gradients and Adam state per parameter on one device at ZeRO stage `zero` over dp
 * replicas (zero.ts: 2e + K, 2e + K/dp, e + (e + K)/dp, (2e + K)/dp); true is ZeRO-1, false none.
 */
export function stateBytesPerParam(m: TransformerModel, zero: ZeroStage | boolean, dp: number): number {
  return modelStateBytesPerParam(m.bytesPerElement, optimizerBytesPerParam(m), zero, dp);
}

/** Model FLOPs of one step of `sequences` sequences: 3 × forward (no recomputation counted), Megatron's convention. */
export function modelFlopsPerStep(m: TransformerModel, sequences: number): number {
  let f = headFlops(m, sequences).F;
  for (let i = 0; i < m.layers; i++) f += layerFlops(m, sequences, i).F;
  return 3 * f;
}

/**
 * What every layer recomputes in its backward instead of keeping: nothing; its attention's core (selective:
 * I gains the scores and the attention over the values, a layer keeps all but their as²b·(2e + 1)); its
 * whole forward (full: I gains F, a layer keeps only its input). The planner tries them in this order.
 */
export type Recompute = 'none' | 'selective' | 'full';
export const RECOMPUTE_MODES: readonly Recompute[] = ['none', 'selective', 'full'];

/** FLOPs of one layer's attention core forward (scores 2bs²h, attention over the values 2bs²h): what selective recomputation runs again. */
export function attentionCoreFlops(m: TransformerModel, b: number): number {
  return 4 * b * m.seq * m.seq * (m.attentionCoreWidth ?? m.hidden);
}

export interface ProfileOptions {
  /** Sequences per micro-batch (b). */
  microBatch: number;
  /** What every layer recomputes in its backward (Recompute). */
  recompute: Recompute;
  /** Tensor parallelism (tensor-parallel.ts): each block's FLOPs, weights and most activations split t ways, its all-reduces added to its times. */
  tp?: TensorParallel;
  /** Expert parallelism (moe.ts): each MoE layer's all-to-alls added to its times, or overlapped with them. */
  ep?: ExpertParallel;
}

/**
 * The ep workers sharing each MoE layer's experts (n), how many of them sit on one node (local, the sender
 * included), and whether the schedule overlaps the all-to-all with compute (DualPipe: a forward and a backward
 * chunk at once, one's all-to-all under the other's compute). Played after the compute, a layer's F gains its
 * dispatch and combine and its I and B the backward's; overlapped, its F + B costs max(compute, all-to-all),
 * each op's compute scaled by max(1, (τF + τI) / (F + B)).
 */
export interface ExpertParallel {
  n: number;
  local: number;
  overlap: boolean;
}

/**
 * The Profile (profile.ts) of one micro-batch on `device`, in ms: per block F, I, W, B = I + W and
 * heldBytes (with recomputation, the recomputed times and bytes; heldBytesRecompute = heldBytes then).
 * comm is 0: the planner prices messages by where the ranks sit (mesh-plan.ts).
 */
export function transformerProfile(m: TransformerModel, o: ProfileOptions, device: DeviceSpec): Profile {
  checkTransformer(m);
  const b = requireInt('microBatch', o.microBatch, 1);
  const tp = o.tp ?? NO_TP;
  const t = tp.t;
  const e = m.bytesPerElement;
  const ms = (flops: number) => computeSeconds(device, flops / t, e) * 1e3;
  // The stage's tensor-parallel all-reduces (none when t = 1), ms each.
  if (!RECOMPUTE_MODES.includes(o.recompute)) throw new ConfigError('recompute', o.recompute, `must be one of ${RECOMPUTE_MODES.join(', ')}`);
  const full = o.recompute === 'full';
  const c = tpCollectives(m, b, full);
  const ar = tpAllReduceMs(c.activationBytes, t, device);
  const arLoss = tpAllReduceMs(c.lossBytes, t, device);
  const sbh = m.seq * b * m.hidden;
  if (m.moe && t > 1 && !tp.sequenceParallel) throw new ConfigError('sequenceParallel', tp.sequenceParallel ?? false, `must be true with tp = ${t} on a model with experts: each tensor-parallel worker routes its own 1/t of the tokens (Megatron's rule)`);
  const ep = o.ep ?? { n: 1, local: 1, overlap: false };
  const link = allToAllLink(device);
  const a2a = allToAllCounts(full);
  const inputBytes = tp.sequenceParallel ? layerInputBytes(m, b) / t : layerInputBytes(m, b);
  const selective = o.recompute === 'selective';
  const layer = (i: number) => {
    const lf = layerFlops(m, b, i);
    // The forward FLOPs a layer's backward runs again.
    const again = full ? lf.F : selective ? attentionCoreFlops(m, b) : 0;
    const held = full ? inputBytes : m.moe ? layerActivationBytes(m, b, i, selective) / t : layerActivationBytesTp(m, b, tp, selective);
    const F = ms(lf.F) + c.layerF * ar;
    const I = ms(lf.I + again) + c.layerI * ar;
    const W = ms(lf.W);
    // One dispatch (or combine) of the worker's 1/t of the routed rows, ms.
    const one = ep.n > 1 && isMoeLayer(m, i) ? allToAllTime(allToAllBytes(m, i, m.seq * b) / t, ep.n, ep.local, link) : 0;
    const x = withAllToAll({ F, I, W, B: I + W }, { F: a2a.F * one, I: a2a.I * one }, ep.overlap);
    return { name: `layer${i}`, F: x.F, I: x.I, W: x.W, B: x.B, heldBytes: held, heldBytesRecompute: held };
  };
  const hf = headFlops(m, b);
  // The final LayerNorm's input (split with sequence parallelism) and the fp32 logits of the worker's vocabulary shard.
  const headHeld = (tp.sequenceParallel ? (e * sbh) / t : e * sbh) + (4 * m.seq * b * m.vocab) / t;
  const blocks = [
    { name: 'embedding', F: c.embeddingF * ar, I: 0, W: 0, B: 0, heldBytes: sbh, heldBytesRecompute: sbh },
    ...Array.from({ length: m.layers }, (_, i) => layer(i)),
    { name: 'head', F: ms(hf.F) + c.headF * arLoss, I: ms(hf.I) + c.headI * ar, W: ms(hf.W), B: ms(hf.I + hf.W) + c.headI * ar, heldBytes: headHeld, heldBytesRecompute: headHeld },
  ];
  const tpText = t > 1 ? `, tensor-parallel t = ${t}${tp.sequenceParallel ? ' with sequence parallelism' : ''}` : '';
  return {
    version: PROFILE_VERSION,
    unit: 'ms',
    source: `analytic GPT (${count(m.layers, 'layer')}, hidden ${m.hidden}, ${count(m.heads, 'head')}, seq ${m.seq}, vocab ${m.vocab}, ${e === 2 ? 'bf16' : 'fp32'}), micro-batch ${b}${o.recompute !== 'none' ? `, ${o.recompute} recomputation` : ''}${tpText}${moeText(m, ep)} on ${device.name}`,
    blocks,
    comm: new Array<number>(blocks.length - 1).fill(0),
  };
}

/** The profile's words for the experts and their all-to-all ('' for a dense model). */
function moeText(m: TransformerModel, ep: ExpertParallel): string {
  if (!m.moe) return '';
  const x = m.moe;
  const words = `, ${x.experts} experts top-${x.topK} of width ${x.expertHidden}${x.sharedExperts ? ` + ${x.sharedExperts} shared` : ''}${x.denseLayers ? `, the first ${count(x.denseLayers, 'layer')} dense` : ''}`;
  return ep.n > 1 ? `${words}, ep = ${ep.n} (${ep.local === ep.n ? 'inside a node' : 'across nodes'}${ep.overlap ? ', all-to-all overlapped' : ''})` : words;
}

/** Parameters of each block (embedding, layers, head with its own embedding copy). */
export function blockParams(m: TransformerModel): number[] {
  return [embeddingParams(m), ...Array.from({ length: m.layers }, (_, i) => layerParams(m, i)), headParams(m, false)];
}

/** The routed experts' parameters of each block (0 but in MoE layers): the part the ep workers shard. */
export function blockExpertParams(m: TransformerModel): number[] {
  return [0, ...Array.from({ length: m.layers }, (_, i) => mlpParams(m, i).experts), 0];
}
