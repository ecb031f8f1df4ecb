/**
 * ZeRO-2 and ZeRO-3 (FSDP) beside the pipeline: the update policy of every
 * synchronous schedule when the run shards more than the optimizer state
 * (zero ≥ 2; zero 0 and 1 are flush.ts). Each worker owns one chunk of each of
 * its stages (zero-shard.ts: the chunk the ring's reduce-scatter leaves summed
 * on it) and keeps, for that chunk only:
 *
 * - ZeRO-2: the gradient and the optimizer state. After each backward that
 *   makes weight gradients (B, or W when the backward is split), the stage's
 *   gradients are read off the device, zeroed there, and reduce-scattered over
 *   the stage's dp group; the worker adds the summed chunk to its own
 *   accumulator (DeepSpeed's ZeRO-2 with gradient accumulation: one
 *   reduce-scatter per micro-batch). At the end of the step it updates its
 *   chunk and the ring's all-gather spreads the weights back to every replica.
 * - ZeRO-3: the weights as well. Before an action that reads a stage's
 *   weights (F, B and I; W needs only its stashed inputs and output
 *   gradients) the stage is all-gathered from the owners' chunks onto the
 *   device; it is freed after the stage's last such action of the step
 *   (`reshard: 'step'`, FSDP's reshard_after_forward = False) or after every
 *   action (`'microbatch'`, True), and re-gathered when next needed. "Freed"
 *   releases the whole weights' storage (Backend.freeStorage; the pool may
 *   keep the buffer, counted as pooled), so a missed gather cannot go unseen:
 *   the next op that reads them throws, naming the tensor. With `prefetch` the
 *   next gather this worker needs starts while the current action computes
 *   (FSDP's forward/backward prefetch).
 *
 * Every collective runs on the worker's one ring link, in the order the
 * worker's actions issue them, which is the same on every replica (they run
 * the same action list); collective c of a stage in a step uses exchanges
 * [c·2(dp − 1), (c + 1)·2(dp − 1)) of the ring, so no two share a message key.
 * With `overlap` the reduce-scatters run behind the compute; without, each
 * action waits for its own. With model copies (DualPipe) each owned chunk's
 * accumulator is summed with its other copy's (the same chunk in the same
 * replica) at the step's end, before its update (copy-sum.ts).
 *
 * With optimizer offload (ZeRO-2 only: ZeRO-Offload is built on it) the owned
 * chunk's gradient accumulator and optimizer state live in the worker's host
 * memory: each reduce-scattered chunk is added there, and at the step's end
 * the CPU steps the chunk's master copy (zero-shard.ts, host-optimizer.ts)
 * before the all-gather spreads the weights.
 *
 * On the device, between its actions, a worker keeps its chunk's gradient
 * accumulator (not offloaded), its optimizer state (not offloaded) and
 * (ZeRO-2) the whole weights or (ZeRO-3) its chunk of them; a stage's whole gradient has storage from the backward
 * that makes it to its reduce-scatter. What the device holds is counted by its
 * backend's ledger (nn/memory-ledger.ts); `report().held` gives the bytes as
 * the sharding defines them (4 bytes a value), the formula's side.
 */
import type { Backend } from '../../nn/backend.ts';
import { optimizerStateBytes } from '../../nn/optimizer.ts';
import type { OptimizerState } from '../../nn/optimizer.ts';
import { lrAt, type TrainConfig } from '../../nn/train-config.ts';
import type { Action } from '../../schedule/types.ts';
import { epochMs } from '../comm/index.ts';
import { readVector, writeVector } from '../comm/index.ts';
import type { DataParallelParts, SumCopies } from './flush.ts';
import type { HeldBytes, OptimizerPieces, PolicyReport, UpdatableStage, UpdatePolicy } from './policy.ts';
import { allGather, reduceScatter, shiftedRing, type RingLink, type Vector } from '../comm/index.ts';
import type { StepLog } from '../comm/index.ts';
import { paramOffsets, ZeroShard } from './zero-shard.ts';

const BYTES = 4;
const key = (a: Action) => `${a.stage}${a.op}${a.mb}`;
const readsWeights = (a: Action) => a.op === 'F' || a.op === 'B' || a.op === 'I';

