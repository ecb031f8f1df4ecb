/**
 * Megatron's tensor parallelism in the planner's analytic transformer
 * (Shoeybi et al. 2019; Narayanan et al., SC'21, arXiv:2104.04473, §2.3 and
 * §3.2; Korthikanti et al. 2022, arXiv:2205.05198). t workers share each
 * layer: the attention's heads and the MLP's columns are split t ways (QKV and
 * the MLP's first linear column-parallel, the attention projection and the
 * MLP's second linear row-parallel), so each worker runs 1/t of the layer's
 * matmul FLOPs and holds 1/t of its weights. The embedding and the head are
 * vocabulary-parallel (each worker its V/t rows), as Megatron keeps them.
 *
 * Communication inside a stage, per micro-batch of b sequences of s tokens,
 * hidden h, e bytes per element (the paper: "two all-reduce operations in the
 * forward pass and two in the backward pass" per layer, each of b·s·h
 * elements):
 *   layer F: 2 all-reduces (after the attention projection and after the MLP);
 *   layer I: 2 all-reduces (the f operators' backward before QKV and the MLP);
 *     with full recomputation the re-run forward adds its 2 (selective
 *     recomputation re-runs only the attention's core, each worker its own
 *     heads, with none);
 *   embedding F: 1 all-reduce (the vocabulary-parallel lookup's partial sums);
 *   head I: 1 all-reduce (the input gradient of the vocabulary-parallel logits);
 *     head F: 3 all-reduces of b·s fp32 values (the cross-entropy's max, sum
 *     and target logit across the vocabulary shards).
 * With sequence parallelism (Korthikanti et al. §4.2.2) each all-reduce becomes
 * a reduce-scatter and an all-gather of the same total volume, so the time is
 * the same and the LayerNorm and dropout activations are split t ways too.
 * An all-reduce runs on the node's links (the t workers of a stage share a
 * node): a ring, 2(t − 1)·α + 2(t − 1)/t · bytes/β (schedule/allreduce-cost.ts);
 * it is not overlapped with compute, as in Megatron.
 *
 * Held activations per layer (Korthikanti et al., Table 2, at 16-bit: sbh·(10 +
 * 24/t + 5as/(ht)), and sbh·(34 + 5as/h)/t with sequence parallelism); at e
 * bytes per element the replicated part is (4e + 2)·sbh (two LayerNorm inputs,
 * the QKV and MLP inputs, two dropout masks), the split part 12e·sbh/t +
 * (2e + 1)·as²b/t.
 */
import { ringAllReduceTime } from '../schedule/allreduce-cost.ts';
import { ConfigError, requireInt } from '../util/errors.ts';
import type { DeviceSpec } from './device.ts';

/** What the tensor-parallel arithmetic reads of a transformer (transformer.ts's TpModel has it). */
export interface TpModel {
  heads: number;
  hidden: number;
  seq: number;
  bytesPerElement: 2 | 4;
}

export interface TensorParallel {
  /** Workers sharing each layer (1: none). */
  t: number;
  /** Sequence parallelism: LayerNorm and dropout activations split t ways (all-gather / reduce-scatter for the all-reduces). */
  sequenceParallel?: boolean;
}

export const NO_TP: TensorParallel = { t: 1 };

/** Checks t: a whole number ≥ 1 dividing the heads, at most the devices of a node and dividing them (a stage's t workers share a node). */
export function checkTensorParallel(tp: TensorParallel, m: TpModel, device: DeviceSpec, field = 'tp'): TensorParallel {
  const t = requireInt(field, tp.t, 1, 1 << 16);
  if (m.heads % t !== 0) throw new ConfigError(field, t, `must divide the attention heads (${m.heads}): each tensor-parallel worker takes whole heads`);
  if (t > device.devicesPerNode) throw new ConfigError(field, t, `must be at most the devices of a node (${device.devicesPerNode}): a layer's all-reduces run on the node's links`);
  if (device.devicesPerNode % t !== 0) throw new ConfigError(field, t, `must divide the devices of a node (${device.devicesPerNode}), so no stage's workers straddle two nodes`);
  if (tp.sequenceParallel !== undefined && typeof tp.sequenceParallel !== 'boolean') throw new ConfigError('sequenceParallel', tp.sequenceParallel, 'must be true or false');
  return tp;
}

/** The tensor-parallel sizes the planner tries: divisors of the heads that divide a node. */
export function tpCandidates(m: TpModel, device: DeviceSpec): number[] {
  const out: number[] = [];
  for (let t = 1; t <= device.devicesPerNode; t++) if (m.heads % t === 0 && device.devicesPerNode % t === 0) out.push(t);
  return out;
}

/** One all-reduce of `bytes` among a stage's t workers on the node's links, ms. */
export function tpAllReduceMs(bytes: number, t: number, device: DeviceSpec): number {
  return ringAllReduceTime(bytes, t, device.latIntraUs / 1e3, device.bwIntraGBps * 1e6);
}

/** The all-reduces of one micro-batch per block kind and op, with their bytes (what the tests and the docs count); `recompute`: full recomputation. */
export function tpCollectives(m: TpModel, b: number, recompute: boolean): { layerF: number; layerI: number; embeddingF: number; headF: number; headI: number; activationBytes: number; lossBytes: number } {
  return {
    layerF: 2,
    layerI: recompute ? 4 : 2,
    embeddingF: 1,
    headF: 3,
    headI: 1,
    activationBytes: m.bytesPerElement * m.seq * b * m.hidden,
    lossBytes: 4 * m.seq * b,
  };
}

/**
 * Korthikanti et al.'s activation bytes one layer holds on each of its t workers for b sequences, without
 * recomputation, or with selective recomputation (`selective`: the attention's core, its scores, softmax,
 * dropout mask and attention over the values, the (2e + 1)·as²b/t, is recomputed, not kept: their Table 2's
 * sbh(10 + 24/t), and 34·sbh/t with sequence parallelism).
 */
export function layerActivationBytesTp(m: TpModel, b: number, tp: TensorParallel, selective = false): number {
  const e = m.bytesPerElement;
  const sbh = m.seq * b * m.hidden;
  const as2b = selective ? 0 : m.heads * m.seq * m.seq * b;
  const split = (12 * e * sbh + (2 * e + 1) * as2b) / tp.t;
  const replicated = (4 * e + 2) * sbh;
  return tp.sequenceParallel ? split + replicated / tp.t : split + replicated;
}
