/**
 * The GPT's input: token embedding `transformer.wte` [V, C] plus learned
 * position embedding `transformer.wpe` [T, C]. Takes i32 token indices
 * [B, T] and gives the residual stream [B·T, C] (row b·T + t). Its input is
 * integer, so it has no input gradient: it is the model's first layer.
 *
 * With sequence parallelism over a tp group of t (gpt-block.ts), it hands on
 * this worker's block of rows [R/t, C] (each worker computes the whole sum,
 * as every worker holds the tables); its backward gathers the rows of dy back
 * first (backwardInput, which the stage runs for it), so its weight gradients
 * are the whole ones on every worker.
 */
import { ConfigError } from '../../util/errors.ts';
import type { Backend, Tensor } from '../backend.ts';
import type { GptEmbeddingSpec } from '../model-spec.ts';
import { createParam, type Param } from '../param.ts';
import type { Layer, LayerForward } from './layer.ts';
import { SOLO, type TpGroup } from '../tensor-parallel.ts';

/** The same values under another shape (a copy: backends have no views). */
export function reshaped(be: Backend, t: Tensor, shape: readonly number[]): Tensor {
  const out = be.zeros(shape);
  be.copyInto(out, t);
  return out;
}

export class GptEmbedding implements Layer {
  readonly wte: Param;
  readonly wpe: Param;
  readonly params: readonly Param[];
  private readonly T: number;
  private readonly C: number;
  /** With sequence parallelism: backwardInput gathers the rows of dy that backwardWeight reads. */
  readonly needsBackwardInput: boolean;

  constructor(
    private readonly be: Backend,
    readonly name: string,
    spec: GptEmbeddingSpec,
    seed: number,
    /** Sequence parallelism's group (its rows split over it); SOLO: whole rows. */
    private readonly sp: TpGroup = SOLO,
  ) {
    this.needsBackwardInput = sp.size > 1;
    this.wte = createParam(be, 'transformer.wte.weight', [spec.vocab, spec.dim], spec.init, seed, true);
    this.wpe = createParam(be, 'transformer.wpe.weight', [spec.blockSize, spec.dim], spec.init, seed, true);
    this.params = [this.wte, this.wpe];
    this.T = spec.blockSize;
    this.C = spec.dim;
  }

  /** Position indices [B, T]: every row 0 .. T−1. */
  private positions(B: number): Tensor {
    const pos = new Int32Array(B * this.T);
    for (let i = 0; i < pos.length; i++) pos[i] = i % this.T;
    return this.be.tensor(pos, [B, this.T], 'i32');
  }

  /** saved = [idx, positions]. */
  async forward(idx: Tensor, save: boolean): Promise<LayerForward> {
    const whole = this.forwardWhole(idx, save);
    if (this.sp.size === 1) return whole;
    const y = await this.sp.ownRows(whole.y);
    this.be.dispose(whole.y);
    return { y, saved: whole.saved };
  }

  private forwardWhole(idx: Tensor, save: boolean): LayerForward {
    if (idx.shape.length !== 2 || idx.shape[1] !== this.T) throw new ConfigError(`${this.name} input.shape`, idx.shape, `must be [B, ${this.T}] token indices`);
    const B = idx.shape[0];
    const pos = this.positions(B);
    const tok = this.be.embedding(this.wte.value, idx);
    const pe = this.be.embedding(this.wpe.value, pos);
    const sum = this.be.add(tok, pe);
    this.be.dispose(tok);
    this.be.dispose(pe);
    const y = reshaped(this.be, sum, [B * this.T, this.C]);
    this.be.dispose(sum);
    if (save) return { y, saved: [idx, pos] };
    this.be.dispose(pos);
    return { y, saved: [] };
  }

  /** Sequence parallelism only: keeps the whole rows of dy in `saved` for backwardWeight; returns a placeholder the stage frees (there is no input gradient). */
  async backwardInput(saved: Tensor[], dy: Tensor): Promise<Tensor> {
    if (this.sp.size === 1) throw new ConfigError(`${this.name} backwardInput`, 'called', 'an embedding has no input gradient (its input is integer indices)');
    const [all] = await this.sp.allGatherRows([dy]);
    saved.push(all);
    return this.be.zeros([1, 1]);
  }

  backwardWeight(saved: readonly Tensor[], given: Tensor): void {
    const [idx, pos] = saved;
    const dy = saved[2] ?? given;
    const d = reshaped(this.be, dy, [idx.shape[0], this.T * this.C]);
    this.be.embeddingBackwardAcc(this.wte.grad, idx, d);
    this.be.embeddingBackwardAcc(this.wpe.grad, pos, d);
    this.be.dispose(d);
  }
}
