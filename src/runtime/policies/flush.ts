/**
 * The end of a step for every synchronous schedule ('flush' in the registry):
 * the one place where a step's weight update happens. Gradients accumulate over
 * the step's micro-batches; then, for each of the worker's stages:
 *
 * 1. gather: its gradients are read off the device as one vector;
 * 2. collectives over the stage's dp group (the mesh, src/schedule/mesh.ts):
 *    a ring all-reduce sums them over the dp workers that hold the stage
 *    (ring-allreduce.ts; the loss scale is 1 / the whole step's targets, so the
 *    sum is the one-device gradient) — or, with ZeRO-1, the ring's
 *    reduce-scatter leaves each worker one summed chunk;
 * 3. the update: the optimizer over the whole stage, or ZeRO-1's shard update of
 *    that chunk with its shard of the optimizer state (zero-shard.ts), then the
 *    ring's all-gather spreads the updated weights;
 * 4. write back onto the device, and zero the gradients. The write-back is
 *    queued, not waited for (the CPU reads nothing of it; the queue runs it
 *    before the update and the next step that use it): a stage's collective
 *    costs its worker one wait, the read of its gradients.
 * A schedule with model copies (DualPipe) sums each stage over its copies
 * (`beforeUpdate`, copy-sum.ts) once the step's dp collectives are done, before
 * the update. With ZeRO-1 beside the copies (DeepSeek-V3's setting) a stage's
 * collective stops after its reduce-scatter; at the step's end each owned chunk
 * is summed with its other copy's, then updated and all-gathered.
 * With one replica (dp = 1) steps 1, 2 and 4's write-back fall away: the
 * optimizer steps the rank's stages in place.
 *
 * Overlap (as DDP does it): a stage's collective starts as soon as that stage's
 * last backward (B, or W when split) of the step is done, while the worker's
 * other stages may still compute. Without overlap, no collective starts before
 * every worker of the mesh has finished its actions (mesh-control.ts barrier).
 * A worker's stages share its one ring link: their collectives run one after
 * another. Every part is logged as a 'collective' interval of the step.
 *
 * This module knows the mesh only through DataParallelParts (its ring and its
 * barrier) and nothing of hosts or faults: fault injection reaches it through
 * the `beforeExchange` hook the rank's composition (rank-runtime.ts) supplies.
 */
import type { Backend, Tensor } from '../../nn/backend.ts';
import { createOptimizer, optimizerStateBytes, type Optimizer, type OptimizerState } from '../../nn/optimizer.ts';
import type { Param } from '../../nn/param.ts';
import { lrAt, type TrainConfig } from '../../nn/train-config.ts';
import type { Action } from '../../schedule/types.ts';
import type { ReshardMode, ZeroStage } from '../../config/run-config.ts';
import { epochMs } from '../comm/index.ts';
import type { MeshControlClient } from '../comm/index.ts';
import { wholePieces, type OptimizerPieces, type PolicyReport, type UpdatableStage, type UpdatePolicy } from './policy.ts';
import { allGather, allReduce, reduceScatter, type RingLink, type Vector } from '../comm/index.ts';
import type { StepLog } from '../comm/index.ts';
import { ZeroShard } from './zero-shard.ts';
import { OffloadedStage, offloadedPieces } from './offload.ts';
import { readVector, writeVector } from '../comm/index.ts';

/** The sum over a schedule's model copies (copy-sum.ts): of the stages' gradients, or of `chunks` (ZeRO's owned chunks by stage) in place. */
export type SumCopies = (step: number, log: StepLog, chunks?: ReadonlyMap<number, Vector>) => Promise<void>;

export interface DataParallelParts {
  dp: number;
  replica: number;
  zero: ZeroStage;
  /** ZeRO-3: free a stage's gathered weights after the step ('step') or after every action ('microbatch'). */
  reshard: ReshardMode;
  /** ZeRO-3: start the next gather while the current action computes. */
  prefetch: boolean;
  overlap: boolean;
  /** This worker's actions in a step (to know when each stage's last backward is done). */
  order: readonly Action[];
  /** The ring successor (the intervals' peer). */
  next: number;
  /** The ring of stage `stage`'s collective in step `step`. */
  ring(stage: number, step: number, hooks: Pick<RingLink, 'onExchange' | 'beforeExchange'>): RingLink;
  /** The barrier (overlap off) and the status line to the coordinator. */
  control: MeshControlClient | null;
  /** Ends the worker's other waits when a collective fails. */
  onFailure(e: Error): void;
  /** Fault injection: called before every exchange of a stage's collective. */
  beforeExchange?(stage: number, step: number, exchange: number): void;
  /** Fault injection (ZeRO-3): true where action `a`'s gathered weights are to be left unwritten (fault-spec.ts 'skip-gather'). */
  skipGather?(a: Action, step: number): boolean;
}