interface StageShard {
  stage: UpdatableStage;
  shard: ZeroShard;
  /** The values of the stage's vector. */
  total: number;
  /** The index in the worker's order of the stage's last action that reads its weights. */
  lastUse: number;
}

export class ShardedStep implements UpdatePolicy {
  private readonly held = new Map<number, StageShard>();
  private readonly index = new Map<string, number>();
  /** Collectives issued so far this step, per stage. */
  private readonly issued = new Map<number, number>();
  /** ZeRO-3: stages whose weights are on the device now, and gathers running ahead (by the index of the action they are for). */
  private readonly resident = new Set<number>();
  private readonly pending = new Map<number, Promise<Vector>>();
  private link: Promise<unknown> = Promise.resolve();
  private failure: Error | null = null;
  private peakTransient = 0;

  constructor(
    private readonly be: Backend,
    stages: ReadonlyMap<number, UpdatableStage>,
    private readonly train: TrainConfig,
    private readonly parts: DataParallelParts,
    /** A schedule with model copies (DualPipe): each owned chunk's accumulated gradient summed over them before its update (copy-sum.ts). */
    private readonly sumCopies: SumCopies | null = null,
    /** ZeRO-Offload with ZeRO-2: the owned chunk's gradient accumulator and optimizer state in host memory, its update on the CPU. */
    private readonly offload = false,
  ) {
    const { order } = parts;
    order.forEach((a, i) => this.index.set(key(a), i));
    for (const [s, stage] of stages) {
      const lastUse = order.reduce((last, a, i) => (a.stage === s && readsWeights(a) ? i : last), -1);
      this.held.set(s, {
        stage,
        // The device keeps the owned chunk's gradient (and, ZeRO-3, its weights) between actions; the whole
        // gradient gets storage for the backward that makes it, and gives it back once reduce-scattered.
        shard: new ZeroShard(be, stage.params, train, parts.replica, parts.dp, { weights: parts.zero === 3, grads: true }, offload),
        total: paramOffsets(stage.params).total,
        lastUse,
      });
      for (const p of stage.params) be.freeStorage(p.grad);
    }
    // Offloaded, the shards' state and gradient accumulators live in host memory: counted apart from the device's.
    if (offload) be.memory.setHost('optimizer', [...this.held.values()].reduce((n, h) => n + h.shard.hostBytes(), 0));
  }

  private get zero3(): boolean {
    return this.parts.zero === 3;
  }

  private need(stage: number): StageShard {
    const h = this.held.get(stage);
    if (!h) throw new Error(`stage ${stage} is not held by this worker`);
    return h;
  }

  /** Runs `job` on the worker's ring link after everything issued before it. */
  private enqueue<T>(job: () => Promise<T>): Promise<T> {
    const run = this.link.then(() => {
      if (this.failure) throw this.failure;
      return job();
    });
    this.link = run.catch((e: unknown) => {
      if (!this.failure) {
        this.failure = e instanceof Error ? e : new Error(String(e));
        this.parts.onFailure(this.failure);
      }
    });
    return run;
  }

  /** The ring for the next collective of `stage` in this step: its own range of exchange numbers. */
  private ring(stage: number, log: StepLog): RingLink {
    const { parts } = this;
    const c = this.issued.get(stage) ?? 0;
    this.issued.set(stage, c + 1);
    const step = log.step;
    const ring = parts.ring(stage, step, {
      onExchange: (kind, exchange, start, end, bytes) => log.collective(stage, kind, exchange, start, end, bytes, parts.next),
      beforeExchange: (exchange) => parts.beforeExchange?.(stage, step, exchange),
    });
    return shiftedRing(ring, c * 2 * (parts.dp - 1));
  }

  /** ZeRO-3: all-gathers stage `stage`'s weights from the owners' chunks into a host vector (on the link). */
  private gather(stage: number, log: StepLog): Promise<Vector> {
    const h = this.need(stage);
    const ring = this.ring(stage, log);
    return this.enqueue(async () => {
      this.parts.control?.status(`step ${log.step}: the ZeRO-3 all-gather of stage ${stage}`);
      await h.shard.ensureLoaded();
      const x = h.shard.vector(h.total);
      h.shard.placeOwn(x);
      await allGather(ring, x);
      this.parts.control?.status(null);
      return x;
    });
  }

