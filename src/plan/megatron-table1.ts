/**
 * Megatron SC'21 Table 1 (Narayanan et al., "Efficient Large-Scale Language
 * Model Training on GPU Clusters Using Megatron-LM", arXiv:2104.04473): GPT
 * models from 1.7B to 1T parameters trained with tensor (t), pipeline (p) and
 * data parallelism on A100s ("Selene": 8 A100 80 GB per node, NVLink/NVSwitch
 * inside, 8 HDR InfiniBand NICs per node), sequence length 2048, vocabulary
 * 51,200, mixed precision, activation recomputation, and the achieved
 * teraFLOP/s per GPU "derived from Eq. (3)": F = 96·B·s·l·h²·(1 + s/6h +
 * V/16lh) per step, which counts the recomputed forward (A100 peak: 312).
 *
 * Our prediction for a row takes the table's t, p, d and batch, and the
 * planner's analytic model (transformer.ts, tensor-parallel.ts, mesh-costs.ts)
 * on the a100 preset, with recomputation as the paper ran it; it picks the
 * fastest micro-batch size (1, 2, 4, 8 sequences) and schedule (1F1B, or
 * interleaved 1F1B with 2 chunks per rank) that fits 80 GB, since the table
 * does not give them. One constant is calibrated: the matmuls' efficiency, on
 * one row (calibrateEfficiency); every other row is held out.
 */
import { DEVICE_PRESETS, type DeviceSpec } from './device.ts';
import { MESH_PLAN_LIMITS, makeEvaluator, type MeshCandidate, type ZeroChoice } from './mesh-plan.ts';
import type { Recompute, TransformerModel } from './transformer.ts';

export interface Table1Row {
  /** Parameters, billions, as the table prints them. */
  billions: number;
  heads: number;
  hidden: number;
  layers: number;
  t: number;
  p: number;
  gpus: number;
  batch: number;
  /** Achieved teraFLOP/s per GPU. */
  tflops: number;
}

/** The table's ten rows, as published (a copy read beside the paper: SotaroKaneda/MLCarbon data/megatron_table.csv). */
export const MEGATRON_TABLE1: readonly Table1Row[] = [
  { billions: 1.7, heads: 24, hidden: 2304, layers: 24, t: 1, p: 1, gpus: 32, batch: 512, tflops: 137 },
  { billions: 3.6, heads: 32, hidden: 3072, layers: 30, t: 2, p: 1, gpus: 64, batch: 512, tflops: 138 },
  { billions: 7.5, heads: 32, hidden: 4096, layers: 36, t: 4, p: 1, gpus: 128, batch: 512, tflops: 142 },
  { billions: 18.4, heads: 48, hidden: 6144, layers: 40, t: 8, p: 1, gpus: 256, batch: 1024, tflops: 135 },
  { billions: 39.1, heads: 64, hidden: 8192, layers: 48, t: 8, p: 2, gpus: 512, batch: 1536, tflops: 138 },
  { billions: 76.1, heads: 80, hidden: 10240, layers: 60, t: 8, p: 4, gpus: 1024, batch: 1792, tflops: 140 },
  { billions: 145.6, heads: 96, hidden: 12288, layers: 80, t: 8, p: 8, gpus: 1536, batch: 2304, tflops: 148 },
  { billions: 310.1, heads: 128, hidden: 16384, layers: 96, t: 8, p: 16, gpus: 1920, batch: 2160, tflops: 155 },
  { billions: 529.6, heads: 128, hidden: 20480, layers: 105, t: 8, p: 35, gpus: 2520, batch: 2520, tflops: 163 },
  { billions: 1008, heads: 160, hidden: 25600, layers: 128, t: 8, p: 64, gpus: 3072, batch: 3072, tflops: 163 },
];

/** Actions simulated per candidate here: four times the page's planner's bound, so the 1T row's 512 micro-batches interleave. */
const TABLE1_ACTIONS = 4 * MESH_PLAN_LIMITS.actions;

