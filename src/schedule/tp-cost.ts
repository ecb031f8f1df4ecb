/**
 * The price of tensor parallelism's collectives inside a stage (Megatron-LM,
 * Shoeybi et al. 2019 §3; Narayanan et al. SC'21 §2.3): how many a stage runs
 * per micro-batch in each action, how big, and how long each takes on the tab's
 * transport; and the compute the split layers leave each of the t workers.
 *
 * Count and size per split layer and micro-batch of `rows` activation rows:
 * - a GPT block (width C): 2 all-reduces of rows·C elements in the forward (g,
 *   after the attention projection and after the MLP's second linear) and 2 in
 *   the backward (f, the gradients at the inputs of c_attn and c_fc): in B, or in
 *   I when the backward is split; W runs none. The paper's "two all-reduce
 *   operations in the forward pass and two in the backward pass" per layer.
 * - an MLP's hidden linear (in → out), column-parallel with gathered outputs:
 *   an all-gather of its rows·out/t output columns in the forward, an all-reduce
 *   of its rows·in input gradient in the backward (B, or I).
 * - with sequence parallelism (Korthikanti et al. 2022), a GPT block: forward, an
 *   all-gather of rows before each column-parallel linear and a reduce-scatter
 *   after each row-parallel one (4, each member posting rows·C/t to each other);
 *   backward, one all-gather of dy and both LayerNorm outputs (3·rows·C/t), a
 *   reduce-scatter, an all-gather of dx1, a reduce-scatter: 4. The embedding's
 *   backward gathers its output gradient's rows (rows·C/t); the head's forward
 *   gathers its input's. The LayerNorms' weight gradients then cover each
 *   worker's rows only: a stage sums them over the group (4C per block, one
 *   all-reduce for all its blocks) where its update policy next reads them,
 *   not per micro-batch (`gradSum`: once a step under a flush, as Megatron).
 * With recomputation the backward (B, or I) runs the forward again, its
 * collectives included.
 *
 * Time of one collective (src/runtime/comm/tp-collective.ts: one round of direct
 * exchange, each member posts its part to the t − 1 others and waits for
 * theirs): α + (t − 1) · bytes / β, bytes the part one member posts (for an
 * all-reduce the whole tensor, for an all-gather its columns), α the fixed
 * cost of a round (reading the part off the device, posting, waking), β the
 * bytes per time unit a worker sends. None of it overlaps the action's
 * compute: the layer waits for the sum before its next kernel.
 *
 * Compute: the split layers' matmul work is divided by t (each worker its
 * heads / columns); what is not split (LayerNorms, the embedding, the head,
 * the residual adds) stays whole on every worker: time · ((1 − s) + s / t) for
 * a split share s of the stage's time.
 */
import { ConfigError, requireFinite } from '../util/errors.ts';
import type { Action, Op } from './types.ts';

/** A layer tp splits, as its collectives see it. */
export type TpLayer =
  | { kind: 'gpt-block'; width: number; sequenceParallel?: boolean }
  | { kind: 'linear'; in: number; out: number }
  /** Sequence parallelism's ends: the embedding (its backward gathers rows) and the head (its forward gathers rows); not split layers. */
  | { kind: 'sp-embedding'; width: number }
  | { kind: 'sp-head'; width: number };

export type TpCollectiveKind = 'tp-all-reduce' | 'tp-all-gather' | 'tp-reduce-scatter';

/** Whether a TpLayer is one of the layers tp splits (a GPT block, a hidden linear), not sequence parallelism's ends. */
export function isSplitTpLayer(l: TpLayer): boolean {
  return l.kind === 'gpt-block' || l.kind === 'linear';
}

/** One collective: its kind and the elements of the part one member posts to each other member. */
export interface TpMessage {
  coll: TpCollectiveKind;
  elements: number;
}

/** Per op, the collectives one worker of a stage runs for one micro-batch. */
export type TpOpMessages = Record<Op, TpMessage[]>;

/** A split layer's collectives for one micro-batch of `rows` rows over t workers: forward, and backward (input half). */
export function tpLayerMessages(layer: TpLayer, rows: number, t: number): { forward: TpMessage[]; backward: TpMessage[] } {
  if (t <= 1) return { forward: [], backward: [] };
  if (layer.kind === 'sp-embedding') return { forward: [], backward: [{ coll: 'tp-all-gather', elements: (rows * layer.width) / t }] };
  if (layer.kind === 'sp-head') return { forward: [{ coll: 'tp-all-gather', elements: (rows * layer.width) / t }], backward: [] };
  if (layer.kind === 'gpt-block' && layer.sequenceParallel) {
    const rowsC = (rows * layer.width) / t;
    const ag: TpMessage = { coll: 'tp-all-gather', elements: rowsC };
    const rs: TpMessage = { coll: 'tp-reduce-scatter', elements: rowsC };
    return { forward: [ag, rs, { ...ag }, { ...rs }], backward: [{ coll: 'tp-all-gather', elements: 3 * rowsC }, { ...rs }, { ...ag }, { ...rs }] };
  }
  if (layer.kind === 'gpt-block') {
    const ar: TpMessage = { coll: 'tp-all-reduce', elements: rows * layer.width };
    return { forward: [ar, { ...ar }], backward: [{ ...ar }, { ...ar }] };
  }
  return { forward: [{ coll: 'tp-all-gather', elements: (rows * layer.out) / t }], backward: [{ coll: 'tp-all-reduce', elements: rows * layer.in }] };
}

