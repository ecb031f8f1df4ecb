/**
 * The user-facing model configuration, its validation, and the builders that
 * turn it into a ModelSpec (a list of blocks).
 *
 * - 'mlp' (for the 2-D sets): `layers` hidden blocks of (Linear → activation)
 *   of width `hidden`, then the head block (Linear hidden → classes, loss).
 * - 'char-mlp' (for names and a text): block 0 = Embedding(V, embedDim) over `context`
 *   characters → Linear(context·embedDim → hidden) → LayerNorm → activation;
 *   blocks 1 .. layers-1 = Linear(hidden → hidden) → LayerNorm → activation;
 *   head = Linear(hidden → V), loss. V = 28 on names, the text's vocabulary on a text.
 *
 * - 'gpt' (for names as sequences, or a text's blocks): makemore's transformer. Block 0 = token +
 *   position embedding then transformer block 0; blocks 1 .. layers-1 = one
 *   transformer block each (width C = `width`, `heads` heads, `blockSize`
 *   positions); head = ln_f + lm_head (no bias), loss over every non-padded
 *   position. Parameter names are makemore's state-dict names.
 *
 * All have layers + 1 blocks.
 */
import { requireInt, requireOneOf, ConfigError } from '../util/errors.ts';
import { DATASETS, datasetClasses, isTwoD } from '../data/datasets.ts';
import type { DatasetName } from '../data/datasets.ts';
import { minBlockSize } from '../data/name-sequences.ts';
import { requireTextBlocks, TEXT_DEFAULT_BLOCK } from '../data/text-dataset.ts';
import { requireCorpus } from '../data/text-registry.ts';
import type { Activation } from './backend.ts';
import type { BlockSpec, LayerSpec, ModelSpec } from './model-spec.ts';
import { validateModelSpec } from './model-spec.ts';
import { isMoeBlock, moeOf, validateMoeFields, type MoeFields } from './moe/moe-config.ts';

export type ModelName = 'mlp' | 'char-mlp' | 'gpt';
export const MODELS: readonly ModelName[] = ['mlp', 'char-mlp', 'gpt'];

export type HiddenActivation = Exclude<Activation, 'identity'>;
export const HIDDEN_ACTIVATIONS: readonly HiddenActivation[] = ['relu', 'gelu', 'tanh'];

export interface ModelConfig extends MoeFields {
  model: ModelName;
  dataset: DatasetName;
  /** Hidden width H. */
  hidden: number;
  /** Hidden blocks before the head; the model has layers + 1 blocks. */
  layers: number;
  activation: HiddenActivation;
  /** char-mlp: characters of context k (ignored by mlp, but still checked). */
  context: number;
  /** char-mlp: embedding width E per character (ignored by mlp, but still checked). */
  embedDim: number;
  /** gpt: attention heads; must divide width. Required for 'gpt', checked when given. */
  heads?: number;
  /** gpt: the residual stream's width C. */
  width?: number;
  /** gpt: positions per sequence, at least the longest name + 1 (names); text: characters per block less one, for both models. */
  blockSize?: number;
  /** text: the content hash of the loaded text (src/data/text-registry.ts); present exactly when dataset is "text". */
  textHash?: string;
}

export const LIMITS = { hidden: 4096, layers: 64, context: 16, embedDim: 512, heads: 64, width: 1024, blockSize: 64 } as const;

/** makemore's transformer size: 4 layers, 4 heads, 64 wide (block 16), 204,672 parameters here. */
export const MAKEMORE_GPT = { layers: 4, heads: 4, width: 64 } as const;

/**
 * The GPT's default size, chosen by measurement in a tab on a machine without
 * a GPU (WebGPU on SwiftShader, 2 busy cores; AdamW, batch 32, lr 5e-3
 * cosine): 2 layers × 4 heads × 32 wide reached 2.20 nats/char held-out in 600
 * steps (6 min) and 2.12 in 1,200 (9 min), while makemore's size took 3.2 s a
 * step and was at 2.32 after 160 steps (8.6 min). On a real GPU makemore's
 * size (MAKEMORE_GPT) is the one that gets below 2.0: 1.988 after a 3,000-step
 * schedule (71 s on an H100 with the app's loop on Dawn, bench/GPU.md).
 */
export const GPT_DEFAULTS = { layers: 2, heads: 4, width: 32 } as const;

/** The model a data set is trained with by default (a text: the GPT). */
export function modelFor(dataset: DatasetName): ModelName {
  return isTwoD(dataset) ? 'mlp' : dataset === 'text' ? 'gpt' : 'char-mlp';
}

