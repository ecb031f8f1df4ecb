/**
 * Everything one training run needs: the model, the data, the batch and its
 * micro-batches, the optimizer and its schedule, and the seed. Shared by the
 * single-device loop here and the pipeline runtime.
 */
import { ConfigError, requireFinite, requireInt, requireOneOf } from '../util/errors.ts';
import { isTwoD } from '../data/datasets.ts';
import type { DatasetName } from '../data/datasets.ts';
import { TWO_D_DEFAULT_NOISE } from '../data/two-d.ts';
import { defaultGptConfig, defaultModelConfig, MAKEMORE_GPT, validateModelConfig } from './model-config.ts';
import type { ModelConfig } from './model-config.ts';
import { validateOptimizerConfig } from './optimizer.ts';
import { moeOf } from './moe/moe-config.ts';
import type { OptimizerName } from './optimizer.ts';

export type LrSchedule = 'constant' | 'cosine';
export const LR_SCHEDULES: readonly LrSchedule[] = ['constant', 'cosine'];

export interface TrainConfig extends ModelConfig {
  /** 2-D sets: training points (ignored by names, but still checked). */
  points: number;
  /** 2-D sets: noise level (see src/data/two-d.ts). */
  noise: number;
  /** Examples per step. */
  batchSize: number;
  /** Micro-batches per step; must divide batchSize. */
  microbatches: number;
  optimizer: OptimizerName;
  /** Peak learning rate. */
  lr: number;
  /** SGD momentum. */
  momentum: number;
  weightDecay: number;
  /** 'cosine' decays lr from `lr` to lr/10 over the run; 'constant' keeps it. */
  lrSchedule: LrSchedule;
  steps: number;
  /** Fixes initialisation, data, split and batch order. */
  seed: number;
  /** Keep only stage inputs and recompute the forward in backward. */
  recompute: boolean;
  /**
   * Selective recomputation (Korthikanti et al. 2022, §5): keep every GPT block's activations but its attention
   * probabilities (B·H·T² per block), recomputed from the saved q, k in the backward. GPT only; absent: off.
   */
  recomputeAttention?: boolean;
  /** Pipeline stages (the single-device loop runs them in sequence). */
  stages: number;
  /** Evaluate every this many steps (0: only after the last step). */
  evalEvery: number;
}

export const TRAIN_LIMITS = { points: 100_000, batchSize: 65_536, steps: 1_000_000 } as const;

/** A configuration that trains well: spiral ≥ 95% training accuracy, names < 2.25 nats/char validation loss. */
export function defaultTrainConfig(dataset: DatasetName = 'spiral'): TrainConfig {
  const model = defaultModelConfig(dataset);
  const common = { recompute: false, recomputeAttention: false, stages: 1, seed: 1, momentum: 0.9, lrSchedule: 'cosine' as const };
  if (isTwoD(dataset)) {
    return {
      ...model,
      ...common,
      points: 300,
      noise: TWO_D_DEFAULT_NOISE[dataset],
      batchSize: 64,
      microbatches: 4,
      optimizer: 'adamw',
      lr: 1e-2,
      weightDecay: 0,
      steps: 200,
      evalEvery: 50,
    };
  }
  return {
    ...model,
    ...common,
    points: 300,
    noise: 0,
    batchSize: 256,
    microbatches: 4,
    optimizer: 'adamw',
    lr: 1e-2,
    weightDecay: 0.01,
    steps: 400,
    evalEvery: 100,
  };
}

/**
 * The page's default GPT: 'small' (GPT_DEFAULTS, what trains best in a tab on
 * software WebGPU) or 'makemore' (makemore's 4 × 4 × 64 with its recipe, for a
 * hardware GPU; src/state/run/gpt-sizing.ts decides from the adapter).
 */
export type GptSize = 'small' | 'makemore';

/**
 * makemore's recipe for its GPT (MAKEMORE_GPT) on names: AdamW (0.9, 0.99), batch
 * 64, lr 2e-3 cosine, weight decay 0.1, 3,000 steps. The app's own loop with it
 * ended at 1.988 nats/char held-out on an H100 (Dawn, bench/GPU.md; 1.993 at step
 * 2,000 of that schedule); PyTorch on one CPU thread 1.986. A 2,000-step schedule
 * ended at 2.005 in the page on an H200 (bench/chrome-vulkan): short of 2.00; this
 * 3,000-step one ended at 1.983 there, 372 s from the Run click.
 */