/**
 * A stage's collectives per op for one micro-batch: F the forwards', B and I the backwards' (with
 * recomputation, each after the forward's again), W none.
 */
export function tpStageMessages(layers: readonly TpLayer[], rows: number, t: number, recompute = false): TpOpMessages {
  const F: TpMessage[] = [];
  const back: TpMessage[] = [];
  for (const l of layers) {
    const m = tpLayerMessages(l, rows, t);
    F.push(...m.forward);
    back.push(...m.backward);
  }
  const B = recompute ? [...F, ...back] : back;
  return { F, B, I: [...B], W: [] };
}

/** What Simulate at scale and `pipelab simulate --tp` know of a stage's tp collectives: abstractTpCosts' input. */
export interface AbstractTp {
  /** Workers per stage. */
  t: number;
  /** GPT blocks per stage. */
  layers: number;
  /** Bytes of the activation between layers for one micro-batch (one byte an element). */
  bytes: number;
  latency: number;
  bandwidth: number;
  sequenceParallel: boolean;
  /** gradSumActions' `every` for the LayerNorms' gradient sum (gradSumEvery; absent: once a step). */
  every?: number;
}

/**
 * The tp costs of `stages` stages of `layers` abstract GPT blocks. Plain, each block's 4 all-reduces post all of the
 * activation; with sequence parallelism each gather and scatter posts bytes / t and the backward's first gather
 * 3 · bytes / t, and each stage sums its LayerNorms' gradients where they are read. The model knows the bytes, not the
 * rows and the width apart: it reads them as `bytes` rows of width 1, so that sum (4 · width numbers a block, a few KB
 * beside the activations' MB) costs its α and 4 bytes a block.
 */
export function abstractTpCosts(a: AbstractTp, stages: number): TpCosts {
  const block: TpLayer = a.sequenceParallel ? { kind: 'gpt-block', width: 1, sequenceParallel: true } : { kind: 'gpt-block', width: a.bytes };
  const layers = Array.from({ length: a.layers }, () => block);
  const messages = tpStageMessages(layers, a.sequenceParallel ? a.bytes : 1, a.t);
  const sum = tpStageGradSum(layers, a.t);
  const per = <T>(x: T) => Array.from({ length: stages }, () => x);
  const costs: TpCosts = { t: a.t, latency: a.latency, bandwidth: a.bandwidth, bytesPerElement: 1, messages: per(messages) };
  if (sum) costs.gradSum = a.every === undefined ? { messages: per(sum) } : { messages: per(sum), every: a.every };
  return costs;
}

/**
 * The sum over the group of the gradients a stage's workers hold in part (sequence parallelism's LayerNorms: 4C
 * per GPT block), one all-reduce for the whole stage; null when it has none or t ≤ 1.
 */
export function tpStageGradSum(layers: readonly TpLayer[], t: number): TpMessage | null {
  if (t <= 1) return null;
  const elements = layers.reduce((a, l) => a + (l.kind === 'gpt-block' && l.sequenceParallel ? 4 * l.width : 0), 0);
  return elements > 0 ? { coll: 'tp-all-reduce', elements } : null;
}

/**
 * Which actions end with their stage's gradient sum (`TpCosts.gradSum`): per stage, every `every`-th action that
 * writes weight gradients (B or W) in its rank's order, or with `every` absent the last of the order (a flush's
 * step). Keys `${stage}${op}${mb}`.
 */
export function gradSumActions(order: readonly (readonly Action[])[], every?: number): Set<string> {
  const out = new Set<string>();
  for (const list of order) {
    const seen = new Map<number, number>();
    const last = new Map<number, string>();
    for (const a of list) {
      if (a.op !== 'B' && a.op !== 'W') continue;
      const key = gradSumKey(a);
      const n = (seen.get(a.stage) ?? 0) + 1;
      seen.set(a.stage, n);
      if (every === undefined) last.set(a.stage, key);
      else if (n % every === 0) out.add(key);
    }
    for (const k of last.values()) out.add(k);
  }
  return out;
}

export const gradSumKey = (a: Pick<Action, 'stage' | 'op' | 'mb'>): string => `${a.stage}${a.op}${a.mb}`;

