/**
 * A model as plain data: a list of blocks, each a list of layers. Stages are
 * contiguous block ranges, so the block is the unit a pipeline cuts at. The
 * last block (the head) ends with the softmax-cross-entropy loss.
 *
 * Parameter names are global: `${block.name}.${layer.name}.${param}`, e.g.
 * 'block0.embedding.table', 'block1.linear.W', 'head.linear.b'.
 */
import { ConfigError } from '../util/errors.ts';
import type { Activation } from './backend.ts';
import type { InitSpec } from './param.ts';
import { moeActivationsPerRow, moeFlopsPerRow, moeKeptAfterInputPerRow, moeLargestActivationPerRow, moeParamCount, type GptMoeBlockSpec } from './moe/moe-spec.ts';

export type { GptMoeBlockSpec } from './moe/moe-spec.ts';

export interface EmbeddingSpec {
  readonly kind: 'embedding';
  readonly name: string;
  readonly vocab: number;
  readonly dim: number;
  /** Indices per row; the output has context · dim columns. */
  readonly context: number;
  readonly init: InitSpec;
}

export interface LinearSpec {
  readonly kind: 'linear';
  readonly name: string;
  readonly in: number;
  readonly out: number;
  readonly init: InitSpec;
}

export interface LayerNormSpec {
  readonly kind: 'layernorm';
  readonly name: string;
  readonly dim: number;
  readonly eps: number;
}

export interface ActivationSpec {
  readonly kind: 'activation';
  readonly name: string;
  readonly fn: Activation;
  readonly dim: number;
}

export interface LossSpec {
  readonly kind: 'softmax-cross-entropy';
  readonly name: string;
  readonly classes: number;
}

/** The GPT's token + position embedding: i32 [B, blockSize] → [B·blockSize, dim] (rows multiply by blockSize). */
export interface GptEmbeddingSpec {
  readonly kind: 'gpt-embedding';
  readonly name: string;
  readonly vocab: number;
  readonly dim: number;
  readonly blockSize: number;
  readonly init: InitSpec;
}

/** One pre-LayerNorm transformer block (layers/gpt-block.ts); parameters named `${prefix}.ln_1.weight`, ... */
export interface GptBlockSpec {
  readonly kind: 'gpt-block';
  readonly name: string;
  /** makemore's state-dict prefix, e.g. 'transformer.h.0'. */
  readonly prefix: string;
  readonly dim: number;
  readonly heads: number;
  readonly blockSize: number;
  readonly init: InitSpec;
  /** Init of the two projections back into the residual stream. */
  readonly projInit: InitSpec;
}

/** ln_f then lm_head (no bias): [rows, dim] → logits [rows, vocab]. */
export interface GptHeadSpec {
  readonly kind: 'gpt-head';
  readonly name: string;
  readonly dim: number;
  readonly vocab: number;
  /** Tokens per sequence (for the per-sequence cost count). */
  readonly blockSize: number;
  readonly init: InitSpec;
}

export type LayerSpec = EmbeddingSpec | LinearSpec | LayerNormSpec | ActivationSpec | LossSpec | GptEmbeddingSpec | GptBlockSpec | GptMoeBlockSpec | GptHeadSpec;

export interface BlockSpec {
  readonly name: string;
  readonly layers: readonly LayerSpec[];
}

export interface ModelSpec {
  readonly name: string;
  /** What the first block takes: f32 features [n, cols] or i32 indices [n, cols]. */
  readonly input: { readonly dtype: 'f32' | 'i32'; readonly cols: number };
  readonly classes: number;
  readonly blocks: readonly BlockSpec[];
}

/** Columns a layer takes (for an embedding: indices per row). */
export function layerInCols(l: LayerSpec): number {
  switch (l.kind) {
    case 'embedding':
      return l.context;
    case 'gpt-embedding':
      return l.blockSize;
    case 'gpt-block':
    case 'gpt-moe-block':
    case 'gpt-head':
      return l.dim;
    case 'linear':
      return l.in;
    case 'layernorm':
    case 'activation':
      return l.dim;
    case 'softmax-cross-entropy':
      return l.classes;
  }
}

/** Columns a layer gives (the loss: 1, the loss value). */
export function layerOutCols(l: LayerSpec): number {
  switch (l.kind) {
    case 'embedding':
      return l.context * l.dim;
    case 'gpt-embedding':
    case 'gpt-block':
    case 'gpt-moe-block':
      return l.dim;
    case 'gpt-head':
      return l.vocab;
    case 'linear':
      return l.out;
    case 'layernorm':
    case 'activation':
      return l.dim;
    case 'softmax-cross-entropy':
      return 1;
  }
}

/** Columns a block takes and gives (the head gives the logits' width, before its loss). */
export function blockInCols(b: BlockSpec): number {
  return layerInCols(b.layers[0]);
}

