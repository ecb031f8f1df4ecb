/**
 * Mixture-of-experts layers in the planner's analytic transformer (transformer.ts reads this module for the
 * layers it makes MoE; mesh-costs.ts for the experts' placement over ep workers).
 *
 * A model's `moe` (absent: the dense GPT): E routed experts, each token's top k of them, each expert a SwiGLU
 * MLP of three h × f matrices (gate, up, down: DeepSeekMoE, Mixtral, Qwen-MoE), S shared experts of the same
 * width that every token passes through, a router (an h × E matrix); the first `denseLayers` layers keep a
 * dense MLP (DeepSeek-V3's first three), the GPT's 4h GELU MLP or, with `denseHidden`, a SwiGLU of that width.
 * The capacity factor c: 0 dropless (each expert runs exactly its tokens, balanced routing assumed), c > 0 an
 * expert's buffer holds c·k·T/E rows of a micro-batch's T tokens and runs and sends them whole (GShard's
 * padding), so the rows an MoE layer routes are k·T, or c·k·T with c > 0.
 *
 * Per micro-batch of T = b·s tokens, h hidden, R routed rows, e bytes per element:
 *   FLOPs, each of F, I and W: router 2·T·h·E, routed experts 6·R·h·f, shared experts 6·T·h·f·S (balanced
 *   routing: a worker's experts run as many rows as it routes);
 *   held activations of the MLP: its input e·T·h (the router's and the shared experts' too), the dispatched
 *   rows e·R·h, each expert row's gate and up outputs and their product 3e·(R + S·T)·f, the router's fp32
 *   probabilities 4·T·E; a dense SwiGLU e·T·h + 3e·T·fd; the GPT's MLP (9e + 1)·T·h (Korthikanti's);
 *   the all-to-all: e·R·h bytes a worker sends in each dispatch and each combine, two in F, two in the
 *   backward's input half (I or B), two more there with full recomputation (its forward's again).
 * Parameters of an MoE layer's MLP: the routed experts E·3hf (sharded over the ep workers), the router h·E
 * and the shared experts S·3hf (replicated, as the attention is).
 */
import { ConfigError, requireFinite, requireInt } from '../util/errors.ts';

export interface MoeSpec {
  /** Routed experts per MoE layer (E). */
  experts: number;
  /** Experts each token is routed to (k, 1 ≤ k ≤ E). */
  topK: number;
  /** Each expert's hidden width f (its SwiGLU's three h × f matrices). */
  expertHidden: number;
  /** Shared experts every token passes through (S ≥ 0), each of width f. */
  sharedExperts: number;
  /** The first layers that keep a dense MLP (default 0). */
  denseLayers?: number;
  /** The dense layers' SwiGLU width (absent: the GPT's 4h GELU MLP). */
  denseHidden?: number;
  /** c ≥ 0: 0 dropless (default), c > 0 each expert runs c·k·T/E rows, padded. */
  capacityFactor?: number;
}

export const MOE_PLAN_LIMITS = { experts: 4096, expertHidden: 1 << 20, sharedExperts: 64, capacityFactor: 64 } as const;

/** What the MoE arithmetic reads of a transformer. */
export interface MoeModel {
  layers: number;
  hidden: number;
  seq: number;
  bytesPerElement: 2 | 4;
  moe?: MoeSpec;
}

/** Checks every MoE field; throws ConfigError naming `model.moe.<field>`, the value and the rule. */
export function checkMoe(m: MoeModel): void {
  const s = m.moe;
  if (s === undefined) return;
  if (typeof s !== 'object' || s === null) throw new ConfigError('model.moe', s, 'must be an object {experts, topK, expertHidden, sharedExperts}');
  requireInt('model.moe.experts', s.experts, 1, MOE_PLAN_LIMITS.experts);
  requireInt('model.moe.topK', s.topK, 1, Number.MAX_SAFE_INTEGER);
  if (s.topK > s.experts) throw new ConfigError('model.moe.topK', s.topK, `must be at most experts = ${s.experts} (each token picks topK different experts)`);
  requireInt('model.moe.expertHidden', s.expertHidden, 1, MOE_PLAN_LIMITS.expertHidden);
  requireInt('model.moe.sharedExperts', s.sharedExperts, 0, MOE_PLAN_LIMITS.sharedExperts);
  if (s.denseLayers !== undefined) {
    requireInt('model.moe.denseLayers', s.denseLayers, 0, Number.MAX_SAFE_INTEGER);
    if (s.denseLayers >= m.layers) throw new ConfigError('model.moe.denseLayers', s.denseLayers, `must be less than layers = ${m.layers}, so that some layer has experts`);
  }
  if (s.denseHidden !== undefined) requireInt('model.moe.denseHidden', s.denseHidden, 1, MOE_PLAN_LIMITS.expertHidden);
  if (s.capacityFactor !== undefined) {
    if (typeof s.capacityFactor !== 'number' || !Number.isFinite(s.capacityFactor) || s.capacityFactor < 0) {
      throw new ConfigError('model.moe.capacityFactor', s.capacityFactor, 'must be a number ≥ 0 (0: dropless, every routed row kept)');
    }
    requireFinite('model.moe.capacityFactor', s.capacityFactor, { max: MOE_PLAN_LIMITS.capacityFactor });
  }
}