export class Flush implements UpdatePolicy {
  /** Backwards (B and W) each stage runs in a step, and those left in this step. */
  private readonly backwards = new Map<number, number>();
  private readonly left = new Map<number, number>();
  private readonly started = new Set<number>();
  /** The worker's ring link: its stages' collectives, one after another. */
  private link: Promise<void> = Promise.resolve();
  private failure: Error | null = null;
  private readonly opt: Optimizer | null;
  private readonly shards = new Map<number, ZeroShard>();
  /** ZeRO-Offload without ZeRO: each stage's optimizer on the host. */
  private readonly offloaded = new Map<number, OffloadedStage>();
  /** ZeRO-1 beside model copies: each stage's vector after its reduce-scatter, and its ring, until the step's end. */
  private readonly scattered = new Map<number, { ring: RingLink; x: Vector }>();
  private readonly parts: DataParallelParts;

  constructor(
    private readonly be: Backend,
    private readonly stages: ReadonlyMap<number, UpdatableStage>,
    private readonly train: TrainConfig,
    private readonly mesh: DataParallelParts | null,
    /**
     * Before the update, after the step's collectives: the sum over the model copies (copy-sum.ts), if any; of the
     * stages' gradients on the device, or (ZeRO-1) of the owned chunks of `chunks`, in place.
     */
    private readonly beforeUpdate: SumCopies | null = null,
    /** ZeRO-Offload: the optimizer state on the host, the step on the CPU (offload.ts); ZeRO-1: the worker's shard only. */
    offload = false,
  ) {
    const parts = mesh ?? LOCAL;
    this.parts = parts;
    for (const a of parts.order) if (a.op === 'B' || a.op === 'W') this.backwards.set(a.stage, (this.backwards.get(a.stage) ?? 0) + 1);
    this.resetStep();
    if (parts.zero === 1) {
      for (const [s, st] of stages) this.shards.set(s, new ZeroShard(be, st.params, train, parts.replica, parts.dp, undefined, offload));
      this.opt = null;
    } else if (offload) {
      for (const [s, st] of stages) this.offloaded.set(s, new OffloadedStage(be, st.params, train));
      this.opt = null;
    } else {
      this.opt = createOptimizer(be, [...stages.values()].flatMap((st) => st.params), train);
    }
    // Offloaded, the state lives in host memory from here on: the worker's count keeps it apart from the device's.
    if (offload) be.memory.setHost('optimizer', [...this.offloaded.values(), ...this.shards.values()].reduce((n, o) => n + o.hostBytes(), 0));
  }

  private resetStep(): void {
    this.started.clear();
    for (const [s, n] of this.backwards) this.left.set(s, n);
  }

  apply<T>(_a: Action, compute: () => Promise<T>): Promise<T> {
    return compute();
  }

  afterAction(a: Action, log: StepLog): void {
    if (!this.mesh || !this.parts.overlap || (a.op !== 'B' && a.op !== 'W')) return;
    const left = (this.left.get(a.stage) ?? 0) - 1;
    this.left.set(a.stage, left);
    if (left === 0) this.startCollective(a.stage, log);
  }

  private startCollective(stage: number, log: StepLog): void {
    this.started.add(stage);
    this.link = this.link.then(async () => {
      if (this.failure) return;
      try {
        await this.collective(stage, log);
      } catch (e) {
        this.failure = e instanceof Error ? e : new Error(String(e));
        this.parts.onFailure(this.failure);
      }
    });
  }