export const MAKEMORE_RECIPE = { optimizer: 'adamw', batchSize: 64, lr: 2e-3, weightDecay: 0.1, lrSchedule: 'cosine', steps: 3000 } as const;

/**
 * The fields a switch to `model` on the names or a text brings (the page's
 * model selector): its size, at least `minLayers` deep, and the optimizer
 * settings it trains well with (the GPT's default size: AdamW, batch 32, lr
 * 5e-3 cosine, weight decay 0.01, as measured; see GPT_DEFAULTS). On a text the
 * block size is the text's default.
 */
export function namesModelSwitch(model: 'char-mlp' | 'gpt', minLayers: number, dataset: 'names' | 'text' = 'names', size: GptSize = 'small'): Partial<TrainConfig> {
  const m = model === 'gpt' ? defaultGptConfig() : defaultModelConfig('names');
  const t = defaultTrainConfig('names');
  const blockSize = dataset === 'text' ? defaultModelConfig('text').blockSize : m.blockSize;
  if (model === 'gpt' && size === 'makemore') return { model, ...MAKEMORE_GPT, layers: Math.max(MAKEMORE_GPT.layers, minLayers), blockSize, ...MAKEMORE_RECIPE };
  const fit = { model, layers: Math.max(m.layers, minLayers), heads: m.heads, width: m.width, blockSize };
  if (model === 'gpt') return { ...fit, optimizer: 'adamw', batchSize: 32, lr: 5e-3, weightDecay: 0.01, lrSchedule: 'cosine' };
  return { ...fit, optimizer: t.optimizer, batchSize: t.batchSize, lr: t.lr, weightDecay: t.weightDecay, recomputeAttention: false };
}

/** Throws a ConfigError naming the first bad field, its value and the rule. */
export function validateTrainConfig(cfg: TrainConfig): void {
  validateModelConfig(cfg);
  requireInt('points', cfg.points, 3, TRAIN_LIMITS.points);
  requireFinite('noise', cfg.noise, { min: 0, max: 1 });
  requireInt('batchSize', cfg.batchSize, 1, TRAIN_LIMITS.batchSize);
  requireInt('microbatches', cfg.microbatches, 1, cfg.batchSize);
  if (cfg.batchSize % cfg.microbatches !== 0) {
    throw new ConfigError('microbatches', cfg.microbatches, `must divide batchSize = ${cfg.batchSize} evenly`);
  }
  validateOptimizerConfig(cfg);
  requireOneOf('lrSchedule', cfg.lrSchedule, LR_SCHEDULES);
  requireInt('steps', cfg.steps, 1, TRAIN_LIMITS.steps);
  requireInt('seed', cfg.seed, 0, 0xffffffff);
  if (typeof cfg.recompute !== 'boolean') throw new ConfigError('recompute', cfg.recompute, 'must be true or false');
  if (cfg.recomputeAttention !== undefined && typeof cfg.recomputeAttention !== 'boolean') throw new ConfigError('recomputeAttention', cfg.recomputeAttention, 'must be true or false');
  if (cfg.recomputeAttention && cfg.model !== 'gpt') {
    throw new ConfigError('recomputeAttention', true, `recomputes a GPT block's attention probabilities; the ${cfg.model} model has no attention (choose the GPT, or leave it off)`);
  }
  if (cfg.recomputeAttention && moeOf(cfg)) {
    throw new ConfigError('recomputeAttention', true, `is not implemented for an MoE block (experts = ${cfg.experts}); leave it off, or recompute the whole forward`);
  }
  const blocks = cfg.layers + 1;
  if (typeof cfg.stages !== 'number' || !Number.isInteger(cfg.stages) || cfg.stages < 1 || cfg.stages > blocks) {
    throw new ConfigError('stages', cfg.stages, `must be an integer from 1 to the number of blocks, ${blocks} (layers + 1; a stage holds at least one block)`);
  }
  requireInt('evalEvery', cfg.evalEvery, 0);
}

/** The learning rate of step `step` (0-based). */
export function lrAt(cfg: Pick<TrainConfig, 'lr' | 'lrSchedule' | 'steps'>, step: number): number {
  if (cfg.lrSchedule === 'constant' || cfg.steps <= 1) return cfg.lr;
  const t = Math.min(1, step / (cfg.steps - 1));
  const min = cfg.lr / 10;
  return min + 0.5 * (cfg.lr - min) * (1 + Math.cos(Math.PI * t));
}