/**
 * Checks an expert-parallel size against the model: a whole number ≥ 1; above 1 only for a model with experts,
 * and dividing them (each of the ep workers holds E/ep whole experts). Throws ConfigError naming `field`.
 */
export function checkEp(ep: unknown, m: MoeModel, field = 'ep'): number {
  const n = requireInt(field, ep, 1, 1 << 16);
  if (n === 1) return n;
  if (!m.moe) throw new ConfigError(field, n, 'needs a model with experts (model.moe): expert parallelism shards the experts, and this model has none');
  if (m.moe.experts % n !== 0) throw new ConfigError(field, n, `must divide the experts (${m.moe.experts}): each of the ep workers holds experts / ep whole experts`);
  return n;
}

/** Whether layer i (0-based) has experts. */
export function isMoeLayer(m: MoeModel, i: number): boolean {
  return m.moe !== undefined && i >= (m.moe.denseLayers ?? 0);
}

/** Layers with experts. */
export function moeLayerCount(m: MoeModel): number {
  return m.moe ? m.layers - (m.moe.denseLayers ?? 0) : 0;
}

/** The rows an MoE layer routes for `tokens` tokens: k·T dropless, c·k·T with capacity factor c > 0. */
export function routedRows(s: MoeSpec, tokens: number): number {
  const c = s.capacityFactor ?? 0;
  return (c > 0 ? c : 1) * s.topK * tokens;
}

/** FLOPs of a layer's MLP for `tokens` tokens (each of F, I and W): layer i of m (the GPT's 16·T·h², a dense SwiGLU's, or the MoE's). */
export function mlpFlops(m: MoeModel, i: number, tokens: number): number {
  const h = m.hidden;
  const s = m.moe;
  if (!s) return 16 * tokens * h * h;
  if (!isMoeLayer(m, i)) return s.denseHidden === undefined ? 16 * tokens * h * h : 6 * tokens * h * s.denseHidden;
  return 2 * tokens * h * s.experts + 6 * routedRows(s, tokens) * h * s.expertHidden + 6 * tokens * h * s.expertHidden * s.sharedExperts;
}

/** A layer's MLP parameters: { dense (replicated), experts (sharded over ep) }. */
export function mlpParams(m: MoeModel, i: number): { dense: number; experts: number } {
  const h = m.hidden;
  const s = m.moe;
  if (!s || (!isMoeLayer(m, i) && s.denseHidden === undefined)) return { dense: 8 * h * h + 5 * h, experts: 0 };
  if (!isMoeLayer(m, i)) return { dense: 3 * h * (s.denseHidden as number), experts: 0 };
  return { dense: h * s.experts + 3 * h * s.expertHidden * s.sharedExperts, experts: 3 * h * s.expertHidden * s.experts };
}

/** Bytes a layer's MLP holds for its backward for `tokens` tokens (see the header). */
export function mlpHeldBytes(m: MoeModel, i: number, tokens: number): number {
  const e = m.bytesPerElement;
  const th = tokens * m.hidden;
  const s = m.moe;
  if (!s || (!isMoeLayer(m, i) && s.denseHidden === undefined)) return (9 * e + 1) * th;
  if (!isMoeLayer(m, i)) return e * th + 3 * e * tokens * (s.denseHidden as number);
  const R = routedRows(s, tokens);
  return e * th + e * R * m.hidden + 3 * e * (R + s.sharedExperts * tokens) * s.expertHidden + 4 * tokens * s.experts;
}

/** Bytes one worker sends in one dispatch (or one combine) of a layer for `tokens` tokens: e·R·h; 0 for a dense layer. */
export function allToAllBytes(m: MoeModel, i: number, tokens: number): number {
  return m.moe && isMoeLayer(m, i) ? m.bytesPerElement * routedRows(m.moe, tokens) * m.hidden : 0;
}

/** The all-to-alls of a layer per micro-batch: 2 in F; 2 in the backward's input half, 4 with full recomputation. */
export function allToAllCounts(fullRecompute: boolean): { F: number; I: number } {
  return { F: 2, I: fullRecompute ? 4 : 2 };
}
