/**
 * What one rank does in a step: walk its action list (F, B, I, W), take inputs
 * from the data set or through the transport, run its stages' kernels under
 * the update policy, send outputs on, and record every action as a measured
 * interval (the transport records the transfers).
 *
 * It knows nothing of Workers or WebGPU: in the browser it runs inside a stage
 * worker on a GpuBackend; in Node tests it runs on the float64 CpuBackend over
 * real MessageChannels, which checks the pipeline logic exactly.
 *
 * Waiting: with an action clock (a GpuBackend's, gpu/action-clock.ts) an action's
 * kernels are issued, submitted and not waited for; the worker waits on its GPU
 * only where the CPU reads a value (a send's readback, a collective's chunk, the
 * losses at the step's end, read before the update is issued). The step's action
 * spans are read with the update's submit and not waited for: each action's
 * interval is placed from its GPU span when the next step ends (action-times.ts,
 * late-times.ts), or at the run's end (lateTimes). Without one (the CPU host)
 * each action is timed on the wall clock as it runs.
 */
import type { Backend, Tensor } from '../../nn/backend.ts';
import type { ActionClock, ActionSpan } from '../../gpu/action-clock.ts';
import { placeActions, settleReads, type IssuedAction } from './action-times.ts';
import type { LateTimes, TimesOfStep } from './late-times.ts';
import type { MemorySample, StepMemory } from '../../nn/memory-ledger.ts';
import type { Action } from '../../schedule/types.ts';
import type { Interval } from '../../schedule/timeline.ts';
import { ActionError } from '../comm/index.ts';
import { epochMs } from '../comm/index.ts';
import { StepLog, readAll, type Transport } from '../comm/index.ts';
import { StreamEndedError } from './stream-end.ts';
import { packMoeStep, type MoeLoadRecord } from './moe-reads.ts';
import type { StageRouteLoad } from '../../nn/layers/layer.ts';
import type { PolicyReport, UpdatePolicy } from '../policies/index.ts';

export { ActionError } from '../comm/index.ts';

/** The part of a model stage (src/nn/stage.ts) the executor drives. */
export interface StageLike {
  readonly index: number;
  readonly isFirst: boolean;
  readonly isLast: boolean;
  forward(mb: number, input: Tensor, labels?: Tensor, lossScale?: number): Promise<Tensor>;
  backwardInput(mb: number, dOutput: Tensor | null): Promise<Tensor | null>;
  backwardWeight(mb: number): void;
  backward(mb: number, dOutput: Tensor | null): Promise<Tensor | null>;
  /** Sums the gradients this worker holds in part (sequence parallelism's LayerNorms) over its tp group (stage.ts). */
  sumGradsOverTp?(): Promise<void>;
  sumGradsOverEp?(): Promise<void>;
  stashBytes(): number;
  liveStashes(): number;
  /** Whether the stage's layers add a loss term of their own (an MoE block's aux loss; stage.ts). */
  readonly hasAuxLoss?: boolean;
  /** into += those terms since the last call; zeroes them. */
  takeAuxLoss?(into: Tensor): void;
  /** An MoE stage's routing counts per layer and micro-batch since the last call (stage.ts); read with the aux loss. */
  takeRouteLoads?(): StageRouteLoad[];
}

/** Where a rank gets a micro-batch's inputs (first stage) and labels (last stage). */
export interface MicrobatchSource {
  inputs(step: number, mb: number): Tensor;
  labels(step: number, mb: number): Tensor;
  /** 1 / (targets that take a loss in the whole step): makes micro-batch accumulation exact. */
  lossScale(step: number, mb: number): number;
}