export function blockOutCols(b: BlockSpec): number {
  const last = b.layers[b.layers.length - 1];
  return last.kind === 'softmax-cross-entropy' ? last.classes : layerOutCols(last);
}

/** Output rows per input row: the GPT's embedding turns one sequence into blockSize token rows. */
export function layerRowFactor(l: LayerSpec): number {
  return l.kind === 'gpt-embedding' ? l.blockSize : 1;
}

/** Activation rows one example becomes after the first layer (the GPT: its tokens; else 1). */
export function rowsPerExample(spec: ModelSpec): number {
  return layerRowFactor(spec.blocks[0].layers[0]);
}

/**
 * Activation elements one example row keeps at a layer for its backward (for memory estimates; the stages'
 * measured stash is the same, runtime/stash-estimate-cpu.test.ts): a linear, activation or embedding its input; a
 * LayerNorm its input, mean and rstd; the GPT's embedding its token ids and positions; a GPT block its residual
 * stream, LayerNorm outputs and statistics, qkv, attention output, the MLP's 4C twice and the H·T² attention, on one
 * worker of a stage's `tp` tensor-parallel workers (other layers: the same on each); the GPT's head its input,
 * statistics and normalised input; the loss its logits' gradient, `classes` for each of an example's
 * `tokensPerRow` activation rows (the GPT: blockSize).
 */
export function layerActivationsPerRow(l: LayerSpec, tp = 1, tokensPerRow = 1, rowSplit = 1): number {
  switch (l.kind) {
    case 'gpt-embedding':
      return 2 * l.blockSize;
    case 'gpt-block':
      // Per token: x, ln_1's output, x1, ln_2's output and the two LayerNorms' mean and rstd on every worker of its
      // tp group (with sequence parallelism its rows' share); its share of qkv (3C), the attention output (C), the
      // MLP's hidden and its GELU (4C each), and of the attention probabilities (H·T a token).
      return l.blockSize * ((4 * l.dim + 4) / rowSplit + (12 * l.dim) / tp) + (l.heads * l.blockSize * l.blockSize) / tp;
    case 'gpt-moe-block':
      return moeActivationsPerRow(l);
    case 'gpt-head':
      return l.blockSize * (2 * l.dim + 2);
    case 'layernorm':
      return l.dim + 2;
    case 'softmax-cross-entropy':
      return l.classes * tokensPerRow;
    default:
      return layerInCols(l);
  }
}

/**
 * What a layer keeps per example row between its backward's I and W when the backward is split (the stage keeps
 * only the layers with weights: their saved tensors as I leaves them and their output gradient; runtime/stage.ts):
 * a linear its input and output gradient (with tp its own columns of it too); a LayerNorm its input, statistics and
 * output gradient; an embedding its indices and output gradient; a GPT block what backwardWeight reads (its
 * input, both LayerNorms' outputs and statistics, x1, the attention output, GELU's output, the gradients at the
 * MLP's hidden, at ln_2's and ln_1's outputs, at x1 and at qkv) and its output gradient; the GPT's head its input,
 * statistics, normalised input and its gradient, and the logits' gradient; layers without weights nothing.
 */
export function layerKeptAfterInputPerRow(l: LayerSpec, tp = 1, rowSplit = 1): number {
  const sp = rowSplit > 1;
  switch (l.kind) {
    case 'linear':
      return l.in + l.out + (tp > 1 ? l.out / tp : 0);
    case 'layernorm':
      return 2 * l.dim + 2;
    case 'embedding':
      return l.context + l.context * l.dim;
    case 'gpt-embedding':
      // With sequence parallelism: the whole rows of its output gradient gathered, beside its own.
      return 2 * l.blockSize + l.blockSize * l.dim * (sp ? 1 + 1 / tp : 1);
    case 'gpt-block':
      // Sequence parallelism: the whole rows gathered again of ln_1's and ln_2's outputs, of dy and of dx1 (4C), the
      // block's own rows of dy (C/t), and its split o, GELU's output, hidden gradient and dqkv (12C/t); the summed
      // LayerNorm gradients are 4C a micro-batch (layerKeptAfterInputPerMicrobatch).
      if (sp) return l.blockSize * (4 * l.dim + (13 * l.dim) / tp);
      // Whole on every tp worker: x, ln_1's and ln_2's outputs, x1, the two gradients at the LayerNorms' outputs,
      // dx1 and the block's output gradient (8C) and the statistics (4); split: o (C), GELU's output and the
      // gradient at the MLP's hidden (4C each), dqkv (3C).
      return l.blockSize * (8 * l.dim + 4 + (12 * l.dim) / tp);
    case 'gpt-moe-block':
      return moeKeptAfterInputPerRow(l);
    case 'gpt-head':
      return l.blockSize * (3 * l.dim + 2 + l.vocab);
    default:
      return 0;
  }
}

