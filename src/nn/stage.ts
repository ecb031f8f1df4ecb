/**
 * A pipeline stage: a contiguous range of a model's blocks, with the
 * parameters of those blocks and a stash per in-flight micro-batch.
 *
 * Ownership (so nothing is copied or freed twice):
 * - `forward` takes ownership of `input`; `backwardInput`/`backward` take
 *   ownership of `dOutput`. Do not dispose or reuse them after the call.
 * - `labels` stay the caller's: the stage copies them when it needs them later
 *   (recompute), so the caller may dispose them right after `forward`.
 * - Every returned tensor (activation, loss, input gradient, `infer` output)
 *   belongs to the caller, who disposes it.
 * - `infer` does not take ownership of its input.
 *
 * forward, backwardInput, backward and infer are asynchronous: a tensor-parallel
 * stage's layers wait for their group's collectives between kernels.
 *
 * Stash per micro-batch: after `forward`, what every layer's backward needs
 * (with recompute: only the input, and the labels on the last stage); after
 * `backwardInput`, only what `backwardWeight` needs (the weight layers'
 * inputs and output gradients); `backwardWeight` frees it.
 */
import { ConfigError, requireFinite, requireInt } from '../util/errors.ts';
import type { Backend, Tensor } from './backend.ts';
import { buildLayer } from './layers/build-layer.ts';
import type { Layer, StageRouteLoad } from './layers/layer.ts';
import { SoftmaxCrossEntropy } from './layers/loss.ts';
import { routeLoadsOf, takeAuxLosses } from './stage-moe.ts';
import { remapStash, tensorsOf, type Stash } from './stash.ts';
import type { ModelSpec } from './model-spec.ts';
import { blockInCols, blockOutCols, layerRowFactor, validateModelSpec } from './model-spec.ts';
import { disposeParam, sumGradsOver } from './param.ts';
import type { Param } from './param.ts';
import { SOLO, type TpGroup } from './tensor-parallel.ts';
import { SOLO_EP, type EpGroup } from './expert-parallel.ts';
import { parseEpPieceName } from './moe/moe-ep.ts';

export interface StageOptions {
  /** Keep only the input per micro-batch and recompute the forward in backwardInput. */
  recompute?: boolean;
  /** Selective recomputation: GPT blocks keep all but their attention probabilities, recomputed in backwardInput. */
  recomputeAttention?: boolean;
  /**
   * The stage's tensor-parallel group: its GPT blocks and hidden linears are split over it (tp-shard.ts),
   * the head and embeddings are whole on every member. Absent: the stage alone (SOLO).
   */
  tp?: TpGroup;
  /**
   * Sequence parallelism over `tp` (GPT; no effect with one worker): between its layers, and from stage to stage,
   * each tp worker holds its block of the token rows (gpt-block.ts). The embedding hands on its rows; the head
   * gathers them back, so the logits, the loss and the labels are whole on every worker.
   */
  sequenceParallel?: boolean;
  /**
   * The stage's expert-parallel group (expert-parallel.ts): its MoE blocks' experts are split over it, each member
   * runs its own sequences of every micro-batch; the dense parameters' gradients are summed over it (sumGradsOverEp).
   */
  ep?: EpGroup;
}

export type ParamValues = Record<string, Float32Array | Float64Array>;

export class Stage {
  readonly index: number;
  readonly isFirst: boolean;
  readonly isLast: boolean;
  readonly blockRange: readonly [number, number];
  readonly params: Param[];
  readonly layers: readonly Layer[];
  /** Columns of the input: indices per row on an embedding stage, else features. */
  readonly inCols: number;
  readonly inDType: 'f32' | 'i32';
  /** Columns of the output activation (the last stage: the logits' width, for infer). */
  readonly outCols: number;
  readonly recompute: boolean;
  /** Output rows per input row: the GPT's first stage turns a sequence into its tokens' rows; else 1 (before sequence parallelism's split: outputRows). */
  readonly rowFactor: number;
  /** Sequence parallelism's split of the token rows between layers: the tp group's size, or 1. */
  readonly rowSplit: number;
  /** The tensor-parallel group this stage's split layers share. */
  readonly tp: TpGroup;
  /**
   * Sequence parallelism: the parameters whose gradients hold this worker's rows' part only (its GPT blocks'
   * LayerNorms), summed over the tp group by sumGradsOverTp before the update policy reads them; else empty.
   */
  readonly gradsSummedOverTp: readonly Param[];
  /** The expert-parallel group; with more than one member, every parameter but the experts' pieces is summed over it (sumGradsOverEp). */
  readonly ep: EpGroup;
  readonly gradsSummedOverEp: readonly Param[];