export interface StepResult extends PolicyReport, TimesOfStep {
  rank: number;
  /** Epoch-ms intervals (the coordinator normalises them). */
  intervals: Interval[];
  /** Loss of each micro-batch this rank computed (last stage only), in micro-batch order. */
  losses: { mb: number; loss: number }[];
  /** The step's aux loss terms of this worker's MoE stages (absent without them; read where the losses are). */
  auxLoss?: number;
  /** The routing counts of this worker's MoE layers per micro-batch, read with the aux loss (absent without them). */
  moeLoad?: MoeLoadRecord[];
  /** Largest stash held at any point of the step, per stage. */
  peakStashBytes: Record<number, number>;
  /** Time spent in the optimizer at the flush, ms. */
  optimizerMs: number;
  stepStart: number;
  stepEnd: number;
  /** What the step waited for and sent to the GPU, and the messages it took from other workers. */
  counts: StepCounts;
  /** The worker's allocator-tracked bytes (nn/memory-ledger.ts): a sample as each action's kernels end and after its policy's part, and the step's high-water mark. */
  memory?: StepMemory;
}

/**
 * One worker's step in counts (deterministic for a configuration): `waits` on its GPU (awaited buffer maps and
 * submitted-work waits) and `submits` (queue.submit calls), where the backend counts them (a GpuBackend; absent on
 * the CPU host, which has no queue); `crossings`, the messages it took from other workers (activations, gradients,
 * ring chunks, tp parts); `actions`, the actions it ran.
 */
export interface StepCounts {
  /** The worker's replica, ep and tp rank, where the mesh has those axes. */
  replica?: number;
  tpRank?: number;
  epRank?: number;
  waits?: number;
  submits?: number;
  crossings: number;
  actions: number;
}

/** A backend's running totals of waits and submits (GpuBackend.stats()). */
export type GpuCounts = () => { waits: number; submits: number };

/** What a rank's executor drives. */
export interface RankParts {
  rank: number;
  /** The worker's replica in a data-parallel mesh (absent with one pipeline). */
  replica?: number;
  /** The worker's place in its tp group (absent with tp = 1): only tp rank 0 reports the losses its group computes alike. */
  tpRank?: number;
  /** The worker's place in its ep group (absent with ep = 1); every member reports the losses of its own sequences. */
  epRank?: number;
  be: Backend;
  order: readonly Action[];
  stages: ReadonlyMap<number, StageLike>;
  data: MicrobatchSource;
  transport: Transport;
  policy: UpdatePolicy;
  /** Times the actions on the GPU without waiting for them (a GpuBackend's actionClock); absent: wall clock, each action awaited. */
  clock?: ActionClock;
  /** The backend's waits and submits so far (a GpuBackend's stats). */
  gpuCounts?: GpuCounts;
  /** Asked before each action whether it runs (a stream ended early skips those past its end: stream-end.ts). */
  admit?: (a: Action) => Promise<boolean>;
  /**
   * With sequence parallelism: whether the update policy reads the stage's gradients after action `a`
   * (registry.ts gradSumEvery); if so the action ends with the stage's sum of its partial gradients over its tp group.
   */
  sumsGradsAfter?: (a: Action) => boolean;
}

/** Told each action of the step as it completes (its update policy's part included). */
export type ActionDone = (a: Action) => void;

/**
 * A stream's losses while it runs (a worker holding the last stage): as the loss of micro-batch k·m − 1 lands,
 * the losses of micro-batches (k − 1)·m … k·m − 1 are read back and told, so the page draws a step's loss
 * before the stream ends. Told, never awaited; the step's result carries the same values.
 */
export interface LossesEvery {
  microbatches: number;
  tell: (losses: { mb: number; loss: number }[]) => void;
}

/** One step of one rank. */
export interface StepRunner {
  runStep(step: number, onActionDone?: ActionDone, lossesEvery?: LossesEvery): Promise<StepResult>;
  /** The last step's times, placed once its GPU spans are read (null: none pending; late-times.ts). */
  lateTimes(): Promise<LateTimes | null>;
}

/** A step whose GPU spans are being read: placed when they land (the next step's end, or lateTimes). */
interface PendingTimes {
  step: number;
  issued: IssuedAction[];
  source: ActionClock['source'];
  /** The spans, and the epoch ms by which the GPU was seen done with them. */
  spans: Promise<{ spans: ActionSpan[]; doneBy: number }>;
  intervals: Interval[];
  atAction: { sample: MemorySample; iv: Interval }[];
  memory: StepMemory;
  stepEnd: number;
}