/** The row the efficiency is calibrated on: GPT-3's size class, 145.6B on 1,536 GPUs (148 teraFLOP/s, 47% of peak). */
export const TABLE1_CALIBRATION_ROW = 6;

export function table1Model(r: Table1Row): TransformerModel {
  return { layers: r.layers, hidden: r.hidden, heads: r.heads, seq: 2048, vocab: 51200, bytesPerElement: 2 };
}

/** Megatron's eq. 3: FLOPs of one step of `batch` sequences with recomputation (the table's convention). */
export function eq3Flops(m: TransformerModel, batch: number): number {
  const { seq: s, layers: l, hidden: h, vocab: V } = m;
  return 96 * batch * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

export interface Table1Prediction {
  row: Table1Row;
  /** Predicted teraFLOP/s per GPU (eq. 3 FLOPs over the predicted step time and the row's GPUs). */
  tflops: number;
  /** (predicted − published) / published. */
  error: number;
  best: MeshCandidate;
}

/** A fixed layout of a published run: t, p, GPUs (d = GPUs / (t·p)) and the global batch. */
export interface FixedLayout {
  t: number;
  p: number;
  gpus: number;
  batch: number;
}

/**
 * The fastest candidate on a fixed layout that fits the device, with the run's recomputation: the
 * micro-batch size (1, 2, 4, 8 sequences) and schedule (1F1B, or interleaved 1F1B with `virtuals` chunks per
 * rank where the layers allow), which papers seldom give, and the least ZeRO stage of `o.zero` that fits
 * (default: the least that fits); null when none fits.
 */
export function bestOnLayout(
  model: TransformerModel,
  device: DeviceSpec,
  l: FixedLayout,
  recompute: Recompute,
  o: { sequenceParallel?: boolean; zero?: ZeroChoice; virtuals?: readonly number[] } = {},
): MeshCandidate | null {
  const d = l.gpus / (l.t * l.p);
  const perReplica = l.batch / d;
  const { evaluate } = makeEvaluator({ model, device, devices: l.gpus, globalBatch: l.batch, tp: l.t, sequenceParallel: o.sequenceParallel, zero: o.zero }, { unfit: 'skip' });
  let best: MeshCandidate | null = null;
  for (const b of [1, 2, 4, 8]) {
    if (perReplica % b !== 0) continue;
    const m = perReplica / b;
    const options: [('1f1b' | 'interleaved-1f1b'), number][] = [['1f1b', 1]];
    for (const v of o.virtuals ?? [2, 4]) if (l.p > 1 && v * l.p <= model.layers + 2 && v * l.p * m * 3 <= TABLE1_ACTIONS) options.push(['interleaved-1f1b', v]);
    for (const [name, v] of options) {
      const s = evaluate({ dp: d, pp: l.p, tp: l.t, b, m }, name, v, recompute);
      if (s?.fits && (!best || s.cand.stepMs < best.stepMs)) best = s.cand;
    }
  }
  return best;
}

/** The row's prediction with the table's t, p, d and batch at the given matmul efficiency. */
export function predictTable1Row(r: Table1Row, efficiency: number): Table1Prediction {
  const model = table1Model(r);
  const best = bestOnLayout(model, { ...DEVICE_PRESETS.a100, efficiency }, r, 'full');
  if (!best) throw new Error(`no layout of the ${r.billions}B row fits 80 GB`);
  const tflops = eq3Flops(model, r.batch) / (best.stepMs / 1e3) / r.gpus / 1e12;
  return { row: r, tflops, error: (tflops - r.tflops) / r.tflops, best };
}

/** The matmul efficiency at which row `index` is predicted at its published figure (bisection; prediction grows with it). */
export function calibrateEfficiency(index = TABLE1_CALIBRATION_ROW): number {
  const r = MEGATRON_TABLE1[index];
  let lo = 0.05;
  let hi = 1;
  for (let i = 0; i < 40; i++) {
    const mid = (lo + hi) / 2;
    if (predictTable1Row(r, mid).tflops < r.tflops) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}