/**
 * Of what layerKeptAfterInputPerRow counts, the part a backward makes (per example row): the layer's output gradient
 * and the gradients inside it that backwardWeight reads. The rest (its saved inputs, statistics and activations) is
 * the forward's stash, already counted as kept: a backward's working set beside the stash is these, summed over the
 * stage's weight layers (runtime/stage.ts keeps every one of them until its backwardWeight), plus one layer's
 * layerBackwardScratchPerRow. A linear: its output gradient (with tp, its own columns too); a LayerNorm its output
 * gradient; an embedding's: its output gradient; a GPT block: the gradients at ln_1's and ln_2's outputs, at x1 and
 * its output gradient (4C), the MLP's hidden gradient and dqkv (7C/t); with sequence parallelism also ln_1's and
 * ln_2's outputs gathered again (not the stash's rows) and its own rows of dy (C/t), the summed LayerNorm gradients a
 * micro-batch (layerKeptAfterInputPerMicrobatch); the GPT's head the gradient at its normalised input (its output
 * gradient, the logits', is the loss's stash). A MoE block: all of layerKeptAfterInputPerRow (not split: an upper bound).
 */
export function layerBackwardGradsPerRow(l: LayerSpec, tp = 1, rowSplit = 1): number {
  const sp = rowSplit > 1;
  switch (l.kind) {
    case 'linear':
      return l.out + (tp > 1 ? l.out / tp : 0);
    case 'layernorm':
      return l.dim;
    case 'embedding':
      return l.context * l.dim;
    case 'gpt-embedding':
      return l.blockSize * l.dim * (sp ? 1 + 1 / tp : 1);
    case 'gpt-block':
      return sp ? l.blockSize * (4 * l.dim + (8 * l.dim) / tp) : l.blockSize * (4 * l.dim + (7 * l.dim) / tp);
    case 'gpt-moe-block':
      return moeKeptAfterInputPerRow(l);
    case 'gpt-head':
      return l.blockSize * l.dim;
    default:
      return 0;
  }
}

/** What a layer's backward holds only while it runs, per example row, beside layerBackwardGradsPerRow's: a GPT block's attention probabilities' gradient (H·T a token, its heads' share with tp). */
export function layerBackwardScratchPerRow(l: LayerSpec, tp = 1): number {
  return l.kind === 'gpt-block' ? (l.heads * l.blockSize * l.blockSize) / tp : 0;
}

/** What a layer keeps between I and W per micro-batch whatever its rows: a sequence-parallel GPT block's summed LayerNorm gradients (4C). */
export function layerKeptAfterInputPerMicrobatch(l: LayerSpec, rowSplit = 1): number {
  return l.kind === 'gpt-block' && rowSplit > 1 ? 4 * l.dim : 0;
}

/** Elements of a layer's largest single activation buffer per example row. */
export function layerLargestActivationPerRow(l: LayerSpec): number {
  switch (l.kind) {
    case 'gpt-embedding':
      return l.blockSize * l.dim;
    case 'gpt-block':
      return Math.max(4 * l.blockSize * l.dim, l.heads * l.blockSize * l.blockSize);
    case 'gpt-moe-block':
      return moeLargestActivationPerRow(l);
    case 'gpt-head':
      return l.blockSize * Math.max(l.dim, l.vocab);
    default:
      return Math.max(layerInCols(l), layerOutCols(l));
  }
}

export function layerParamCount(l: LayerSpec): number {
  switch (l.kind) {
    case 'gpt-embedding':
      return (l.vocab + l.blockSize) * l.dim;
    case 'gpt-block':
      return 12 * l.dim * l.dim + 13 * l.dim;
    case 'gpt-moe-block':
      return moeParamCount(l);
    case 'gpt-head':
      return 2 * l.dim + l.dim * l.vocab;
    case 'embedding':
      return l.vocab * l.dim;
    case 'linear':
      return l.in * l.out + l.out;
    case 'layernorm':
      return 2 * l.dim;
    default:
      return 0;
  }
}

/**
 * Forward floating-point operations per example row (a multiply-add counts 2).
 * The GPT's layers count per sequence of blockSize tokens (its example row):
 * the embedding's gather and add, attention's causal T² terms (scores, softmax,
 * weighted sum) beside the block's matmuls, and the head's vocab-wide matmul.
 */