  /** Sums stage `stage`'s gradients over its replicas (all-reduce), or updates its ZeRO-1 shard and gathers the weights. */
  private async collective(stage: number, log: StepLog): Promise<void> {
    const st = this.stages.get(stage);
    if (!st) throw new Error(`stage ${stage} is not held by this worker`);
    const shard = this.shards.get(stage);
    if (!shard) return sumOverReplicas(this.be, this.parts, stage, st.params, log.step, log);
    const name = `the ZeRO-1 ${this.beforeUpdate ? 'reduce-scatter' : 'update'} of stage ${stage}`;
    await overReplicas(this.be, this.parts, stage, st.params, log.step, log, name, async (ring, x) => {
      // Read off the device, the whole gradient is not needed there until the next step's first backward (update: zeroGrads).
      for (const p of st.params) this.be.freeStorage(p.grad);
      await reduceScatter(ring, x);
      if (this.beforeUpdate) {
        // Model copies: the chunk is summed over them before its update (copiedShardsEnd); the ring waits until then.
        this.scattered.set(stage, { ring, x });
        return null;
      }
      await this.updateAndGather(stage, shard, ring, x, log);
      return st.params.map((p) => p.value);
    });
  }

  /** ZeRO-1: the owned chunk of `x` (summed) updated with its shard of the optimizer state, then the ring's all-gather spreads the weights. */
  private async updateAndGather(stage: number, shard: ZeroShard, ring: RingLink, x: Vector, log: StepLog): Promise<void> {
    const t0 = epochMs();
    await shard.update(x, lrAt(this.train, log.step));
    log.collective(stage, 'shard-update', -1, t0, epochMs(), (shard.hi - shard.lo) * x.BYTES_PER_ELEMENT);
    await allGather(ring, x);
  }

  endStep(step: number, log: StepLog): void | Promise<void> {
    if (!this.mesh) return this.beforeUpdate ? this.beforeUpdate(step, log).then(() => this.update(step, log)) : this.update(step, log);
    return this.meshEndStep(step, log);
  }

  private async meshEndStep(step: number, log: StepLog): Promise<void> {
    if (!this.parts.overlap && this.parts.control) await this.parts.control.barrier(step, 'the all-reduce');
    // Stages not started yet (overlap off, or a stage without a backward here), latest stage first as the backward finishes them.
    for (const s of [...this.stages.keys()].sort((a, b) => b - a)) if (!this.started.has(s)) this.startCollective(s, log);
    await this.link;
    this.resetStep();
    if (this.failure) throw this.failure;
    if (this.shards.size > 0 && this.beforeUpdate) return this.copiedShardsEnd(step, log);
    await this.beforeUpdate?.(step, log);
    await this.update(step, log);
  }

  /** ZeRO-1 beside model copies: each owned chunk summed over the copies, then its update and the ring's all-gather, stage by stage. */
  private async copiedShardsEnd(step: number, log: StepLog): Promise<void> {
    const chunks = new Map<number, Vector>();
    for (const [s, { x }] of this.scattered) {
      const shard = this.shards.get(s) as ZeroShard;
      chunks.set(s, x.subarray(shard.lo, shard.hi));
    }
    await (this.beforeUpdate as SumCopies)(step, log, chunks);
    // Every replica walks its stages in the same order: their rings' all-gathers meet.
    for (const s of [...this.scattered.keys()].sort((a, b) => a - b)) {
      const { ring, x } = this.scattered.get(s) as { ring: RingLink; x: Vector };
      const shard = this.shards.get(s) as ZeroShard;
      const st = this.stages.get(s) as UpdatableStage;
      await this.updateAndGather(s, shard, ring, x, log);
      const t0 = epochMs();
      writeVector(this.be, st.params.map((p) => p.value), x);
      log.collective(s, 'scatter-back', -1, t0, epochMs(), x.byteLength);
    }
    this.scattered.clear();
    await this.update(step, log);
  }

  /**
   * The optimizer over the whole stages (ZeRO-1's shards were updated in their collectives), then zeroed gradients.
   * Offloaded: each stage's gradients come down, its step runs on the CPU and its weights go back up (one interval).
   */
  private update(step: number, log: StepLog): void | Promise<void> {
    if (this.opt) {
      this.opt.lr = lrAt(this.train, step);
      this.opt.step(1);
    }
    if (this.offloaded.size === 0) return this.zeroGrads();
    return (async () => {
      for (const s of [...this.offloaded.keys()].sort((a, b) => b - a)) {
        const t0 = epochMs();
        const bytes = await (this.offloaded.get(s) as OffloadedStage).step(lrAt(this.train, step));
        log.collective(s, 'cpu-update', -1, t0, epochMs(), bytes);
      }
      this.zeroGrads();
    })();
  }

