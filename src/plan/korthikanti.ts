/**
 * Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
 * Models" (MLSys 2023, arXiv:2205.05198): sequence parallelism and selective
 * activation recomputation. Its abstract's three claims, set beside the
 * planner's analytic model (transformer.ts, tensor-parallel.ts):
 *   - activation memory reduced "by 5x": a layer's bytes with tensor
 *     parallelism alone, sbh(10 + 24/t + 5as/(ht)), against 34·sbh/t with
 *     sequence parallelism and selective recomputation (their Table 2);
 *   - the "execution time overhead from activation recomputation" reduced "by
 *     over 90%": the step's time over no recomputation, selective against full;
 *   - "a 530B parameter GPT-3 style model on 2240 NVIDIA A100 GPUs ... Model
 *     Flops Utilization of 54.2%, which is 29% faster than the 42.1% we achieve
 *     using recomputation".
 * The 530B model is Megatron's Table 1 row (105 layers, hidden 20480, 128
 * heads, s = 2048, V = 51200) on its t = 8, p = 35 (the MT-NLG layout; d = 8 on
 * 2,240 GPUs). The abstract gives no batch: we take 2,240 sequences (280 per
 * replica; the ratio moves by under 1% from 1,920 to 2,520). The efficiency is
 * the one calibrated on Megatron's Table 1 (megatron-table1.ts), nothing is
 * fitted here; Megatron ran no ZeRO, so neither do we (zero: 0).
 */
import { DEVICE_PRESETS, type DeviceSpec } from './device.ts';
import { bestOnLayout, MEGATRON_TABLE1, table1Model, type FixedLayout } from './megatron-table1.ts';
import { makeEvaluator, type MeshCandidate } from './mesh-plan.ts';
import { layerActivationBytesTp } from './tensor-parallel.ts';
import type { Recompute } from './transformer.ts';

/** The abstract's figures. */
export const KORTHIKANTI_ABSTRACT = { memoryReduction: 5, overheadCut: 0.9, mfuSelective: 0.542, mfuFull: 0.421 } as const;

/** The 530B run: Megatron Table 1's 529.6B model on t = 8, p = 35, 2,240 GPUs. */
export const KORTHIKANTI_530B = { model: table1Model(MEGATRON_TABLE1[8]), layout: { t: 8, p: 35, gpus: 2240, batch: 2240 } satisfies FixedLayout } as const;

export interface KorthikantiCheck {
  /** Tensor parallelism with full recomputation (the paper's baseline), and with sequence parallelism and selective recomputation. */
  full: MeshCandidate;
  selective: MeshCandidate;
  /** Without recomputation (sequence parallelism on), on the selective pick's micro-batch and schedule: its step. */
  noneStepMs: number;
  /** Whether any micro-batch and schedule fits 80 GB without recomputation (sequence parallelism on). */
  noneFits: boolean;
  /** The full-recomputation step on the selective pick's micro-batch and schedule. */
  fullSameStepMs: number;
  /** Full's step over selective's (the abstract: 54.2 / 42.1 = 1.287). */
  speedup: number;
  /** 1 − (selective's step − none's) / (full's − none's), on one micro-batch and schedule. */
  overheadCut: number;
  /** A layer's bytes with tensor parallelism alone over those with sequence parallelism and selective recomputation (micro-batch 1). */
  memoryReduction: number;
}

/** The 530B run predicted at the given matmul efficiency (megatron-table1.ts's calibrateEfficiency). */
export function checkKorthikanti530B(efficiency: number): KorthikantiCheck {
  const { model, layout } = KORTHIKANTI_530B;
  const device: DeviceSpec = { ...DEVICE_PRESETS.a100, efficiency };
  // 105 layers and 2 blocks on 35 ranks: 2 or 3 chunks per rank interleave.
  const virtuals = [2, 3];
  const full = bestOnLayout(model, device, layout, 'full', { zero: 0, virtuals });
  const selective = bestOnLayout(model, device, layout, 'selective', { zero: 0, sequenceParallel: true, virtuals });
  if (!full || !selective) throw new Error('the 530B run fits 80 GB neither with full nor with selective recomputation');
  // The selective pick's micro-batch and schedule, priced without recomputation and with full.
  const { evaluate } = makeEvaluator({ model, device, devices: layout.gpus, globalBatch: layout.batch, tp: layout.t, sequenceParallel: true, zero: 0 });
  const stepAt = (recompute: Recompute) => {
    const s = evaluate({ dp: selective.dp, pp: selective.pp, tp: selective.tp, b: selective.microBatch, m: selective.microbatches }, selective.schedule, selective.virtual, recompute);
    if (!s) throw new Error(`${selective.schedule} v=${selective.virtual} was not planned`);
    return s.cand.stepMs;
  };
  const noneStep = stepAt('none');
  const fullSame = stepAt('full');
  return {
    full,
    selective,
    noneStepMs: noneStep,
    noneFits: bestOnLayout(model, device, layout, 'none', { zero: 0, sequenceParallel: true, virtuals }) !== null,
    fullSameStepMs: fullSame,
    speedup: full.stepMs / selective.stepMs,
    overheadCut: 1 - (selective.stepMs - noneStep) / (fullSame - noneStep),
    memoryReduction: layerActivationBytesTp(model, 1, { t: layout.t }) / layerActivationBytesTp(model, 1, { t: layout.t, sequenceParallel: true }, true),
  };
}
