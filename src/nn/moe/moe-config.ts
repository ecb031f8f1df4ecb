/**
 * The mixture-of-experts fields of a model configuration (all optional; absent or experts = 0: the dense GPT):
 *
 * - experts E: experts per MoE MLP, 0 (dense) to MOE_LIMITS.experts;
 * - topK: 1 (Switch: y = p·E(x), not renormalised) or 2 (GShard: gates over the two's sum), at most E;
 * - capacityFactor ≥ 0: an expert's buffer holds capacityFactor·k·S/E rows of a group of S tokens (rounded up),
 *   a choice past it is dropped (the token keeps its residual); 0: dropless;
 * - moeEvery: 1 every block's MLP is an MoE, 2 every other block's (blocks 1, 3, …, as GShard);
 * - auxLossWeight α ≥ 0: the load-balancing loss's weight.
 *
 * The group a router's capacity counts over is one micro-batch's tokens (B·T rows) on one worker.
 */
import { ConfigError, requireFinite, requireInt } from '../../util/errors.ts';
import { MAX_TOP_K } from './moe-shapes.ts';

export interface MoeFields {
  experts?: number;
  topK?: number;
  capacityFactor?: number;
  moeEvery?: number;
  auxLossWeight?: number;
}

export interface MoeSettings {
  experts: number;
  topK: number;
  capacityFactor: number;
  moeEvery: number;
  auxLossWeight: number;
}

export const MOE_LIMITS = { experts: 64, capacityFactor: 64, auxLossWeight: 100 } as const;
/** What an MoE model takes where a field is absent (Switch's capacity factor 1.25 and α = 0.01). */
export const MOE_DEFAULTS = { topK: 1, capacityFactor: 1.25, moeEvery: 1, auxLossWeight: 0.01 } as const;

/** The MoE settings of a configuration, or null for a dense model (experts absent or 0). */
export function moeOf(cfg: MoeFields): MoeSettings | null {
  if (!cfg.experts) return null;
  return {
    experts: cfg.experts,
    topK: cfg.topK ?? MOE_DEFAULTS.topK,
    capacityFactor: cfg.capacityFactor ?? MOE_DEFAULTS.capacityFactor,
    moeEvery: cfg.moeEvery ?? MOE_DEFAULTS.moeEvery,
    auxLossWeight: cfg.auxLossWeight ?? MOE_DEFAULTS.auxLossWeight,
  };
}

/** Whether block i (0-based, of `layers` transformer blocks) has an MoE MLP. */
export function isMoeBlock(i: number, moeEvery: number): boolean {
  return moeEvery === 1 || i % moeEvery === moeEvery - 1;
}

/** Throws a ConfigError naming the first bad MoE field, its value and the rule. */
export function validateMoeFields(cfg: MoeFields & { model: string; layers: number }): void {
  if (cfg.experts !== undefined) requireInt('experts', cfg.experts, 0, MOE_LIMITS.experts);
  if (cfg.topK !== undefined) requireInt('topK', cfg.topK, 1, MAX_TOP_K);
  if (cfg.capacityFactor !== undefined) {
    if (typeof cfg.capacityFactor !== 'number' || !Number.isFinite(cfg.capacityFactor) || cfg.capacityFactor < 0) {
      throw new ConfigError('capacityFactor', cfg.capacityFactor, 'must be a number ≥ 0 (0: dropless, every token kept)');
    }
    requireFinite('capacityFactor', cfg.capacityFactor, { max: MOE_LIMITS.capacityFactor });
  }
  if (cfg.moeEvery !== undefined && cfg.moeEvery !== 1 && cfg.moeEvery !== 2) {
    throw new ConfigError('moeEvery', cfg.moeEvery, 'must be 1 (every block’s MLP is a mixture of experts) or 2 (every other block’s)');
  }
  if (cfg.auxLossWeight !== undefined) requireFinite('auxLossWeight', cfg.auxLossWeight, { min: 0, max: MOE_LIMITS.auxLossWeight });
  const moe = moeOf(cfg);
  if (!moe) return;
  if (cfg.model !== 'gpt') throw new ConfigError('experts', moe.experts, `mixture-of-experts MLPs are the GPT’s; the ${cfg.model} model has none (choose the GPT, or experts = 0)`);
  if (moe.topK > moe.experts) throw new ConfigError('topK', moe.topK, `must be at most experts = ${moe.experts} (each token picks topK different experts)`);
  if (moe.moeEvery === 2 && Number.isInteger(cfg.layers) && cfg.layers < 2) {
    throw new ConfigError('moeEvery', 2, `puts experts in every other block (blocks 1, 3, …); with layers = ${cfg.layers} no block would have them`);
  }
}
