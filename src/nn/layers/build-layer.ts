/** Builds the layer a LayerSpec describes (the loss is not a Layer: the Stage runs it). */
import type { Backend } from '../backend.ts';
import type { LayerSpec } from '../model-spec.ts';
import type { TpGroup } from '../tensor-parallel.ts';
import type { EpGroup } from '../expert-parallel.ts';
import { ActivationLayer } from './activation-layer.ts';
import { Embedding } from './embedding.ts';
import { GptBlock } from './gpt-block.ts';
import { GptMoeBlock } from './gpt-moe-block.ts';
import { GptEmbedding } from './gpt-embedding.ts';
import { GptHead } from './gpt-head.ts';
import type { Layer } from './layer.ts';
import { LayerNorm } from './layer-norm.ts';
import { Linear } from './linear.ts';

/**
 * `tp`: the stage's tensor-parallel group, for the layers it splits (GPT blocks, the MLPs' hidden linears; tp-shard.ts);
 * absent for the head's. `recomputeAttention`: GPT blocks recompute their attention probabilities in the backward.
 * `sequenceParallel`: the GPT's token rows are split over `tp` between its layers (gpt-block.ts): its embedding,
 * blocks and head take the group for that. `ep`: the stage's expert-parallel group, for its MoE blocks' experts.
 */
export function buildLayer(
  be: Backend,
  blockName: string,
  spec: Exclude<LayerSpec, { kind: 'softmax-cross-entropy' }>,
  seed: number,
  tp?: TpGroup,
  opts: { recomputeAttention?: boolean; sequenceParallel?: boolean; ep?: EpGroup } = {},
): Layer {
  const name = `${blockName}.${spec.name}`;
  const sp = opts.sequenceParallel && tp ? tp : undefined;
  switch (spec.kind) {
    case 'embedding':
      return new Embedding(be, name, spec, seed);
    case 'linear':
      return new Linear(be, name, spec, seed, tp);
    case 'layernorm':
      return new LayerNorm(be, name, spec, seed);
    case 'activation':
      return new ActivationLayer(be, name, spec.fn);
    case 'gpt-embedding':
      return new GptEmbedding(be, name, spec, seed, sp);
    case 'gpt-block':
      return new GptBlock(be, name, spec, seed, tp, opts.recomputeAttention, opts.sequenceParallel);
    case 'gpt-moe-block':
      return new GptMoeBlock(be, name, spec, seed, opts.ep);
    case 'gpt-head':
      return new GptHead(be, name, spec, seed, sp);
  }
}
