/**
 * PipeDream's update policy ('stash-and-update-after-backward'): each stage has
 * its own optimizer and applies it after every backward; a backward runs with
 * the weight version its forward used (weight-stash.ts). No flush: the step
 * ends with nothing left to do.
 */
import type { Backend } from '../../nn/backend.ts';
import { createOptimizer, optimizerStateBytes, type Optimizer } from '../../nn/optimizer.ts';
import { lrAt, type TrainConfig } from '../../nn/train-config.ts';
import type { Action } from '../../schedule/types.ts';
import type { OptimizerPieces, PolicyReport, UpdatableStage, UpdatePolicy } from './policy.ts';
import { WeightStash, type VersionRecord } from './weight-stash.ts';

const NO_ASYNC_STATE = "a run's state is kept for synchronous schedules only (PipeDream's stream and weight stash are not)";

export class StashPolicy implements UpdatePolicy {
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

  async apply<T>(a: Action, compute: () => Promise<T>): Promise<T> {
    const own = this.perStage.get(a.stage);
    if (!own) throw new Error(`stage ${a.stage} is not held by this rank`);
    if (a.op === 'F') {
      own.stash.onForward(a.mb);
      return compute();
    }
    if (a.op !== 'B') throw new Error('the asynchronous PipeDream runtime takes full backwards (B) only');
    const r = await own.stash.withForwardWeights(a.mb, compute);
    this.versions.push(r.record);
    own.opt.lr = lrAt(this.train, Math.floor(a.mb / this.microbatchesPerStep));
    own.opt.step(1);
    own.stage.zeroGrads();
    own.stash.version++;
    return r.result;
  }

  endStep(): void {}

  readOptimizer(): Promise<OptimizerPieces> {
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
    // Held: the live weights and gradients, the stashed versions beside them, and each stage's optimizer state (4 bytes a value).
    let values = 0, stashed = 0, optimizer = 0;
    for (const [s, own] of this.perStage) {
      const n = own.stage.params.reduce((m, p) => m + p.value.size, 0);
      values += n;
      stashed += weightStash[s].bytes;
      optimizer += optimizerStateBytes(own.stage.params, this.train.optimizer);
    }
    return { versions, weightStash, optimizerBytes: optimizer, held: { weights: 4 * values + stashed, grads: 4 * values, optimizer, transient: 0 } };
  }

  dispose(): void {
    for (const own of this.perStage.values()) {
      own.stash.dispose();
      own.opt.dispose();
    }
  }
}
