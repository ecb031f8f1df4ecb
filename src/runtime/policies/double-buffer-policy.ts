/**
 * PipeDream-2BW's update policy ('double-buffered'; Narayanan et al., "Memory-
 * Efficient Pipeline-Parallel DNN Training", ICML 2021, §3.1): 1F1B over one
 * stream of micro-batches with no flush, and at most two weight versions per
 * stage.
 *
 * Micro-batches are numbered over the whole stream (0-based `mb` here; the
 * paper's k = mb + 1) and fall into blocks of m, the run's micro-batches per
 * step: block t is step t's batch. Micro-batch mb runs its forward and its
 * backward with weight version max(⌊mb / m⌋ − 1, 0). A stage accumulates the
 * gradients of block t and, after its last backward of the block, applies
 * them to its latest weights: W(t+1) = W(t) − ν·∇f(W(t−1)), the optimizer's
 * normal step (AdamW's moments too) on W(t) with a gradient one version stale,
 * at step t's learning rate. Each micro-batch's loss is divided by its step's
 * batch targets (registry UPDATE_WINDOWS lossOver 'step'), so the accumulated
 * gradient is the block's batch mean, as a flush's is.
 *
 * A stage holds its latest version in its parameters and the one before it in
 * `older`. When an action needs the older version, the parameters' value
 * tensors and `older`'s are exchanged (references, nothing copied: the layers
 * read `param.value` at every call) and exchanged back after it; so a stage
 * never holds more than two versions, and nothing transient. At a block's end
 * its micro-batches are done on this stage, so the version before the latest
 * is no longer needed: `older` takes a copy of the latest, which the optimizer
 * then moves on. That the needed version is always one of the two is what
 * m ≥ p buys (the registry refuses less): stage r runs p − r − 1 forwards ahead.
 *
 * With dp replicas (the paper's hybrid of 2BW and data parallelism, §3.1 and
 * §4): each replica trains its rows of every micro-batch, and at a block's
 * end, before the update, the stage's gradients are summed over its replicas
 * by the flush's ring all-reduce (flush.ts sumOverReplicas; the ring of step
 * = the block), so every replica takes the same update. The worker waits for
 * it: the next block's micro-batches would not need the new version (they run
 * on the one before), but the optimizer writes the live weights, which an
 * action running on the older version has exchanged out; so nothing overlaps
 * here, and the simulator plays it the same way (simulate-blocks.ts).
 *
 * Nothing here depends on when an action runs, only on its micro-batch: so a
 * stage's state as it ends block B − 1 (W(B), W(B − 1), the optimizer's) is a
 * checkpoint a new stream of steps B, B + 1, … resumes exactly
 * (stream-checkpoint.ts; StreamStart below, readPrevious and loadPrevious).
 */
import type { Backend, Tensor } from '../../nn/backend.ts';
import { createOptimizer, optimizerStateBytes, type Optimizer, type OptimizerState } from '../../nn/optimizer.ts';
import type { Param } from '../../nn/param.ts';
import { lrAt, type TrainConfig } from '../../nn/train-config.ts';
import type { Action } from '../../schedule/types.ts';
import { sumOverReplicas, type DataParallelParts } from './flush.ts';
import type { StepLog } from '../comm/index.ts';
import { wholePieces, type OptimizerPieces, type PolicyReport, type UpdatableStage, type UpdatePolicy } from './policy.ts';
import type { VersionRecord } from './weight-stash.ts';

/**
 * Where a stream starts and when it is told of its block ends. A stream resumed from a checkpoint of step B
 * (stream-checkpoint.ts) starts at block `firstStep` = B: its micro-batches are numbered from 0 in its own window,
 * and mb of the window is micro-batch B·m + mb of the run, whose version, learning rate and update follow from that.
 */
export interface StreamStart {
  /** The run's step the window's first block is (0 for a stream from the start). */
  firstStep: number;
  /** After the update that ends block stepsDone − 1 on a stage (its state is then step stepsDone's; `a` its last backward); awaited. */
  blockEnded?: (stepsDone: number, a: Action, log: StepLog) => Promise<void>;
}

