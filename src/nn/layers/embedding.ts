/**
 * Embedding of k context indices: table [V, E], idx i32 [n, k] → [n, k·E],
 * the k embeddings side by side. Its input is integer, so it has no input
 * gradient: it must be the model's first layer.
 */
import { ConfigError } from '../../util/errors.ts';
import type { Backend, Tensor } from '../backend.ts';
import type { EmbeddingSpec } from '../model-spec.ts';
import { createParam } from '../param.ts';
import type { Param } from '../param.ts';
import type { Layer, LayerForward } from './layer.ts';

export class Embedding implements Layer {
  readonly table: Param;
  readonly params: readonly Param[];

  constructor(
    private readonly be: Backend,
    readonly name: string,
    spec: EmbeddingSpec,
    seed: number,
  ) {
    this.table = createParam(be, `${name}.table`, [spec.vocab, spec.dim], spec.init, seed, true);
    this.params = [this.table];
  }

  forward(idx: Tensor, save: boolean): LayerForward {
    return { y: this.be.embedding(this.table.value, idx), saved: save ? [idx] : [] };
  }

  backwardInput(): Tensor {
    throw new ConfigError(`${this.name} backwardInput`, 'called', 'an embedding has no input gradient (its input is integer indices)');
  }

  backwardWeight(saved: readonly Tensor[], dy: Tensor): void {
    this.be.embeddingBackwardAcc(this.table.grad, saved[0], dy);
  }
}