export function layerFlopsPerRow(l: LayerSpec): number {
  switch (l.kind) {
    case 'gpt-embedding':
      return 2 * l.blockSize * l.dim;
    case 'gpt-block': {
      const T = l.blockSize, C = l.dim;
      const matmuls = 2 * T * C * (3 * C + C + 4 * C + 4 * C);
      const pairs = (T * (T + 1)) / 2; // causal: key j <= query t
      const attention = 2 * 2 * pairs * C + 5 * l.heads * pairs;
      const elementwise = T * (2 * 8 * C + 8 * 4 * C + 2 * C + 3 * C + C + 4 * C + C);
      return matmuls + attention + elementwise;
    }
    case 'gpt-moe-block':
      return moeFlopsPerRow(l);
    case 'gpt-head':
      return l.blockSize * (8 * l.dim + 2 * l.dim * l.vocab);
    case 'embedding':
      return l.context * l.dim; // a gather: one move per output element
    case 'linear':
      return 2 * l.in * l.out + l.out;
    case 'layernorm':
      return 8 * l.dim;
    case 'activation':
      return (l.fn === 'gelu' ? 8 : l.fn === 'tanh' ? 4 : 1) * l.dim;
    case 'softmax-cross-entropy':
      return 4 * l.classes;
  }
}

export type CostMeasure = 'flops' | 'params';

/**
 * One cost per block, for partitionBlocks. 'flops' (the default) balances
 * compute: forward FLOPs per row, and backward is about twice forward for
 * every layer, so the forward count orders stages the same way. 'params'
 * balances weight and optimizer-state memory.
 */
export function blockCosts(spec: ModelSpec, measure: CostMeasure = 'flops'): number[] {
  const f = measure === 'flops' ? layerFlopsPerRow : layerParamCount;
  return spec.blocks.map((b) => b.layers.reduce((s, l) => s + f(l), 0));
}

export function paramCount(spec: ModelSpec): number {
  return blockCosts(spec, 'params').reduce((a, b) => a + b, 0);
}

/**
 * Checks a spec is consistent: every layer takes the width the previous one
 * gives, the first block takes the input, exactly the last layer of the last
 * block is the loss, and names are unique.
 */
export function validateModelSpec(spec: ModelSpec): void {
  if (spec.blocks.length === 0) throw new ConfigError('model.blocks', spec.blocks.length, 'must hold at least one block');
  let cols = spec.input.cols;
  const names = new Set<string>();
  spec.blocks.forEach((b, bi) => {
    if (b.layers.length === 0) throw new ConfigError(`model.blocks[${bi}].layers`, 0, 'must hold at least one layer');
    if (names.has(b.name)) throw new ConfigError(`model.blocks[${bi}].name`, b.name, 'must be unique');
    names.add(b.name);
    b.layers.forEach((l, li) => {
      const field = `model.blocks[${bi}].layers[${li}]`;
      const isLastLayer = bi === spec.blocks.length - 1 && li === b.layers.length - 1;
      if ((l.kind === 'softmax-cross-entropy') !== isLastLayer) {
        throw new ConfigError(`${field}.kind`, l.kind, 'the loss must be the last layer of the last block, and only there');
      }
      if ((l.kind === 'embedding' || l.kind === 'gpt-embedding') && (bi !== 0 || li !== 0)) {
        throw new ConfigError(`${field}.kind`, l.kind, 'an embedding must be the first layer of the first block');
      }
      if ((l.kind === 'embedding' || l.kind === 'gpt-embedding') && spec.input.dtype !== 'i32') {
        throw new ConfigError('model.input.dtype', spec.input.dtype, 'must be i32 when the model starts with an embedding');
      }
      if (bi === 0 && li === 0 && l.kind !== 'embedding' && l.kind !== 'gpt-embedding' && spec.input.dtype !== 'f32') {
        throw new ConfigError('model.input.dtype', spec.input.dtype, 'must be f32 unless the model starts with an embedding');
      }
      for (const [k, v] of Object.entries(l)) {
        if (typeof v === 'number' && (k === 'capacityFactor' || k === 'auxLossWeight')) {
          if (!(Number.isFinite(v) && v >= 0)) throw new ConfigError(`${field}.${k}`, v, 'must be a finite number ≥ 0');
        } else if (typeof v === 'number' && k !== 'eps' && !(Number.isInteger(v) && v > 0)) {
          throw new ConfigError(`${field}.${k}`, v, 'must be a positive integer');
        }
      }
      const inCols = layerInCols(l);
      if (inCols !== cols) throw new ConfigError(`${field}.in`, inCols, `must equal the width of what comes before it, ${cols}`);
      cols = l.kind === 'softmax-cross-entropy' ? 1 : layerOutCols(l);
    });
  });
  const loss = spec.blocks[spec.blocks.length - 1].layers.at(-1);
  if (loss?.kind === 'softmax-cross-entropy' && loss.classes !== spec.classes) {
    throw new ConfigError('model.classes', spec.classes, `must equal the loss's classes, ${loss.classes}`);
  }
}