/** The weight version micro-batch `mb` (0-based over the stream) runs forward and backward with: the one before its block's. */
export function doubleBufferedVersion(mb: number, microbatchesPerStep: number): number {
  return Math.max(Math.floor(mb / microbatchesPerStep) - 1, 0);
}

interface OwnStage {
  stage: UpdatableStage;
  opt: Optimizer;
  /** Updates applied so far: the version the parameters hold between actions. */
  latest: number;
  /** Version latest − 1, one tensor per parameter (null before the first update). */
  older: Tensor[] | null;
  /** The version each micro-batch in flight ran its forward with. */
  forward: Map<number, number>;
}

/** Exchanges the parameters' value tensors with `tensors` (by reference; twice restores both). */
function exchange(params: readonly Param[], tensors: Tensor[]): void {
  params.forEach((p, i) => {
    const t = p.value;
    (p as { value: Tensor }).value = tensors[i];
    tensors[i] = t;
  });
}

export class DoubleBufferPolicy implements UpdatePolicy {
  private readonly perStage = new Map<number, OwnStage>();
  private versions: VersionRecord[] = [];

  constructor(
    private readonly be: Backend,
    stages: ReadonlyMap<number, UpdatableStage>,
    private readonly train: TrainConfig,
    private readonly microbatchesPerStep: number,
    /** dp > 1: the replicas' ring, over which each block's gradients are summed before its update. */
    private readonly replicas: DataParallelParts | null = null,
    private readonly start: StreamStart = { firstStep: 0 },
  ) {
    // A resumed stream's stages hold version firstStep (loadPrevious gives them the one before it).
    for (const [s, stage] of stages) this.perStage.set(s, { stage, opt: createOptimizer(be, stage.params, train), latest: start.firstStep, older: null, forward: new Map() });
  }

  /** Micro-batch `mb` of the window as the run's: its blocks are numbered from the window's first step. */
  private runMb(mb: number): number {
    return this.start.firstStep * this.microbatchesPerStep + mb;
  }

  async apply<T>(a: Action, compute: () => Promise<T>): Promise<T> {
    const own = this.perStage.get(a.stage);
    if (!own) throw new Error(`stage ${a.stage} is not held by this rank`);
    if (a.op !== 'F' && a.op !== 'B') throw new Error('the PipeDream-2BW runtime takes full backwards (B) only');
    const m = this.microbatchesPerStep;
    const v = doubleBufferedVersion(this.runMb(a.mb), m);
    const result = await this.withVersion(own, a, v, compute);
    if (a.op === 'F') {
      own.forward.set(a.mb, v);
      return result;
    }
    const fv = own.forward.get(a.mb);
    if (fv === undefined) throw new Error(`stage ${a.stage} ran the backward of micro-batch ${a.mb} before its forward`);
    own.forward.delete(a.mb);
    this.versions.push({ stage: a.stage, mb: a.mb, forward: fv, backward: v, current: own.latest });
    return result;
  }

  /** After the stage's last backward of a block: its gradients summed over the replicas (dp > 1), then its update. */
  async afterAction(a: Action, log: StepLog): Promise<void> {
    const m = this.microbatchesPerStep;
    if (a.op !== 'B' || a.mb % m !== m - 1) return;
    const own = this.perStage.get(a.stage) as OwnStage;
    const block = Math.floor(this.runMb(a.mb) / m);
    if (this.replicas) await sumOverReplicas(this.be, this.replicas, a.stage, own.stage.params, block, log);
    this.update(own, a.stage, block);
    // Every stage of a rank has ended the block (2BW runs one stage per rank): the rank's state is step block + 1's.
    if ([...this.perStage.values()].every((o) => o.latest > block)) await this.start.blockEnded?.(block + 1, a, log);
  }

  /** Runs `compute` with version `v` in the parameters: the latest as they are, the one before exchanged in for it. */
  private async withVersion<T>(own: OwnStage, a: Action, v: number, compute: () => Promise<T>): Promise<T> {
    if (v === own.latest) return compute();
    const older = own.older;
    if (v !== own.latest - 1 || !older) {
      throw new Error(
        `stage ${a.stage}: micro-batch ${a.mb} (${a.op}) needs weight version ${v}, but the stage holds ${own.latest > 0 ? `versions ${own.latest - 1} and ` : 'version '}${own.latest} only (PipeDream-2BW needs m ≥ p)`,
      );
    }
    exchange(own.stage.params, older);
    try {
      return await compute();
    } finally {
      exchange(own.stage.params, older);
    }
  }

