/**
 * The MoE transformer block as model data (layers/gpt-moe-block.ts) and its counts for the memory estimates,
 * the parameter count and the FLOP-balanced cut (model-spec.ts reads these for kind 'gpt-moe-block').
 *
 * Expert rows per token: an expert buffer holds cap = capacityFactor·k·S/E rows, so the E experts compute
 * capacityFactor·k rows per token (dropless, capacityFactor = 0: every expert S rows, E per token); the counts
 * below use that, the rows the kernels compute whether a row holds a token or not.
 */
import type { InitSpec } from '../param.ts';

export interface GptMoeBlockSpec {
  readonly kind: 'gpt-moe-block';
  readonly name: string;
  /** makemore's state-dict prefix, e.g. 'transformer.h.0'. */
  readonly prefix: string;
  readonly dim: number;
  readonly heads: number;
  readonly blockSize: number;
  readonly init: InitSpec;
  readonly projInit: InitSpec;
  readonly experts: number;
  /** 1 (Switch) or 2 (GShard). */
  readonly topK: number;
  /** ≥ 0; 0: dropless. */
  readonly capacityFactor: number;
  /** α, the aux loss's weight (≥ 0). */
  readonly auxLossWeight: number;
  /** Token rows of one training step (batchSize·blockSize): a group of S rows weighs S / stepTokens. */
  readonly stepTokens: number;
}

/** Rows the experts compute per token. */
export function expertRowsPerToken(l: GptMoeBlockSpec): number {
  return l.capacityFactor === 0 ? l.experts : Math.min(l.experts, l.capacityFactor * l.topK);
}

/**
 * The stash per sequence, as the forward keeps it (gpt-moe-block.ts): per token x, ln_1's output, qkv, the attention
 * output, x1 and ln_2's output (8C), four LayerNorm statistics, the router's probabilities and the aux loss's
 * gradient (2E), sel, slot and gates (3k), and per expert row its rowToken entry, xe, h, g and ye (1 + 10C); the
 * attention probabilities H·T² a sequence. An estimate where ⌈capacity⌉ rounds up (a few rows more) and without the
 * aux loss's one number a micro-batch.
 */
export function moeActivationsPerRow(l: GptMoeBlockSpec): number {
  const C = l.dim, T = l.blockSize;
  return T * (8 * C + 4 + 2 * l.experts + 3 * l.topK + expertRowsPerToken(l) * (1 + 10 * C)) + l.heads * T * T;
}

/**
 * What backwardWeight reads per sequence: the attention half's inputs and gradients (x, ln_1's output, o, x1, the
 * gradients at ln_2's output, at x1 and at ln_1's output: 7C; dqkv 3C; four statistics) and the MoE's (u: C, the
 * router's logits gradient: E, per expert row xe, g, dye, dh: 10C).
 */
export function moeKeptAfterInputPerRow(l: GptMoeBlockSpec): number {
  const C = l.dim;
  return l.blockSize * (11 * C + 4 + l.experts + expertRowsPerToken(l) * 10 * C);
}

export function moeLargestActivationPerRow(l: GptMoeBlockSpec): number {
  return Math.max(4 * l.blockSize * l.dim * expertRowsPerToken(l), l.heads * l.blockSize * l.blockSize);
}

/** ln_1, c_attn, c_proj, ln_2 as a gpt-block's; the router E·C; the experts 8C² each (no biases). */
export function moeParamCount(l: GptMoeBlockSpec): number {
  const C = l.dim;
  return 4 * C * C + 4 * C + 4 * C + l.experts * C + l.experts * 8 * C * C;
}

/** Forward FLOPs per sequence: attention as a gpt-block's; the router, its softmax, and the experts' rows. */
export function moeFlopsPerRow(l: GptMoeBlockSpec): number {
  const T = l.blockSize, C = l.dim;
  const pairs = (T * (T + 1)) / 2;
  const attention = 2 * T * C * 4 * C + 2 * 2 * pairs * C + 5 * l.heads * pairs + T * (2 * 8 * C + 3 * C + C);
  const router = T * (2 * C * l.experts + 5 * l.experts);
  const experts = T * expertRowsPerToken(l) * (2 * 8 * C * C + 8 * 4 * C) + T * 2 * l.topK * C;
  return attention + router + experts;
}
