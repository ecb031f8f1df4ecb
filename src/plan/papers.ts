/**
 * Our numbers beside two papers' (bench/PAPERS.md is this module's table, printed by
 * scripts/papers-table.ts; src/plan/papers.test.ts holds the agreement).
 *
 * 1. Zero bubble (Qi et al., ICLR 2024, arXiv:2401.10241). ZB-1P and ZB-2P are the paper's automatically
 *    built schedules under a memory limit of p resp. 2p micro-batches' activations, steps tiling one after
 *    the other (its post-validated optimizer step). Our counterpart: `auto` (generators/auto.ts, which
 *    includes the paper's heuristic, generators/zb-heuristic.ts) with the cap { microbatches: p } resp.
 *    { microbatches: 2p } and the objective 'span' (the longest per-rank first-start-to-last-end, what the
 *    paper's scheduler minimises). The paper's bubble rate is bubble / compute, so 1F1B's is (p − 1)/m.
 *    Published: at T_F = T_B = T_W the authors' comparison (the README of sail-sg/zero-bubble-pipeline-
 *    parallelism, "Comparison of Schedules") gives 1F1B (p − 1)/m, ZB-1P (p − 1)/3m, ZB-2P 0.
 *
 * 2. Megatron-LM (Narayanan et al., SC'21, arXiv:2104.04473, §5.4.2, "pipeline versus data parallelism"):
 *    "a GPT model with 5.9 billion parameters (32 transformer layers, 32 attention heads, hidden size of 3840)",
 *    micro-batch 1, on 64 A100s with a model-parallel size as small as 2 (so no tensor parallelism: p × d = 64,
 *    p from 2 to 32), batches 32, 128, 512: for each batch, throughput falls as the pipeline-parallel size p
 *    grows (their §3.3: the bubble (p − 1)/m with m = B/(b·d) grows with p). We plan the same 64 A100s with 1F1B.
 */
import { autoSchedule, quickSpan } from '../schedule/generators/auto.ts';
import { generateSchedule, resolveCosts, type CostModel } from '../schedule/index.ts';
import { DEVICE_PRESETS, type DeviceSpec } from './device.ts';
import { makeEvaluator } from './mesh-plan.ts';
import type { TransformerModel } from './transformer.ts';
import { heldAfterInputShare, ZB_MODELS, ZB_SETTINGS, type ZeroBubbleSetting } from './zero-bubble-paper.ts';

export interface ZeroBubbleRow {
  p: number;
  m: number;
  schedule: '1F1B' | 'ZB-1P' | 'ZB-2P';
  /** The paper's closed form of the bubble rate (bubble / compute) at T_F = T_B = T_W. */
  paper: number;
  ours: number;
  /** Throughput relative to 1F1B: the paper's closed form and ours. */
  paperSpeedup: number;
  oursSpeedup: number;
}

/** Bubble rates and speed-ups over 1F1B at T_F = T_B = T_W = 1 for each (p, m). */
export function zeroBubbleRows(settings: readonly [number, number][]): ZeroBubbleRow[] {
  const rows: ZeroBubbleRow[] = [];
  for (const [p, m] of settings) {
    const costs: CostModel = { F: 1, I: 1, W: 1, B: 2, heldBytes: 1 };
    const c = resolveCosts(costs, p);
    const compute = 3 * m;
    const spans = {
      '1F1B': quickSpan(generateSchedule('1f1b', p, m, 1), c),
      'ZB-1P': quickSpan(autoSchedule(p, m, costs, { microbatches: p }, { objective: 'span' }).schedule, c),
      'ZB-2P': quickSpan(autoSchedule(p, m, costs, { microbatches: 2 * p }, { objective: 'span' }).schedule, c),
    };
    const paper = { '1F1B': (p - 1) / m, 'ZB-1P': (p - 1) / (3 * m), 'ZB-2P': 0 };
    for (const s of ['1F1B', 'ZB-1P', 'ZB-2P'] as const) {
      rows.push({ p, m, schedule: s, paper: paper[s], ours: (spans[s] - compute) / compute, paperSpeedup: (1 + paper['1F1B']) / (1 + paper[s]), oursSpeedup: spans['1F1B'] / spans[s] });
    }
  }
  return rows;
}

export type MeasuredSchedule = '1F1B' | 'ZB-H1' | 'ZB-1P' | 'ZB-2P';