  /** After the stage's last backward of block `block`: W(block+1) = the optimizer's step on W(block) with the block's gradients (of W(block−1)). */
  private update(own: OwnStage, stage: number, block: number): void {
    if (own.latest !== block) throw new Error(`stage ${stage} finished block ${block} holding weight version ${own.latest}; blocks must end in order`);
    const params = own.stage.params;
    if (own.older) params.forEach((p, i) => this.be.copyInto((own.older as Tensor[])[i], p.value));
    else own.older = params.map((p) => this.be.memory.scope('weights', () => this.be.clone(p.value)));
    own.opt.lr = lrAt(this.train, block);
    own.opt.step(1);
    own.stage.zeroGrads();
    own.latest++;
  }

  endStep(): void {}

  /** Between blocks: every stage's optimizer state (its step count is the updates applied, the blocks done). */
  async readOptimizer(): Promise<OptimizerPieces> {
    const parts = await Promise.all([...this.perStage.values()].map((own) => wholePieces(own.opt, own.stage.params)));
    return { name: parts[0].name, steps: parts[0].steps, pieces: parts.flatMap((p) => p.pieces) };
  }

  loadOptimizer(state: OptimizerState<ArrayLike<number>>): void {
    for (const own of this.perStage.values()) own.opt.loadState(state);
  }

  /** The version before the latest, by parameter name (none before the first update). */
  async readPrevious(): Promise<Record<string, Float32Array | Float64Array> | null> {
    const out: Record<string, Float32Array | Float64Array> = {};
    for (const own of this.perStage.values()) {
      if (!own.older) return null;
      const older = own.older;
      const values = await Promise.all(older.map((t) => this.be.read(t)));
      own.stage.params.forEach((p, i) => {
        const v = values[i];
        out[p.name] = v instanceof Int32Array ? Float64Array.from(v) : v;
      });
    }
    return out;
  }

  /** A resumed stream (firstStep ≥ 1): the version before the one its parameters were loaded with, by name; checked whole before anything is set. */
  loadPrevious(previous: Readonly<Record<string, ArrayLike<number>>>): void {
    for (const own of this.perStage.values()) {
      for (const p of own.stage.params) {
        const v = Object.hasOwn(previous, p.name) ? previous[p.name] : undefined;
        if (!v || v.length !== p.value.size) throw new Error(`the previous weight version of "${p.name}" holds ${v ? v.length : 'no'} values; the stage's parameter has ${p.value.size}`);
      }
    }
    for (const own of this.perStage.values()) {
      for (const t of own.older ?? []) this.be.dispose(t);
      own.older = own.stage.params.map((p) => this.be.memory.scope('weights', () => this.be.tensor(previous[p.name], p.value.shape)));
    }
  }

  /**
   * The version each backward used (`versions`), and per stage the most versions it held with their bytes
   * beyond the live weights (`weightStash`: 2 and one copy of the stage's weights once a block has ended).
   * Held: the live weights and the older version, the gradients, the optimizer state; nothing transient.
   */
  report(): PolicyReport {
    const weightStash: Record<number, { versions: number; bytes: number }> = {};
    let values = 0, extra = 0, optimizer = 0;
    for (const [s, own] of this.perStage) {
      const n = own.stage.params.reduce((k, p) => k + p.value.size, 0);
      const olderBytes = own.older ? 4 * n : 0;
      weightStash[s] = { versions: own.older ? 2 : 1, bytes: olderBytes };
      values += n;
      extra += olderBytes;
      optimizer += optimizerStateBytes(own.stage.params, this.train.optimizer);
    }
    const versions = this.versions;
    this.versions = [];
    return { versions, weightStash, optimizerBytes: optimizer, held: { weights: 4 * values + extra, grads: 4 * values, optimizer, transient: 0 } };
  }

  dispose(): void {
    for (const own of this.perStage.values()) {
      for (const t of own.older ?? []) this.be.dispose(t);
      own.older = null;
      own.opt.dispose();
    }
  }
}