export class RankExecutor implements StepRunner {
  /** The step's actions issued and not waited for, placed once their spans are read. */
  private issued: IssuedAction[] = [];
  /** The previous step's, being read. */
  private pending: PendingTimes | null = null;

  constructor(private readonly p: RankParts) {}

  async runStep(step: number, onActionDone?: ActionDone, lossesEvery?: LossesEvery): Promise<StepResult> {
    const { be, rank, transport, stages } = this.p;
    const log = new StepLog(rank, step, this.p.replica, this.p.tpRank, this.p.epRank);
    /** The loss tensors of the last stage's forwards; `value` once a read of it has begun (lossesEvery). */
    const losses: { mb: number; loss: Tensor; value?: Promise<number> }[] = [];
    let unread = 0;
    const peak: Record<number, number> = {};
    const stepStart = epochMs();
    const counted0 = this.p.gpuCounts?.();
    const crossings0 = transport.crossings();
    this.issued = [];
    this.p.clock?.discard();
    let actions = 0;
    be.memory.resetPeak();
    const samples = [be.memory.sample()];
    /** The samples taken as an action was issued, timed at its end once the step's end places it (GPU spans). */
    const atAction: { sample: MemorySample; iv: Interval }[] = [];

    for (const a of this.p.order) {
      try {
        if (this.p.admit && !(await this.p.admit(a))) continue;
        transport.check();
        const stage = stages.get(a.stage);
        if (!stage) throw new Error(`stage ${a.stage} is not held by this rank`);
        await this.p.policy.beforeAction?.(a, log);
        const issuedBefore = this.issued.length;
        const out = await this.act(log, a, stage);
        samples.push(be.memory.sample());
        await this.p.policy.afterAction?.(a, log);
        const sampled = be.memory.sample();
        samples.push(sampled);
        const last = this.issued[this.issued.length - 1];
        if (last && issuedBefore !== this.issued.length) atAction.push({ sample: samples[samples.length - 2], iv: last.iv }, { sample: sampled, iv: last.iv });
        // The action's work (and its send's copy) submitted, not waited for.
        be.flush();
        actions++;
        onActionDone?.(a);
        if (out && (this.p.tpRank ?? 0) === 0) {
          losses.push({ mb: a.mb, loss: out });
          if (lossesEvery && (a.mb + 1) % lossesEvery.microbatches === 0) unread = tellLosses(be, losses.slice(unread), lossesEvery) + unread;
        } else if (out) be.dispose(out);
        for (const [s, st] of stages) peak[s] = Math.max(peak[s] ?? 0, st.stashBytes());
      } catch (e) {
        if (e instanceof ActionError) throw e;
        // Its input was past the stream's end and will never come: the action is skipped, as a later one would be.
        if (e instanceof StreamEndedError) continue;
        throw new ActionError(rank, a, step, e, this.p.replica);
      }
    }
    await transport.drain();

    // The aux loss and the routing counts the MoE stages hold, packed to be read with the losses (one wait).
    const moe = packMoeStep(be, stages, (this.p.tpRank ?? 0) === 0);
    // The losses read before the update is issued: their map waits for the step's actions, not for the update too.
    const { losses: read, extra } = readLosses(be, losses, moe?.packed);
    extra?.catch(() => {}); // awaited below; a failure here fails the step there (or the step failed first)

    const o0 = epochMs();
    try {
      await this.p.policy.endStep(step, log);
    } catch (e) {
      await read;
      throw new ActionError(rank, null, step, e, this.p.replica);
    }
    // The update submitted with the read of the step's action spans, and neither waited for: the spans are placed
    // when the next step ends (or at the run's end); without a clock (the CPU host) a sync ends the step.
    const issued = this.issued;
    this.issued = [];
    const { clock } = this.p;
    const spans = clock && issued.length > 0 ? clock.collect().then((sp) => ({ spans: sp, doneBy: epochMs() })) : null;
    spans?.catch(() => {}); // awaited when the times are placed
    be.flush();
    try {
      if (!clock) await be.sync();
    } catch (e) {
      await read;
      throw new ActionError(rank, null, step, e, this.p.replica);
    }
    const lossRead = await read;
    const moeRead = extra ? await extra.then((v) => v, (e: unknown) => e) : undefined;
    for (const { loss } of losses) be.dispose(loss);
    if (moe) be.dispose(moe.packed);
    if (moeRead instanceof Error) throw moeRead;
    const failed = lossRead.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    const lossValues = losses.map(({ mb }, i) => ({ mb, loss: (lossRead[i] as PromiseFulfilledResult<number>).value }));
    lossValues.sort((x, y) => x.mb - y.mb);
    const moeValues = moe && moeRead ? moe.decode(moeRead as ArrayLike<number>) : {};
    // The previous step's spans arrived while this one ran (its reads waited for the GPU past them): placed now.
    let late: LateTimes | null;
    try {
      late = await this.lateTimes();
    } catch (e) {
      throw new ActionError(rank, null, step, e, this.p.replica);
    }
    const o1 = epochMs();
    const counted1 = this.p.gpuCounts?.();
    const counts: StepCounts = { ...place(this.p), crossings: transport.crossings() - crossings0, actions };
    if (counted0 && counted1) Object.assign(counts, { waits: counted1.waits - counted0.waits, submits: counted1.submits - counted0.submits });
    for (const st of stages.values()) {
      if (st.liveStashes() !== 0) {
        throw new ActionError(rank, null, step, new Error(`stage ${st.index} still holds ${st.liveStashes()} stashes after the step: the schedule left a backward undone`), this.p.replica);
      }
    }
    samples.push(be.memory.sample());
    const memory = { samples, peak: be.memory.peak() };
    if (clock && spans) this.pending = { step, issued, source: clock.source, spans, intervals: log.intervals, atAction, memory, stepEnd: o1 };
    const times = { ...(spans ? { timesLate: true } : {}), ...(late ? { late } : {}) };
    return { rank, intervals: log.intervals, losses: lossValues, ...moeValues, peakStashBytes: peak, optimizerMs: o1 - o0, stepStart, stepEnd: o1, counts, memory, ...times, ...this.p.policy.report() };
  }