  private readonly loss: SoftmaxCrossEntropy | null;
  private readonly stashes = new Map<number, Stash>();
  /** The MoE layers' routing counts of each saving forward since the last takeRouteLoads. */
  private routeLoads: StageRouteLoad[] = [];

  constructor(
    private readonly be: Backend,
    readonly model: ModelSpec,
    stageIndex: number,
    blockRange: [number, number],
    seed: number,
    opts: StageOptions = {},
  ) {
    validateModelSpec(model);
    this.index = requireInt('stageIndex', stageIndex, 0);
    const nb = model.blocks.length;
    if (!Array.isArray(blockRange) || blockRange.length !== 2) throw new ConfigError('blockRange', blockRange, 'must be [start, end)');
    const [start, end] = blockRange;
    requireInt('blockRange[0]', start, 0, nb - 1);
    requireInt('blockRange[1]', end, start + 1, nb);
    requireInt('seed', seed, 0, 0xffffffff);
    this.blockRange = [start, end];
    this.isFirst = start === 0;
    this.isLast = end === nb;
    this.recompute = opts.recompute ?? false;
    this.tp = opts.tp ?? SOLO;
    this.ep = opts.ep ?? SOLO_EP;
    const blocks = model.blocks.slice(start, end);
    const sequenceParallel = (opts.sequenceParallel ?? false) && this.tp.size > 1;
    if (sequenceParallel && !model.blocks.some((b) => b.layers.some((l) => l.kind === 'gpt-block'))) {
      throw new ConfigError('sequenceParallel', true, "splits a GPT's token rows over its tp workers; this model has no transformer blocks");
    }
    this.rowSplit = sequenceParallel ? this.tp.size : 1;
    const layers: Layer[] = [];
    blocks.forEach((b, i) => {
      // The head (the model's last block) stays whole on every tp worker; with sequence parallelism it gathers the rows.
      const tp = start + i === nb - 1 && !sequenceParallel ? undefined : this.tp;
      for (const l of b.layers) if (l.kind !== 'softmax-cross-entropy') layers.push(buildLayer(be, b.name, l, seed, tp, { recomputeAttention: opts.recomputeAttention, sequenceParallel, ep: this.ep }));
    });
    this.layers = layers;
    this.params = layers.flatMap((l) => [...l.params]);
    this.gradsSummedOverTp = layers.flatMap((l) => [...(l.gradsSummedOverTp ?? [])]);
    this.gradsSummedOverEp = this.ep.size > 1 ? this.params.filter((p) => parseEpPieceName(p.name) === null) : [];
    this.loss = this.isLast ? new SoftmaxCrossEntropy(be, `${model.blocks[nb - 1].name}.loss`) : null;
    this.inCols = this.isFirst ? model.input.cols : blockInCols(blocks[0]);
    this.inDType = this.isFirst ? model.input.dtype : 'f32';
    this.outCols = blockOutCols(blocks[blocks.length - 1]);
    this.rowFactor = this.isFirst ? layerRowFactor(blocks[0].layers[0]) : 1;
  }

  /**
   * Rows of the output for `inputRows` rows of input: rowFactor's, and with sequence parallelism this worker's
   * block of them, but on the last stage (the head gathers the whole rows back).
   */
  outputRows(inputRows: number): number {
    const rows = inputRows * this.rowFactor;
    if (this.isFirst && !this.isLast) return rows / this.rowSplit;
    if (this.isLast && !this.isFirst) return rows * this.rowSplit;
    return rows;
  }