  private zeroGrads(): void {
    for (const st of this.stages.values()) st.zeroGrads();
  }

  report(): PolicyReport {
    const params: Param[] = this.opt ? [...this.stages.values()].flatMap((st) => st.params) : [...this.shards.values()].flatMap((s) => s.pieces);
    const values = [...this.stages.values()].reduce((n, st) => n + st.params.reduce((m, p) => m + p.value.size, 0), 0);
    const optimizerBytes = optimizerStateBytes(params, this.train.optimizer);
    // Offloaded, the state is in host memory, counted apart (4 bytes a value, as on the device).
    const host = [...this.offloaded.values(), ...this.shards.values()].reduce((n, o) => n + o.hostBytes(), 0);
    // Every replica keeps its stages' whole weights and gradients (4 bytes a value); ZeRO-1 shards the optimizer state only.
    return { optimizerBytes, held: { weights: 4 * values, grads: 4 * values, optimizer: optimizerBytes, transient: 0 }, ...(host > 0 ? { hostOptimizerBytes: host } : {}) };
  }

  async readOptimizer(): Promise<OptimizerPieces> {
    if (this.opt) return wholePieces(this.opt, [...this.stages.values()].flatMap((st) => st.params));
    if (this.offloaded.size > 0) return offloadedPieces(this.train.optimizer, [...this.offloaded.values()]);
    const parts = await Promise.all([...this.shards.values()].map((s) => s.readState()));
    const steps = parts[0]?.steps ?? 0;
    return { name: this.train.optimizer, steps, pieces: parts.flatMap((p) => p.pieces) };
  }

  loadOptimizer(state: OptimizerState<ArrayLike<number>>): void {
    if (this.opt) return this.opt.loadState(state);
    for (const o of this.offloaded.values()) o.loadState(state);
    for (const s of this.shards.values()) s.loadState(state);
  }

  dispose(): void {
    this.opt?.dispose();
    for (const s of this.shards.values()) s.dispose();
  }
}

/**
 * Stage `stage`'s gradients summed over its dp replicas by a ring all-reduce (its ring of `step`: the flush's step, or
 * PipeDream-2BW's block), read off the device and written back into the gradients; every part logged in `log`.
 */
export function sumOverReplicas(be: Backend, parts: DataParallelParts, stage: number, params: readonly Param[], step: number, log: StepLog): Promise<void> {
  return overReplicas(be, parts, stage, params, step, log, `the all-reduce of stage ${stage}`, async (ring, x) => {
    await allReduce(ring, x);
    return params.map((p) => p.grad);
  });
}

/** Reads the stage's gradients as one vector, runs `collective` on its ring, writes the vector onto the tensors it returns (none: it keeps the vector). */
async function overReplicas(
  be: Backend,
  parts: DataParallelParts,
  stage: number,
  params: readonly Param[],
  step: number,
  log: StepLog,
  name: string,
  collective: (ring: RingLink, x: Vector) => Promise<readonly Tensor[] | null>,
): Promise<void> {
  parts.control?.status(`step ${step}: ${name}`);
  const ring = parts.ring(stage, step, {
    onExchange: (kind, exchange, start, end, bytes) => log.collective(stage, kind, exchange, start, end, bytes, parts.next),
    beforeExchange: (exchange) => parts.beforeExchange?.(stage, step, exchange),
  });
  let t0 = epochMs();
  const x = await readVector(be, params.map((p) => p.grad));
  log.collective(stage, 'gather-grads', -1, t0, epochMs(), x.byteLength);
  const target = await collective(ring, x);
  if (!target) return void parts.control?.status(null);
  t0 = epochMs();
  // Queued, not waited for: the interval is the CPU's part (the GPU copies it before anything that reads it).
  writeVector(be, target, x);
  log.collective(stage, 'scatter-back', -1, t0, epochMs(), x.byteLength);
  parts.control?.status(null);
}

/** One replica: no ring, no barrier; the flush is the optimizer step alone. */
const LOCAL: DataParallelParts = {
  dp: 1,
  replica: 0,
  zero: 0,
  reshard: 'step',
  prefetch: false,
  overlap: false,
  order: [],
  next: 0,
  ring: () => {
    throw new Error('a single replica has no ring');
  },
  control: null,
  onFailure: () => {},
};