  /**
   * The last step's intervals placed at its actions' GPU times (action-times.ts), its reads settled after the
   * actions they waited for and its memory samples moved to where their actions' kernels ended; null when no step's
   * spans are pending. Awaits the spans' read (begun with the step's update).
   */
  async lateTimes(): Promise<LateTimes | null> {
    const p = this.pending;
    this.pending = null;
    if (!p) return null;
    const { spans, doneBy } = await p.spans;
    placeActions(p.issued, spans, p.source, doneBy);
    settleReads(p.intervals, p.issued);
    for (const { sample, iv } of p.atAction) sample.t = iv.end;
    // The GPU may end the step's actions after the worker went on (nothing waited for them): the step ends then.
    const stepEnd = Math.max(p.stepEnd, ...p.intervals.map((iv) => iv.end));
    return { step: p.step, intervals: p.intervals, memory: p.memory, stepEnd };
  }

  /** Runs one action; returns the loss tensor when it is a last stage's forward. */
  private async act(log: StepLog, a: Action, stage: StageLike): Promise<Tensor | null> {
    const { be, data, transport, policy } = this.p;
    if (a.op === 'F') {
      const input = stage.isFirst ? data.inputs(log.step, a.mb) : await transport.receive(log, 'act', a, a.stage - 1);
      const labels = stage.isLast ? data.labels(log.step, a.mb) : undefined;
      const out = await this.timed(log, a, () => policy.apply(a, () => stage.forward(a.mb, input, labels, data.lossScale(log.step, a.mb))));
      if (labels) be.dispose(labels);
      if (stage.isLast) return out;
      transport.send(log, 'act', a.stage + 1, a.mb, out, a);
    } else if (a.op === 'B' || a.op === 'I') {
      const dOut = stage.isLast ? null : await transport.receive(log, 'grad', a, a.stage + 1);
      const dIn = await this.timed(log, a, () =>
        policy.apply(a, async () => {
          const dx = await (a.op === 'B' ? stage.backward(a.mb, dOut) : stage.backwardInput(a.mb, dOut));
          await this.sumGradsOverTp(a, stage);
          return dx;
        }),
      );
      if (dIn && !stage.isFirst) transport.send(log, 'grad', a.stage - 1, a.mb, dIn, a);
      else if (dIn) be.dispose(dIn);
    } else {
      await this.timed(log, a, () =>
        policy.apply(a, async () => {
          stage.backwardWeight(a.mb);
          await this.sumGradsOverTp(a, stage);
        }),
      );
    }
    return null;
  }