  async forward(mb: number, input: Tensor, labels?: Tensor, lossScale?: number): Promise<Tensor> {
    requireInt('mb', mb, 0);
    if (this.stashes.has(mb)) {
      throw new ConfigError('mb', mb, `stage ${this.index} already holds the forward of this micro-batch (run its backward first)`);
    }
    const n = this.outputRows(this.checkInput(input));
    if (this.isLast) this.checkLossArgs(n, labels, lossScale);
    const save = !this.recompute;
    const { out, saved } = await this.run(input, save);
    this.keepRouteLoads(mb);
    if (!this.recompute && !saved.some((s) => s.includes(input))) this.be.dispose(input);
    const stash: Stash = {
      n,
      phase: 'forward',
      input: this.recompute ? input : null,
      labels: null,
      lossScale: lossScale ?? 0,
      saved: save ? saved : null,
      dLogits: null,
      dys: null,
    };
    let result = out;
    if (this.loss && labels && lossScale !== undefined) {
      const { loss, dlogits } = this.loss.forward(out, labels, lossScale);
      this.be.dispose(out);
      if (save) stash.dLogits = dlogits;
      else {
        this.be.dispose(dlogits);
        stash.labels = this.be.clone(labels);
      }
      result = loss;
    }
    this.stashes.set(mb, stash);
    for (const t of tensorsOf(stash)) this.be.tag(t, 'stash');
    return result;
  }

  async backwardInput(mb: number, dOutput: Tensor | null): Promise<Tensor | null> {
    const st = this.stashFor(mb, 'forward');
    if (this.isLast && dOutput !== null) {
      throw new ConfigError('dOutput', dOutput.shape, `must be null on the last stage (stage ${this.index}): the loss gradient is internal`);
    }
    if (!this.isLast) {
      if (dOutput === null || dOutput === undefined) {
        throw new ConfigError('dOutput', dOutput, `must be a gradient tensor [${st.n}, ${this.outCols}] on stage ${this.index}, which is not the last`);
      }
      if (dOutput.dtype !== 'f32' || dOutput.shape.length !== 2 || dOutput.shape[0] !== st.n || dOutput.shape[1] !== this.outCols) {
        throw new ConfigError('dOutput.shape', dOutput.shape, `must be [${st.n}, ${this.outCols}] (f32): the shape of stage ${this.index}'s output for micro-batch ${mb}`);
      }
    }
    let saved: Tensor[][];
    let dy: Tensor;
    if (st.saved) {
      saved = st.saved;
      dy = this.isLast ? (st.dLogits as Tensor) : (dOutput as Tensor);
    } else {
      const r = await this.run(st.input as Tensor, true);
      this.keepRouteLoads(mb);
      saved = r.saved;
      if (this.loss) {
        const { loss, dlogits } = this.loss.forward(r.out, st.labels as Tensor, st.lossScale);
        this.be.dispose(loss);
        this.be.dispose(r.out);
        dy = dlogits;
      } else {
        this.be.dispose(r.out);
        dy = dOutput as Tensor;
      }
    }
    const before = tensorsOf(st, saved);
    const dys: (Tensor | null)[] = new Array<Tensor | null>(this.layers.length).fill(null);
    let cur: Tensor | null = dy;
    for (let i = this.layers.length - 1; i >= 0; i--) {
      const layer = this.layers[i];
      const g = cur as Tensor;
      if (i === 0 && this.isFirst) {
        cur = null;
        if (layer.needsBackwardInput) this.be.dispose(await layer.backwardInput(saved[i], g));
      } else {
        cur = await layer.backwardInput(saved[i], g);
      }
      if (layer.params.length > 0) dys[i] = g;
      else this.be.dispose(g);
    }
    // Keep only what backwardWeight needs: the weight layers' saved tensors and output gradients.
    const keptSaved = saved.map((s, i) => (this.layers[i].params.length > 0 ? s : []));
    const kept = new Set<Tensor>([...keptSaved.flat(), ...dys.filter((t): t is Tensor => t !== null)]);
    for (const t of before) if (!kept.has(t)) this.be.dispose(t);
    st.saved = keptSaved;
    st.dys = dys;
    st.input = null;
    st.labels = null;
    st.dLogits = null;
    st.phase = 'input-done';
    for (const t of kept) this.be.tag(t, 'stash');
    return cur;
  }

  backwardWeight(mb: number): void {
    const st = this.stashFor(mb, 'input-done');
    const saved = st.saved as Tensor[][];
    const dys = st.dys as (Tensor | null)[];
    this.layers.forEach((layer, i) => {
      const dy = dys[i];
      if (dy && layer.backwardWeight) layer.backwardWeight(saved[i], dy);
    });
    for (const t of tensorsOf(st)) this.be.dispose(t);
    this.stashes.delete(mb);
  }

