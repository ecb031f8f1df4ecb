/**
 * How a rank updates its weights, as its schedule's registry entry says
 * (src/schedule/registry.ts, `update`). The executor calls a policy through
 * one hook, `apply`, around every compute action, `afterAction` once an
 * action's kernels are done, and `endStep` after the step's last action;
 * nothing else in the runtime asks which schedule runs.
 *
 * - 'flush': gradients accumulate over the step's micro-batches; one optimizer
 *   step over all of the rank's stages at the end of the step. With dp > 1
 *   replicas the flush sums each stage's gradients over its replicas first
 *   (data-parallel.ts: a ring all-reduce, or ZeRO-1's sharded update).
 * - 'stash-and-update-after-backward' (PipeDream): each stage has its own
 *   optimizer and applies it after every backward; a backward runs with the
 *   weight version its forward used (weight-stash.ts).
 */
import type { Backend } from '../nn/backend.ts';
import { createOptimizer, optimizerStateBytes, type Optimizer, type OptimizerState } from '../nn/optimizer.ts';
import type { Param } from '../nn/param.ts';
import { lrAt, type TrainConfig } from '../nn/train-config.ts';
import type { UpdatePolicyName } from '../schedule/registry.ts';
import type { Action } from '../schedule/types.ts';
import { DataParallelFlush, type DataParallelParts } from './data-parallel.ts';
import type { RankState } from './rank-host.ts';
import type { StepLog } from './transport.ts';
import { WeightStash, type VersionRecord } from './weight-stash.ts';

/** What a policy adds to a step's result. */
export interface PolicyReport {
  /** PipeDream: the weight version each backward used. */
  versions?: VersionRecord[];
  /** PipeDream: the most weight versions (and their bytes) each stage held. */
  weightStash?: Record<number, { versions: number; bytes: number }>;
  /** Bytes of optimizer state this worker holds (all of its stages', or its ZeRO-1 shards'). */
  optimizerBytes?: number;
}

/** The stages a policy updates: their parameters, and how to zero their gradients. */
export interface UpdatableStage {
  readonly params: readonly Param[];
  zeroGrads(): void;
}

export interface UpdatePolicy {
  /** Runs one compute action; `compute` issues its kernels. */
  apply<T>(a: Action, compute: () => T): T;
  /** After action `a`'s kernels are done (a data-parallel flush may start a stage's all-reduce here). */
  afterAction?(a: Action, log: StepLog): void;
  /** After the step's last action (and its sends). */
  endStep(step: number, log: StepLog): void | Promise<void>;
  report(): PolicyReport;
  /** The optimizer state it holds, as pieces of parameters (between steps: a checkpoint). */
  readOptimizer(): Promise<RankState['optimizer']>;
  /** Sets the optimizer state it holds from a run's whole state, by parameter name (before the first step: a resume). */
  loadOptimizer(state: OptimizerState<ArrayLike<number>>): void;
  dispose(): void;
}

/** An optimizer's state over whole parameters, as pieces [0, size). */
export async function wholePieces(opt: Optimizer, params: readonly Param[]): Promise<RankState['optimizer']> {
  const { name, steps, slots } = await opt.readState();
  return { name, steps, pieces: params.map((p) => ({ param: p.name, lo: 0, hi: p.value.size, slots: slots[p.name] })) };
}

class FlushPolicy implements UpdatePolicy {
  private readonly opt: Optimizer;

  constructor(
    be: Backend,
    private readonly stages: ReadonlyMap<number, UpdatableStage>,
    private readonly train: TrainConfig,
  ) {
    this.opt = createOptimizer(be, [...stages.values()].flatMap((s) => s.params), train);
  }

  apply<T>(_a: Action, compute: () => T): T {
    return compute();
  }

  endStep(step: number): void {
    this.opt.lr = lrAt(this.train, step);
    this.opt.step(1);
    for (const st of this.stages.values()) st.zeroGrads();
  }

  report(): PolicyReport {
    return { optimizerBytes: optimizerStateBytes(this.params, this.train.optimizer) };
  }

  private get params(): Param[] {
    return [...this.stages.values()].flatMap((s) => s.params);
  }

  readOptimizer(): Promise<RankState['optimizer']> {
    return wholePieces(this.opt, this.params);
  }

  loadOptimizer(state: OptimizerState<ArrayLike<number>>): void {
    this.opt.loadState(state);
  }

  dispose(): void {
    this.opt.dispose();
  }
}

const NO_ASYNC_STATE = "a run's state is kept for synchronous schedules only (PipeDream's stream and weight stash are not)";

class StashPolicy implements UpdatePolicy {
  private readonly perStage = new Map<number, { opt: Optimizer; stash: WeightStash; stage: UpdatableStage }>();
  private versions: VersionRecord[] = [];

  constructor(
    be: Backend,
    stages: ReadonlyMap<number, UpdatableStage>,
    private readonly train: TrainConfig,
    private readonly microbatchesPerStep: number,
  ) {
    for (const [s, stage] of stages) {
      this.perStage.set(s, { opt: createOptimizer(be, stage.params, train), stash: new WeightStash(be, s, stage.params), stage });
    }
  }

  apply<T>(a: Action, compute: () => T): T {
    const own = this.perStage.get(a.stage);
    if (!own) throw new Error(`stage ${a.stage} is not held by this rank`);
    if (a.op === 'F') {
      own.stash.onForward(a.mb);
      return compute();
    }
    if (a.op !== 'B') throw new Error('the asynchronous PipeDream runtime takes full backwards (B) only');
    const r = own.stash.withForwardWeights(a.mb, compute);
    this.versions.push(r.record);
    own.opt.lr = lrAt(this.train, Math.floor(a.mb / this.microbatchesPerStep));
    own.opt.step(1);
    own.stage.zeroGrads();
    own.stash.version++;
    return r.result;
  }

  endStep(): void {}

  readOptimizer(): Promise<RankState['optimizer']> {
    return Promise.reject(new Error(NO_ASYNC_STATE));
  }

  loadOptimizer(): void {
    throw new Error(NO_ASYNC_STATE);
  }

  report(): PolicyReport {
    const weightStash: Record<number, { versions: number; bytes: number }> = {};
    for (const [s, own] of this.perStage) weightStash[s] = own.stash.peak();
    const versions = this.versions;
    this.versions = [];
    return { versions, weightStash };
  }

  dispose(): void {
    for (const own of this.perStage.values()) {
      own.stash.dispose();
      own.opt.dispose();
    }
  }
}

export function createUpdatePolicy(
  name: UpdatePolicyName,
  be: Backend,
  stages: ReadonlyMap<number, UpdatableStage>,
  train: TrainConfig,
  dataParallel?: DataParallelParts,
): UpdatePolicy {
  switch (name) {
    case 'flush':
      return dataParallel && dataParallel.dp > 1 ? new DataParallelFlush(be, stages, train, dataParallel) : new FlushPolicy(be, stages, train);
    case 'stash-and-update-after-backward':
      return new StashPolicy(be, stages, train, train.microbatches);
  }
}