export interface ZeroBubbleMeasuredRow {
  setting: ZeroBubbleSetting;
  schedule: MeasuredSchedule;
  /** Table 5's bubble rate, (cost − m(T_F + T_B + T_W)) / cost, and ours from the same T's. */
  paper: number;
  ours: number;
  /** Throughput over 1F1B: measured by the paper (Table 4; null for ZB-H1, not measured) and ours (1F1B's span / the schedule's). */
  paperSpeedup: number | null;
  oursSpeedup: number;
}

/**
 * The paper's measured settings (zero-bubble-paper.ts): per (model, p, m), costs F = T_F, I = T_B, W = T_W,
 * B = T_B + T_W, comm = T_comm on every boundary, and the authors' memory model (a micro-batch holds 1 from F,
 * heldAfterInputShare after I, 0 after W); ZB-1P and ZB-2P are `auto` under the byte caps p and 2p with the
 * objective 'span', the paper's cost being the longest per-stage execution time.
 */
export function zeroBubbleMeasuredRows(settings: readonly ZeroBubbleSetting[] = ZB_SETTINGS): ZeroBubbleMeasuredRow[] {
  const rows: ZeroBubbleMeasuredRow[] = [];
  for (const st of settings) {
    const model = ZB_MODELS.find((x) => x.name === st.model);
    if (!model) throw new Error(`zero-bubble setting: no model ${st.model}`);
    const { p, m } = st;
    const costs: CostModel = { F: st.TF, I: st.TB, W: st.TW, B: st.TB + st.TW, comm: st.Tcomm, heldBytes: 1, heldAfterInput: heldAfterInputShare(model) };
    const c = resolveCosts(costs, p);
    const spans: Record<MeasuredSchedule, number> = {
      '1F1B': quickSpan(generateSchedule('1f1b', p, m, 1), c),
      'ZB-H1': quickSpan(generateSchedule('zb-h1', p, m, 1), c),
      'ZB-1P': quickSpan(autoSchedule(p, m, costs, { bytes: p }, { objective: 'span' }).schedule, c),
      'ZB-2P': quickSpan(autoSchedule(p, m, costs, { bytes: 2 * p }, { objective: 'span' }).schedule, c),
    };
    const compute = m * (st.TF + st.TB + st.TW);
    for (const s of ['1F1B', 'ZB-H1', 'ZB-1P', 'ZB-2P'] as const) {
      const paperSpeedup = s === 'ZB-H1' ? null : st.throughput[s] / st.throughput['1F1B'];
      rows.push({ setting: st, schedule: s, paper: st.bubble[s], ours: (spans[s] - compute) / spans[s], paperSpeedup, oursSpeedup: spans['1F1B'] / spans[s] });
    }
  }
  return rows;
}

export const MEGATRON_542_MODEL: TransformerModel = { layers: 32, hidden: 3840, heads: 32, seq: 2048, vocab: 51200, bytesPerElement: 2 };
export const MEGATRON_542_DEVICE: DeviceSpec = DEVICE_PRESETS.a100;

export interface MegatronRow {
  batch: number;
  p: number;
  d: number;
  /** Sequences per second per GPU (64 GPUs), simulated. */
  perGpu: number;
  /** Compute bubble of the simulated 1F1B step, and Megatron §3.3's (p − 1)/m as a fraction of the step, (p − 1)/(m + p − 1). */
  bubble: number;
  megatronBubble: number;
  allReduceShare: number;
  fits: boolean;
}

/** The §5.4.2 grid: for each batch, p ∈ {2, 4, 8, 16, 32} on 64 A100s (d = 64 / p), 1F1B, micro-batch 1. */
export function megatronRows(batches: readonly number[] = [32, 128, 512]): MegatronRow[] {
  const rows: MegatronRow[] = [];
  const N = 64;
  for (const B of batches) {
    const { evaluate } = makeEvaluator({ model: MEGATRON_542_MODEL, device: MEGATRON_542_DEVICE, devices: N, globalBatch: B });
    for (const p of [2, 4, 8, 16, 32]) {
      const d = N / p;
      const m = B / d;
      if (!Number.isInteger(m)) continue;
      const s = evaluate({ dp: d, pp: p, b: 1, m }, '1f1b', 1, 'none');
      if (!s) continue;
      rows.push({ batch: B, p, d, perGpu: B / (s.cand.stepMs / 1e3) / N, bubble: s.cand.bubble, megatronBubble: (p - 1) / (m + p - 1), allReduceShare: s.cand.allReduceShare, fits: s.fits });
    }
  }
  return rows;
}
