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
 * Training state per parameter (Adam): 2 + 2 + 12 = 16 bytes in mixed
 * precision (bf16 weights and gradients, fp32 master weights, m and v); 4 + 4
 * + 8 = 16 in fp32. ZeRO divides it by dp stage by stage (zero.ts, the ZeRO
 * paper's §5): stage 1 the optimizer's share (12, resp. 8), stage 2 the
 * gradients' too, stage 3 the weights' too.
 */
import { ConfigError, requireInt } from '../util/errors.ts';
import { count } from '../util/count.ts';
import { computeSeconds, type DeviceSpec } from './device.ts';
import { PROFILE_VERSION, type Profile } from './profile.ts';
import { modelStateBytesPerParam, type ZeroStage } from './zero.ts';
import { layerActivationBytesTp, NO_TP, tpAllReduceMs, tpCollectives, type TensorParallel } from './tensor-parallel.ts';

export interface TransformerModel {
  layers: number;
  hidden: number;
  heads: number;
  /** Sequence length s. */
  seq: number;
  vocab: number;
  /** Bytes per element of weights, gradients and activations: 2 (bf16 mixed precision) or 4 (fp32). */
  bytesPerElement: 2 | 4;
}

export const TRANSFORMER_LIMITS = { layers: 4096, hidden: 1 << 20, heads: 1 << 16, seq: 1 << 22, vocab: 1 << 24 } as const;

/** Checks every field; throws ConfigError naming `model.<field>`, the value and the rule. */
export function checkTransformer(m: TransformerModel): TransformerModel {
  for (const k of ['layers', 'hidden', 'heads', 'seq', 'vocab'] as const) requireInt(`model.${k}`, m[k], 1, TRANSFORMER_LIMITS[k]);
  if (m.hidden % m.heads !== 0) throw new ConfigError('model.heads', m.heads, `must divide hidden = ${m.hidden} evenly (each head takes hidden / heads columns)`);
  if (m.bytesPerElement !== 2 && m.bytesPerElement !== 4) throw new ConfigError('model.bytesPerElement', m.bytesPerElement, 'must be 2 (bf16 mixed precision) or 4 (fp32)');
  return m;
}

export interface OpFlops {
  F: number;
  I: number;
  W: number;
}

/** FLOPs of one transformer layer for a micro-batch of b sequences (no recomputation). */
export function layerFlops(m: TransformerModel, b: number): OpFlops {
  const { seq: s, hidden: h } = m;
  const dense = 24 * b * s * h * h;
  const attn = attentionCoreFlops(m, b);
  return { F: dense + attn, I: dense + 2 * attn, W: dense };
}

/** FLOPs of the head (logits) for b sequences. */
export function headFlops(m: TransformerModel, b: number): OpFlops {
  const x = 2 * b * m.seq * m.hidden * m.vocab;
  return { F: x, I: x, W: x };
}

export function layerParams(m: TransformerModel): number {
  return 12 * m.hidden * m.hidden + 13 * m.hidden;
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
  return m.layers * layerParams(m) + embeddingParams(m) + headParams(m, true);
}

/** Korthikanti et al.'s activation bytes one layer holds for b sequences without recomputation. */
export function layerActivationBytes(m: TransformerModel, b: number): number {
  const e = m.bytesPerElement;
  const sbh = m.seq * b * m.hidden;
  const as2b = m.heads * m.seq * m.seq * b;
  return sbh * (16 * e + 2) + as2b * (2 * e + 1);
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
  return 3 * (m.layers * layerFlops(m, sequences).F + headFlops(m, sequences).F);
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
  return 4 * b * m.seq * m.seq * m.hidden;
}

export interface ProfileOptions {
  /** Sequences per micro-batch (b). */
  microBatch: number;
  /** What every layer recomputes in its backward (Recompute). */
  recompute: Recompute;
  /** Tensor parallelism (tensor-parallel.ts): each block's FLOPs, weights and most activations split t ways, its all-reduces added to its times. */
  tp?: TensorParallel;
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
  const lf = layerFlops(m, b);
  const inputBytes = tp.sequenceParallel ? layerInputBytes(m, b) / t : layerInputBytes(m, b);
  const layerHeld = full ? inputBytes : layerActivationBytesTp(m, b, tp, o.recompute === 'selective');
  // The forward FLOPs a layer's backward runs again.
  const again = full ? lf.F : o.recompute === 'selective' ? attentionCoreFlops(m, b) : 0;
  const layer = (i: number) => ({
    name: `layer${i}`,
    F: ms(lf.F) + c.layerF * ar,
    I: ms(lf.I + again) + c.layerI * ar,
    W: ms(lf.W),
    B: ms(lf.I + lf.W + again) + c.layerI * ar,
    heldBytes: layerHeld,
    heldBytesRecompute: layerHeld,
  });
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
    source: `analytic GPT (${count(m.layers, 'layer')}, hidden ${m.hidden}, ${count(m.heads, 'head')}, seq ${m.seq}, vocab ${m.vocab}, ${e === 2 ? 'bf16' : 'fp32'}), micro-batch ${b}${o.recompute !== 'none' ? `, ${o.recompute} recomputation` : ''}${tpText} on ${device.name}`,
    blocks,
    comm: new Array<number>(blocks.length - 1).fill(0),
  };
}

/** Parameters of each block (embedding, layers, head with its own embedding copy). */
export function blockParams(m: TransformerModel): number[] {
  return [embeddingParams(m), ...new Array<number>(m.layers).fill(layerParams(m)), headParams(m, false)];
}