  apply<T>(_a: Action, compute: () => Promise<T>): Promise<T> {
    return compute();
  }

  async beforeAction(a: Action, log: StepLog): Promise<void> {
    if (a.op === 'B' || a.op === 'W') {
      // The whole gradient lives from the backward that makes it to its reduce-scatter.
      for (const p of this.need(a.stage).stage.params) {
        if (this.be.hasStorage(p.grad)) continue;
        this.be.allocStorage(p.grad, 'grads');
        this.be.fill(p.grad, 0);
      }
    }
    if (!this.zero3 || !readsWeights(a)) return;
    const k = this.index.get(key(a)) ?? -1;
    if (!this.resident.has(a.stage)) {
      const h = this.need(a.stage);
      const gathering = this.pending.get(k) ?? this.gather(a.stage, log);
      this.pending.delete(k);
      if (this.parts.prefetch) this.prefetchAfter(k, log);
      const x = await gathering;
      const t0 = epochMs();
      for (const p of h.stage.params) if (!this.be.hasStorage(p.value)) this.be.allocStorage(p.value, 'gathered');
      if (!this.parts.skipGather?.(a, log.step)) writeVector(this.be, h.stage.params.map((p) => p.value), x);
      log.collective(a.stage, 'scatter-back', -1, t0, epochMs(), x.byteLength);
      this.resident.add(a.stage);
      this.notePeak();
    } else if (this.parts.prefetch) {
      this.prefetchAfter(k, log);
    }
  }

  /** Starts the gather of the next action after `k` that will find its stage's weights freed (one ahead, as FSDP prefetches). */
  private prefetchAfter(k: number, log: StepLog): void {
    const { order, reshard } = this.parts;
    for (let j = k + 1; j < order.length; j++) {
      const b = order[j];
      if (!readsWeights(b)) continue;
      // With 'step' the stage stays on the device once gathered: only a stage not there yet needs a gather.
      const freedBefore = reshard === 'microbatch' || (!this.resident.has(b.stage) && b.stage !== order[k]?.stage);
      if (!freedBefore) continue;
      if (!this.pending.has(j) && ![...this.pending.keys()].some((i) => order[i].stage === b.stage && reshard === 'step')) this.pending.set(j, this.gather(b.stage, log));
      return;
    }
  }

  async afterAction(a: Action, log: StepLog): Promise<void> {
    const h = this.need(a.stage);
    // B and W leave weight gradients (a schedule may split some micro-batches' backward and not others': DualPipe).
    if (a.op === 'B' || a.op === 'W') await this.reduceGradients(a.stage, h, log);
    if (this.zero3 && readsWeights(a)) {
      const k = this.index.get(key(a)) ?? -1;
      if (this.parts.reshard === 'microbatch' || k === h.lastUse) this.free(a.stage, h);
    }
  }

  /** Reads the stage's gradients off the device (zeroing them there) and reduce-scatters them into the owned chunk's accumulator. */
  private async reduceGradients(stage: number, h: StageShard, log: StepLog): Promise<void> {
    this.notePeak(h.total);
    const t0 = epochMs();
    const g = await readVector(this.be, h.stage.params.map((p) => p.grad));
    for (const p of h.stage.params) this.be.freeStorage(p.grad);
    log.collective(stage, 'gather-grads', -1, t0, epochMs(), g.byteLength);
    const ring = this.ring(stage, log);
    const done = this.enqueue(async () => {
      this.parts.control?.status(`step ${log.step}: the ZeRO-${this.parts.zero} reduce-scatter of stage ${stage}`);
      await reduceScatter(ring, g);
      h.shard.accumulate(g);
      this.parts.control?.status(null);
    });
    if (this.parts.overlap) done.catch(() => {});
    else await done;
  }

  /** ZeRO-3: the stage's whole weights leave the device (their storage is released; an op that reads them before the next gather throws). */
  private free(stage: number, h: StageShard): void {
    for (const p of h.stage.params) this.be.freeStorage(p.value);
    this.resident.delete(stage);
  }

