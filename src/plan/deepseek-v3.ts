/**
 * DeepSeek-V3's published training step beside the planner's (bench/PAPERS.md states every assumption;
 * src/plan/papers.test.ts holds the agreement).
 *
 * Published: "Insights into DeepSeek-V3" (Zhao et al., ISCA '25, arXiv:2505.09343), Table 4, on 2048 H800s:
 * 19.9 s a step, a 2.06 s bubble, MFU 38.9% (causal attention counted) to 43.7% (non-causal), at the layout of
 * the DeepSeek-V3 technical report (arXiv:2412.19437 §3.2, §4.2): pipeline parallelism 16 with DualPipe,
 * expert parallelism 64 over 8 nodes, ZeRO-1 data parallelism, no tensor parallelism, 15360 sequences of 4096
 * tokens a step. (The figures of Table 4 are the issue's; no stored copy of the table was found to read
 * them off. The layout, the batch and the model are the technical report's.)
 *
 * The model (the report's §2 and its published config): 61 layers, hidden 7168, 128 heads, vocabulary 129280;
 * the first 3 layers dense (a SwiGLU of width 18432), the other 58 with 256 routed experts of width 2048, top-8,
 * and 1 shared expert; MLA attention, given to the analytic model by its parameter count (the q down/up, kv
 * down/up and output projections and their norms: 187,107,328 a layer) and its core's width (128 heads ×
 * (192 query-key + 128 value dims) / 2 = 20480). Left out: the multi-token-prediction module (one more MoE
 * layer and a second pass of the head on the last stage), FP8 matmuls (priced at the bf16 peak), the
 * node-limited routing (a token's rows reach at most 4 nodes, each sent once per node: ours sends every row)
 * and FP8 dispatch (ours sends bf16 both ways).
 */
import type { DeviceSpec } from './device.ts';
import { makeEvaluator, type MeshCandidate } from './mesh-plan.ts';
import { attentionCoreFlops, modelFlopsPerStep, type Recompute, type TransformerModel } from './transformer.ts';

export const DEEPSEEK_V3_MODEL: TransformerModel = {
  layers: 61,
  hidden: 7168,
  heads: 128,
  seq: 4096,
  vocab: 129280,
  bytesPerElement: 2,
  attentionParams: 187_107_328,
  attentionCoreWidth: 20480,
  moe: { experts: 256, topK: 8, expertHidden: 2048, sharedExperts: 1, denseLayers: 3, denseHidden: 18432 },
};

/**
 * H800 SXM: the H100's dense bf16 peak (989.4 TFLOP/s) and 80 GB; the links as the technical report gives them
 * (§3.2.2: NVLink 160 GB/s, InfiniBand 50 GB/s per GPU); the efficiency 0.5 and the latencies are the device
 * presets' assumptions (device.ts), not fitted to this step.
 */
export const H800: DeviceSpec = { name: 'h800', peakTflops: 989.4, peakTflopsFp32: 494.7, efficiency: 0.5, memoryGB: 80, devicesPerNode: 8, bwIntraGBps: 160, bwInterGBps: 50, latIntraUs: 5, latInterUs: 10 };

/** The published layout: 2048 GPUs = dp 128 × pp 16 (ep 64 of the 128), 15360 sequences, one a micro-batch. */
export const DEEPSEEK_V3_LAYOUT = { devices: 2048, dp: 128, pp: 16, tp: 1, ep: 64, globalBatch: 15360, microBatch: 1 } as const;

/** The published figures (ISCA '25 Table 4 as the issue gives them): seconds, and the MFU range. */
export const DEEPSEEK_V3_PUBLISHED = { stepS: 19.9, bubbleS: 2.06, mfuCausal: 0.389, mfuNonCausal: 0.437 } as const;

export interface DeepSeekRow {
  recompute: Recompute;
  cand: MeshCandidate;
  fits: boolean;
  stepS: number;
  /** The simulated bubble in seconds: the bubble fraction of the compute makespan. */
  bubbleS: number;
  /** MFU with the attention core counted whole (the planner's) and halved (causal). */
  mfuNonCausal: number;
  mfuCausal: number;
}

/** The planner's price of the published layout (DualPipe, ZeRO-1) with each layer recomputing `recompute`. */
export function deepseekV3Row(recompute: Recompute): DeepSeekRow {
  const L = DEEPSEEK_V3_LAYOUT;
  const { evaluate } = makeEvaluator({ model: DEEPSEEK_V3_MODEL, device: H800, devices: L.devices, globalBatch: L.globalBatch, zero: 1, ep: L.ep });
  const m = L.globalBatch / L.dp / L.microBatch;
  const s = evaluate({ dp: L.dp, pp: L.pp, tp: L.tp, ep: L.ep, b: L.microBatch, m, zero: 1 }, 'dualpipe', 1, recompute);
  if (!s) throw new Error('DeepSeek-V3: DualPipe refused the published layout');
  const stepS = s.cand.stepMs / 1e3;
  const peak = L.devices * H800.peakTflops * 1e12;
  const flops = modelFlopsPerStep(DEEPSEEK_V3_MODEL, L.globalBatch);
  // Causal attention does half the core's work: 3 passes × layers × half the core's forward FLOPs less.
  const causal = flops - 1.5 * DEEPSEEK_V3_MODEL.layers * attentionCoreFlops(DEEPSEEK_V3_MODEL, L.globalBatch);
  return { recompute, cand: s.cand, fits: s.fits, stepS, bubbleS: (s.cand.bubble * s.cand.computeMs) / 1e3, mfuNonCausal: flops / (stepS * peak), mfuCausal: causal / (stepS * peak) };
}