/** One collective's time: α + (t − 1) · bytes / β; 0 with t ≤ 1. */
export function tpExchangeTime(bytes: number, t: number, latency: number, bandwidth: number): number {
  if (t <= 1) return 0;
  return latency + (bytes > 0 ? ((t - 1) * bytes) / bandwidth : 0);
}

/** Bytes one member sends for a message: (t − 1) parts of elements · bytesPerElement. */
export function tpSentBytes(m: TpMessage, t: number, bytesPerElement: number): number {
  return t <= 1 ? 0 : (t - 1) * m.elements * bytesPerElement;
}

/** A split share s of a stage's time on one of t workers: time · ((1 − s) + s / t). */
export function tpSplitCompute(time: number, splitShare: number, t: number): number {
  return time * (1 - splitShare + splitShare / Math.max(1, t));
}

/** The simulator's tp input (cost-model.ts `tp`): the group size, the α–β of one exchange, each stage's collectives. */
export interface TpCosts {
  /** Workers per stage. */
  t: number;
  /** α: fixed time of one collective (≥ 0). */
  latency: number;
  /** β: bytes per time unit one worker sends (> 0; Infinity for free links). */
  bandwidth: number;
  /** Bytes per element of the activations (4 for float32, 8 for the CPU host's float64). */
  bytesPerElement: number;
  /** Per stage, its collectives per op and micro-batch (tpStageMessages). */
  messages: readonly TpOpMessages[];
  /**
   * Per stage, the sum of the gradients its workers hold in part (tpStageGradSum; null: none), ending the actions
   * gradSumActions(order, every) picks: every `every`-th B or W of the stage, or without `every` its last of the step.
   */
  gradSum?: { messages: readonly (TpMessage | null)[]; every?: number };
}

/** The time the tp collectives add to each stage's op, per micro-batch: out[stage][op]. Checks the costs; throws ConfigError naming costs.tp.<field>. */
export function tpOpTimes(c: TpCosts, stages: number): Record<Op, Float64Array> {
  const field = 'costs.tp';
  if (typeof c !== 'object' || c === null) throw new ConfigError(field, c, 'must be an object {t, latency, bandwidth, bytesPerElement, messages}');
  if (!Number.isInteger(c.t) || c.t < 1) throw new ConfigError(`${field}.t`, c.t, 'must be a whole number ≥ 1 (workers per stage)');
  requireFinite(`${field}.latency`, c.latency, { min: 0 });
  if (typeof c.bandwidth !== 'number' || Number.isNaN(c.bandwidth) || c.bandwidth <= 0) throw new ConfigError(`${field}.bandwidth`, c.bandwidth, 'must be a number greater than 0 (bytes per time unit; Infinity for free links)');
  requireFinite(`${field}.bytesPerElement`, c.bytesPerElement, { min: 0 });
  if (!Array.isArray(c.messages) || c.messages.length !== stages) throw new ConfigError(`${field}.messages`, c.messages, `must list ${stages} stages' collectives, one per stage`);
  const out = { F: new Float64Array(stages), B: new Float64Array(stages), I: new Float64Array(stages), W: new Float64Array(stages) };
  c.messages.forEach((ops, s) => {
    for (const op of ['F', 'B', 'I', 'W'] as const) {
      for (const m of ops[op]) out[op][s] += tpExchangeTime(m.elements * c.bytesPerElement, c.t, c.latency, c.bandwidth);
    }
  });
  return out;
}

/** The time of stage `stage`'s gradient sum (TpCosts.gradSum), 0 without one. */
export function tpGradSumTime(c: TpCosts, stage: number): number {
  const m = c.gradSum?.messages[stage];
  return m ? tpExchangeTime(m.elements * c.bytesPerElement, c.t, c.latency, c.bandwidth) : 0;
}

/**
 * The closed form of GPipe and 1F1B with tp on p ranks of equal stages and m micro-batches: each F takes
 * F + τF and each B takes B + τB (τ the op's collectives, tpOpTimes), so the step is (m + p − 1)·(F + τF + B + τB)
 * and every rank spends m·(τF + τB) of it in tp collectives. With sequence parallelism each stage's gradient sum
 * τG once a step ends its last B: the ranks' last B's are the step's tail, each waiting for the one after it, so the
 * step grows by p·τG and each rank's tp time by τG.
 */
export function tpClosedForm(p: number, m: number, op: { F: number; B: number }, tau: { F: number; B: number; G?: number }): { step: number; tpPerRank: number; share: number } {
  const G = tau.G ?? 0;
  const step = (m + p - 1) * (op.F + tau.F + op.B + tau.B) + p * G;
  const tpPerRank = m * (tau.F + tau.B) + G;
  return { step, tpPerRank, share: step > 0 ? tpPerRank / step : 0 };
}