  async endStep(step: number, log: StepLog): Promise<void> {
    await this.link;
    if (this.failure) throw this.failure;
    if (this.sumCopies) {
      // Both copies of a stage own the same chunk in a replica: their accumulators are summed before either updates.
      const chunks = new Map<number, Vector>();
      for (const [s, h] of this.held) {
        await h.shard.ensureLoaded();
        chunks.set(s, await h.shard.readGrad());
      }
      await this.sumCopies(step, log, chunks);
      for (const [s, h] of this.held) h.shard.writeGrad(chunks.get(s) as Vector);
    }
    const lr = lrAt(this.train, step);
    for (const s of [...this.held.keys()].sort((a, b) => b - a)) {
      const h = this.need(s);
      await h.shard.ensureLoaded();
      // The owned chunk's summed gradient is on the device (ZeroShard.accumulate); x takes the updated weights.
      const x = h.shard.vector(h.total);
      let t0 = epochMs();
      await h.shard.update(x, lr);
      log.collective(s, 'shard-update', -1, t0, epochMs(), (h.shard.hi - h.shard.lo) * x.BYTES_PER_ELEMENT);
      if (this.zero3) continue;
      const ring = this.ring(s, log);
      await this.enqueue(() => allGather(ring, x));
      t0 = epochMs();
      writeVector(this.be, h.stage.params.map((p) => p.value), x); // queued, not waited for (flush.ts)
      log.collective(s, 'scatter-back', -1, t0, epochMs(), x.byteLength);
    }
    await this.link;
    if (this.failure) throw this.failure;
    this.issued.clear();
    this.pending.clear();
    this.resident.clear();
  }

  /**
   * Transient bytes now: ZeRO-3's gathered stages on the device and a stage's
   * full gradient read off for its reduce-scatter (`gradsInFlight` values).
   */
  private notePeak(gradsInFlight = 0): void {
    let transient = gradsInFlight * BYTES;
    if (this.zero3) for (const s of this.resident) transient += this.need(s).total * BYTES;
    this.peakTransient = Math.max(this.peakTransient, transient);
  }

  /** What the worker keeps at rest, by kind: its chunks of the gradients and optimizer state, and of the weights with ZeRO-3. */
  private atRest(): HeldBytes {
    let own = 0, whole = 0;
    for (const h of this.held.values()) {
      own += (h.shard.hi - h.shard.lo) * BYTES;
      whole += h.total * BYTES;
    }
    const params = [...this.held.values()].flatMap((h) => h.shard.pieces);
    return { weights: this.zero3 ? own : whole, grads: this.offload ? 0 : own, optimizer: optimizerStateBytes(params, this.train.optimizer, BYTES), transient: 0 };
  }

  report(): PolicyReport {
    const params = [...this.held.values()].flatMap((h) => h.shard.pieces);
    const held = { ...this.atRest(), transient: this.peakTransient };
    this.peakTransient = 0;
    const host = [...this.held.values()].reduce((n, h) => n + h.shard.hostBytes(), 0);
    return { optimizerBytes: optimizerStateBytes(params, this.train.optimizer), held, ...(host > 0 ? { hostOptimizerBytes: host } : {}) };
  }

  async readOptimizer(): Promise<OptimizerPieces> {
    const parts = await Promise.all([...this.held.values()].map((h) => h.shard.readState()));
    return { name: this.train.optimizer, steps: parts[0]?.steps ?? 0, pieces: parts.flatMap((p) => p.pieces) };
  }

  loadOptimizer(state: OptimizerState<ArrayLike<number>>): void {
    for (const h of this.held.values()) {
      h.shard.loadState(state);
      h.shard.reload();
    }
  }

  /** ZeRO-3: the weights this worker owns, as pieces `name[lo:hi]` (the device holds none between steps); else null. */
  async ownedWeights(): Promise<Record<string, Vector> | null> {
    if (!this.zero3) return null;
    const out: Record<string, Vector> = {};
    for (const h of this.held.values()) {
      await h.shard.ensureLoaded();
      Object.assign(out, h.shard.weightPieces());
    }
    return out;
  }

  dispose(): void {
    for (const h of this.held.values()) h.shard.dispose();
  }
}