  /**
   * Sums gradsSummedOverTp's gradients over the tp group in one exchange, in member order, so every member's copy
   * holds the same bits (Megatron's all-reduce of the sequence-parallel LayerNorms' gradients before the optimizer).
   * The executor calls it after the backward where the update policy next reads the stage's gradients
   * (schedule/registry.ts gradSumEvery): once a step under a flush. Nothing without such parameters.
   */
  async sumGradsOverTp(): Promise<void> {
    await sumGradsOver(this.be, this.gradsSummedOverTp, this.tp);
  }

  /**
   * Sums gradsSummedOverEp's gradients (the dense ones) over the ep group in one exchange, in member order: each
   * member computed them over its own sequences, so the sum is the micro-batches' whole gradient, the same bits on
   * every member. Called where sumGradsOverTp is (the update policy next reads the gradients). Nothing with ep = 1.
   */
  async sumGradsOverEp(): Promise<void> {
    await sumGradsOver(this.be, this.gradsSummedOverEp, this.ep);
  }

  async backward(mb: number, dOutput: Tensor | null): Promise<Tensor | null> {
    const dx = await this.backwardInput(mb, dOutput);
    this.backwardWeight(mb);
    return dx;
  }

  /**
   * Forward without a stash or loss, for evaluation and sampling: returns the
   * output activation (the last stage: the logits). Does not take `input`.
   */
  async infer(input: Tensor): Promise<Tensor> {
    this.checkInput(input);
    return (await this.run(input, false)).out;
  }

  /** Zeroes the gradients (giving back their storage where ZeRO freed it: Backend.allocStorage). */
  zeroGrads(): void {
    for (const p of this.params) {
      if (!this.be.hasStorage(p.grad)) this.be.allocStorage(p.grad, 'grads');
      this.be.fill(p.grad, 0);
    }
    for (const l of this.layers) if (l.auxLoss) this.be.fill(l.auxLoss, 0);
  }

  /** Whether a layer adds a loss term of its own (an MoE block's aux loss). */
  get hasAuxLoss(): boolean {
    return this.layers.some((l) => l.auxLoss);
  }

  /** into += the aux loss terms the layers accumulated since the last call (or zeroGrads); zeroes them. */
  takeAuxLoss(into: Tensor): void {
    takeAuxLosses(this.be, this.layers, into);
  }

  /** The MoE layers' routing counts per saving forward since the last call (recompute: the recomputed one's), in order; the caller disposes them. */
  takeRouteLoads(): StageRouteLoad[] {
    const out = this.routeLoads;
    this.routeLoads = [];
    return out;
  }

  private keepRouteLoads(mb: number): void {
    this.routeLoads.push(...routeLoadsOf(this.layers, mb));
  }

  /** Bytes (4 per element, as float32) held on the device in the stashes of all in-flight micro-batches (a swapped one's are on the host). */
  stashBytes(): number {
    let bytes = 0;
    for (const st of this.stashes.values()) if (!st.away) for (const t of tensorsOf(st)) bytes += 4 * t.size;
    return bytes;
  }

  /** Swapping: the distinct tensors micro-batch `mb`'s stash holds after its forward (to copy to the host). */
  stashTensors(mb: number): Tensor[] {
    return [...tensorsOf(this.stashFor(mb, 'forward'))];
  }

  /** Swapping: micro-batch `mb`'s stash with each tensor replaced through `map`; `away`: it is on the host now (its backward refuses it). */
  remapStash(mb: number, map: ReadonlyMap<Tensor, Tensor>, away: boolean): void {
    const st = this.stashes.get(mb);
    if (!st) throw new ConfigError('mb', mb, `stage ${this.index} holds no stash of this micro-batch`);
    remapStash(st, map, away);
  }

  liveStashes(): number {
    return this.stashes.size;
  }

  async readParams(): Promise<ParamValues> {
    return this.readAll((p) => p.value);
  }

  async readGrads(): Promise<ParamValues> {
    return this.readAll((p) => p.grad);
  }

  /** Throws a ConfigError unless `values` holds every parameter of this stage (by global name) with its size. */
  checkParams(values: Readonly<Record<string, ArrayLike<number>>>): void {
    for (const p of this.params) {
      const v = values[p.name];
      if (v === undefined) throw new ConfigError(`params["${p.name}"]`, 'missing', `must be given: stage ${this.index} holds it`);
      if (v.length !== p.value.size) {
        throw new ConfigError(`params["${p.name}"].length`, v.length, `must be ${p.value.size} (shape [${p.value.shape.join(', ')}])`);
      }
    }
  }