/** The models a data set can train. */
export function modelsFor(dataset: DatasetName): readonly ModelName[] {
  return isTwoD(dataset) ? ['mlp'] : ['char-mlp', 'gpt'];
}

/** The default GPT on the names (every other field as the names default). */
export function defaultGptConfig(): ModelConfig {
  return { ...defaultModelConfig('names'), model: 'gpt', layers: GPT_DEFAULTS.layers };
}

export function defaultModelConfig(dataset: DatasetName = 'spiral'): ModelConfig {
  requireOneOf('dataset', dataset, DATASETS);
  const gpt = { heads: GPT_DEFAULTS.heads, width: GPT_DEFAULTS.width, blockSize: dataset === 'text' ? TEXT_DEFAULT_BLOCK : minBlockSize() };
  if (isTwoD(dataset)) {
    return { model: 'mlp', dataset, hidden: 64, layers: 3, activation: 'relu', context: 3, embedDim: 16, ...gpt };
  }
  return { model: modelFor(dataset), dataset, hidden: 128, layers: 2, activation: 'gelu', context: 4, embedDim: 16, ...gpt };
}

/** Throws a ConfigError naming the first bad field, its value and the rule. */
export function validateModelConfig(cfg: ModelConfig): void {
  if (cfg === null || typeof cfg !== 'object') throw new ConfigError('model config', cfg, 'must be an object');
  const model = requireOneOf('model', cfg.model, MODELS);
  const dataset = requireOneOf('dataset', cfg.dataset, DATASETS);
  if (!modelsFor(dataset).includes(model)) {
    const rule = model === 'mlp' ? 'must be a 2-D set (spiral, moons, circles, xor) for model "mlp"' : `must be "names" or "text" for model "${model}"`;
    throw new ConfigError('dataset', dataset, rule);
  }
  if (dataset !== 'text' && cfg.textHash !== undefined) throw new ConfigError('textHash', cfg.textHash, `names a text; it is only for dataset "text" (dataset = "${dataset}")`);
  requireInt('hidden', cfg.hidden, 1, LIMITS.hidden);
  requireInt('layers', cfg.layers, 1, LIMITS.layers);
  requireOneOf('activation', cfg.activation, HIDDEN_ACTIVATIONS);
  requireInt('context', cfg.context, 1, LIMITS.context);
  requireInt('embedDim', cfg.embedDim, 1, LIMITS.embedDim);
  validateGptFields(cfg, model === 'gpt' || dataset === 'text');
  if (dataset === 'text') validateTextFields(cfg);
  validateMoeFields(cfg);
}

/** A text run: its text loaded here, long enough for two blocks, and (char-MLP) a context within a block. */
function validateTextFields(cfg: ModelConfig): void {
  const T = cfg.blockSize as number;
  if (cfg.model === 'char-mlp' && cfg.context > T) {
    throw new ConfigError('context', cfg.context, `must be at most blockSize = ${T} on a text (each block of blockSize + 1 characters gives blockSize + 1 − context examples)`);
  }
  requireTextBlocks(requireCorpus(cfg.textHash), T);
}

/** heads, width, blockSize: required for the GPT (checked when given otherwise). */
function validateGptFields(cfg: ModelConfig, required: boolean): void {
  const given = (v: unknown) => required || v !== undefined;
  if (given(cfg.heads)) requireInt('heads', cfg.heads, 1, LIMITS.heads);
  if (given(cfg.width)) requireInt('width', cfg.width, 1, LIMITS.width);
  if (given(cfg.heads) && given(cfg.width) && (cfg.width as number) % (cfg.heads as number) !== 0) {
    throw new ConfigError('heads', cfg.heads, `must divide width = ${cfg.width} (each head takes width / heads columns)`);
  }
  if (given(cfg.blockSize)) {
    requireInt('blockSize', cfg.blockSize, 1, LIMITS.blockSize);
    if (cfg.dataset === 'text') return;
    const min = minBlockSize();
    if ((cfg.blockSize as number) < min) {
      throw new ConfigError('blockSize', cfg.blockSize, `must be at least the longest name + 1 = ${min} (the start mark and every character)`);
    }
  }
}

/** Std of a hidden Linear's weights: He for relu/gelu, Xavier-like (1/fan-in) for tanh. */
function hiddenStd(fanIn: number, act: HiddenActivation): number {
  return Math.sqrt((act === 'tanh' ? 1 : 2) / fanIn);
}

/** `batchSize` (a training configuration's): an MoE model weighs each group's aux loss by its share of the step's tokens. */
export function buildModelSpec(cfg: ModelConfig & { batchSize?: number }): ModelSpec {
  validateModelConfig(cfg);
  const spec = cfg.model === 'mlp' ? mlpSpec(cfg) : cfg.model === 'gpt' ? gptSpec(cfg) : charMlpSpec(cfg);
  validateModelSpec(spec);
  return spec;
}