  /** Inside action `a`, before its policy's update or collective: the stage's partial gradients summed over its tp group (and its dense ones over its ep group) where they are read next. */
  private async sumGradsOverTp(a: Action, stage: StageLike): Promise<void> {
    if (!this.p.sumsGradsAfter?.(a)) return;
    if (stage.sumGradsOverTp) await stage.sumGradsOverTp();
    if (stage.sumGradsOverEp) await stage.sumGradsOverEp();
  }

  /**
   * Issues an action's kernels and logs the action. With an action clock nothing waits for them: the clock marks
   * the action's span and the step's end places it (action-times.ts). Without one the action is waited for and
   * timed on the wall clock.
   */
  private async timed<T>(log: StepLog, a: Action, issue: () => Promise<T>): Promise<T> {
    const t0 = epochMs();
    const { clock } = this.p;
    if (!clock) {
      const result = await issue();
      await this.p.be.sync();
      log.compute(a, t0, undefined);
      return result;
    }
    const submits0 = this.p.gpuCounts?.().submits;
    clock.begin();
    let result: T;
    try {
      result = await issue();
    } catch (e) {
      // Its span is closed and matched, not logged: the step fails here, or skips the action (a stream's end).
      clock.end();
      this.issued.push({ iv: { rank: log.rank, stage: a.stage, op: a.op, mb: a.mb, start: t0, end: t0 }, issuedAt: t0, encodedAt: epochMs(), oneSubmit: false });
      throw e;
    }
    clock.end();
    const encodedAt = epochMs();
    const oneSubmit = submits0 !== undefined && this.p.gpuCounts?.().submits === submits0;
    this.issued.push({ iv: log.compute(a, t0, undefined), issuedAt: t0, encodedAt, oneSubmit });
    return result;
  }
}

/** The worker's replica and tp rank, where it has them. */
function place(p: Pick<RankParts, 'replica' | 'tpRank' | 'epRank'>): Pick<StepCounts, 'replica' | 'tpRank' | 'epRank'> {
  return { ...(p.replica !== undefined ? { replica: p.replica } : {}), ...(p.tpRank !== undefined ? { tpRank: p.tpRank } : {}), ...(p.epRank !== undefined ? { epRank: p.epRank } : {}) };
}

/**
 * The losses' values: those not read yet read at once (one wait), beside those a stream began reading (tellLosses);
 * `extra` (the step's packed MoE values) rides in the same read.
 */
function readLosses(be: Backend, losses: readonly { loss: Tensor; value?: Promise<number> }[], extra?: Tensor): { losses: Promise<PromiseSettledResult<number>[]>; extra: Promise<ArrayLike<number>> | null } {
  const unread = losses.filter((l) => !l.value);
  const all = readAll(be, [...unread.map((l) => l.loss), ...(extra ? [extra] : [])]);
  unread.forEach((l, i) => (l.value = all.then((vs) => vs[i][0])));
  return { losses: Promise.allSettled(losses.map((l) => l.value as Promise<number>)), extra: extra ? all.then((vs) => vs[vs.length - 1]) : null };
}

/** Begins reading the losses not read yet (one step's: a stream's last stage computes them in order) and tells them once read; returns how many. */
function tellLosses(be: Backend, fresh: { mb: number; loss: Tensor; value?: Promise<number> }[], every: LossesEvery): number {
  const all = readAll(be, fresh.map((l) => l.loss));
  fresh.forEach((l, i) => (l.value = all.then((vs) => vs[i][0])));
  // A failed read fails the step where its value is awaited (the end of the window); here it is only not told.
  void Promise.all(fresh.map((l) => l.value))
    .then((values) => every.tell(fresh.map((l, i) => ({ mb: l.mb, loss: values[i] as number }))))
    .catch(() => {});
  return fresh.length;
}