  /**
   * Sets this stage's parameters from `values` (by global name; names of other
   * stages' parameters are ignored). Every parameter of this stage must be there.
   */
  loadParams(values: Readonly<Record<string, ArrayLike<number>>>): void {
    this.checkParams(values);
    for (const p of this.params) {
      // A ZeRO-3 worker between its gathers holds no storage for the whole weight: a loaded one gets it back.
      if (!this.be.hasStorage(p.value)) this.be.allocStorage(p.value, 'weights');
      const t = this.be.tensor(values[p.name], p.value.shape);
      this.be.copyInto(p.value, t);
      this.be.dispose(t);
    }
  }

  dispose(): void {
    for (const st of this.stashes.values()) if (!st.away) for (const t of tensorsOf(st)) this.be.dispose(t);
    this.stashes.clear();
    for (const p of this.params) disposeParam(this.be, p);
    for (const l of this.layers) if (l.auxLoss) this.be.dispose(l.auxLoss);
    for (const l of this.takeRouteLoads()) this.be.dispose(l.counts);
  }

  // --- internals ---

  /** Runs the layers; disposes intermediates nobody saved, never `x`. */
  private async run(x: Tensor, save: boolean): Promise<{ out: Tensor; saved: Tensor[][] }> {
    let cur = x;
    const saved: Tensor[][] = [];
    for (const layer of this.layers) {
      const f = await layer.forward(cur, save);
      saved.push(f.saved);
      if (cur !== x && !f.saved.includes(cur)) this.be.dispose(cur);
      cur = f.y;
    }
    return { out: cur, saved };
  }

  private checkInput(input: Tensor): number {
    const field = `stage ${this.index} input`;
    if (!input || !Array.isArray(input.shape)) throw new ConfigError(field, input, 'must be a tensor');
    const want = this.isFirst && this.inDType === 'i32' ? `[rows, ${this.inCols}] context indices` : `[rows, ${this.inCols}]`;
    if (input.shape.length !== 2 || input.shape[1] !== this.inCols) throw new ConfigError(`${field}.shape`, input.shape, `must be ${want}`);
    if (input.dtype !== this.inDType) throw new ConfigError(`${field}.dtype`, input.dtype, `must be ${this.inDType}`);
    return input.shape[0];
  }

  private checkLossArgs(n: number, labels: Tensor | undefined, lossScale: number | undefined): void {
    if (!labels) throw new ConfigError('labels', labels, `must be given to the last stage (stage ${this.index}): i32 [${n}]`);
    if (labels.dtype !== 'i32' || labels.shape.length !== 1 || labels.shape[0] !== n) {
      throw new ConfigError('labels.shape', labels.shape, `must be i32 [${n}] (one label per input row)`);
    }
    requireFinite('lossScale', lossScale, { min: 0, exclusiveMin: true });
  }

  private stashFor(mb: number, phase: Stash['phase']): Stash {
    requireInt('mb', mb, 0);
    const st = this.stashes.get(mb);
    if (!st) throw new ConfigError('mb', mb, `stage ${this.index} holds no forward of this micro-batch (run forward first)`);
    if (st.away) throw new ConfigError('mb', mb, `stage ${this.index}'s stash of this micro-batch is in host memory: swap it back in first`);
    if (st.phase !== phase) {
      const rule = phase === 'forward' ? 'has already run backwardInput for this micro-batch' : 'must run backwardInput for this micro-batch before backwardWeight';
      throw new ConfigError('mb', mb, `stage ${this.index} ${rule}`);
    }
    return st;
  }

  /** Every distinct tensor a stash holds (optionally with a freshly recomputed `saved`). */

  private async readAll(pick: (p: Param) => Tensor): Promise<ParamValues> {
    // Every parameter read at once: one wait for the device's queue, not one per parameter.
    const values = await Promise.all(this.params.map((p) => this.be.read(pick(p))));
    const out: ParamValues = {};
    this.params.forEach((p, i) => {
      const v = values[i];
      out[p.name] = v instanceof Int32Array ? Float64Array.from(v) : v;
    });
    return out;
  }
}