function linear(inCols: number, outCols: number, std: number): LayerSpec {
  return { kind: 'linear', name: 'linear', in: inCols, out: outCols, init: { kind: 'normal', std } };
}

function head(hidden: number, classes: number): BlockSpec {
  return {
    name: 'head',
    layers: [linear(hidden, classes, Math.sqrt(1 / hidden)), { kind: 'softmax-cross-entropy', name: 'loss', classes }],
  };
}

function mlpSpec(cfg: ModelConfig): ModelSpec {
  const classes = datasetClasses(cfg);
  const H = cfg.hidden;
  const blocks: BlockSpec[] = [];
  for (let i = 0; i < cfg.layers; i++) {
    const inCols = i === 0 ? 2 : H;
    blocks.push({
      name: `block${i}`,
      layers: [linear(inCols, H, hiddenStd(inCols, cfg.activation)), { kind: 'activation', name: 'act', fn: cfg.activation, dim: H }],
    });
  }
  blocks.push(head(H, classes));
  return { name: `mlp-${cfg.dataset}`, input: { dtype: 'f32', cols: 2 }, classes, blocks };
}

function charMlpSpec(cfg: ModelConfig): ModelSpec {
  const { hidden: H, context: k, embedDim: E } = cfg;
  const V = datasetClasses(cfg);
  const blocks: BlockSpec[] = [];
  for (let i = 0; i < cfg.layers; i++) {
    const inCols = i === 0 ? k * E : H;
    const layers: LayerSpec[] = [];
    if (i === 0) layers.push({ kind: 'embedding', name: 'embedding', vocab: V, dim: E, context: k, init: { kind: 'normal', std: 1 } });
    layers.push(
      linear(inCols, H, hiddenStd(inCols, cfg.activation)),
      { kind: 'layernorm', name: 'layernorm', dim: H, eps: 1e-5 },
      { kind: 'activation', name: 'act', fn: cfg.activation, dim: H },
    );
    blocks.push({ name: `block${i}`, layers });
  }
  blocks.push(head(H, V));
  return { name: `char-mlp-${cfg.dataset}`, input: { dtype: 'i32', cols: k }, classes: V, blocks };
}

/**
 * makemore's transformer (see the module comment); init as nanoGPT: N(0, 0.02), residual projections N(0, 0.02/sqrt(2·layers)).
 * With experts (moe/moe-config.ts): the MoE blocks are 'gpt-moe-block's, named as the dense ones.
 */
function gptSpec(cfg: ModelConfig & { batchSize?: number }): ModelSpec {
  const moe = moeOf(cfg);
  if (moe && !(Number.isInteger(cfg.batchSize) && (cfg.batchSize as number) > 0)) {
    throw new ConfigError('batchSize', cfg.batchSize, 'must be a whole number ≥ 1: an MoE model weighs each micro-batch’s aux loss by its share of the step’s tokens');
  }
  const C = cfg.width as number, heads = cfg.heads as number, T = cfg.blockSize as number;
  const V = datasetClasses(cfg);
  const init = { kind: 'normal', std: 0.02 } as const;
  const projInit = { kind: 'normal', std: 0.02 / Math.sqrt(2 * cfg.layers) } as const;
  const blocks: BlockSpec[] = [];
  for (let i = 0; i < cfg.layers; i++) {
    const layers: LayerSpec[] = [];
    if (i === 0) layers.push({ kind: 'gpt-embedding', name: 'embedding', vocab: V, dim: C, blockSize: T, init });
    const block = { name: 'transformer', prefix: `transformer.h.${i}`, dim: C, heads, blockSize: T, init, projInit } as const;
    if (moe && isMoeBlock(i, moe.moeEvery)) {
      const { experts, topK, capacityFactor, auxLossWeight } = moe;
      layers.push({ kind: 'gpt-moe-block', ...block, experts, topK, capacityFactor, auxLossWeight, stepTokens: (cfg.batchSize as number) * T });
    } else layers.push({ kind: 'gpt-block', ...block });
    blocks.push({ name: `block${i}`, layers });
  }
  blocks.push({
    name: 'head',
    layers: [
      { kind: 'gpt-head', name: 'head', dim: C, vocab: V, blockSize: T, init },
      { kind: 'softmax-cross-entropy', name: 'loss', classes: V },
    ],
  });
  return { name: `gpt-${cfg.dataset}`, input: { dtype: 'i32', cols: T }, classes: V, blocks };
}
