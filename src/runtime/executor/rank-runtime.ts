/**
 * Everything one worker holds: its stages (with the same seeded initialisation
 * the single-device loop uses), its data (first and last stage: its replica's
 * slice of every batch), its optimizer (and, in a data-parallel mesh, its ring
 * to the same rank of the other replicas), its mailbox, and the executor that
 * walks its actions. Built the same way in a stage worker (GpuBackend) and
 * in-process (CpuBackend, tests).
 */
import { BatchSampler } from '../../data/batches.ts';
import { SampledMicrobatches } from './sampled-microbatches.ts';
import { createDataset } from '../../data/datasets.ts';
import type { Backend } from '../../nn/backend.ts';
import { rowsPerExample } from '../../nn/model-spec.ts';
import { Stage } from '../../nn/stage.ts';
import { createOptimizer } from '../../nn/optimizer.ts';
import { gradSumEvery, scheduleKind, UPDATE_WINDOWS, type UpdatePolicyName } from '../../schedule/registry.ts';
import { gradSumActions, gradSumKey } from '../../schedule/tp-cost.ts';
import { epGroup, laneLabel, meshOfRun, placeOf, replicaRows, ringNext, ringPrev, tpGroup, type Mesh } from '../../schedule/mesh.ts';
import { EpChannel, TpChannel } from '../comm/index.ts';
import { forwardingPolicy, type UpdatePolicy } from '../policies/index.ts';
import type { Fault } from '../../config/fault-spec.ts';
import { collectiveFaultFires, faultFires, faultyPolicy, faultyRunner, FaultyTransport, type FaultEffects } from './faults.ts';
import { epochMs } from '../comm/index.ts';
import { Mailbox } from '../comm/index.ts';
import { StreamPause } from './stream-pause.ts';
import { StreamEnd } from './stream-end.ts';
import type { Action } from '../../schedule/types.ts';
import type { LateTimes } from './late-times.ts';
import { RankExecutor, type ActionDone, type GpuCounts, type MicrobatchSource, type StepResult, type StepRunner } from './rank-executor.ts';
import type { ActionClock } from '../../gpu/action-clock.ts';
import type { RankHost, RankInit, RankPorts, RankState, RankStats, StreamNews, Weights } from './rank-host.ts';
import { toTrainConfig } from '../../config/run-config.ts';
import { Transport, type StepLog } from '../comm/index.ts';
import { createUpdatePolicy } from '../policies/index.ts';
import { sumCopies, withCopyState, withSwapping } from '../policies/index.ts';
import { swappedStages } from '../../config/memory-fields.ts';
import type { DataParallelParts } from '../policies/index.ts';
import { MeshControlClient } from '../comm/index.ts';
import { portRing } from '../comm/index.ts';
import type { Payload } from '../comm/index.ts';

export interface RankRuntime {
  /**
   * Compiles every kernel the rank's steps will run, and only those, before the
   * first step, so step 0 is measured like the others and peers do not wait on
   * a compiler: a dry forward and backward of a one-example micro-batch through
   * each of the rank's stages and a throwaway optimizer step, run with nothing
   * computed (Backend.compileUsed) to name the kernels, compiled in parallel and
   * asynchronously; then the gradients are zeroed. On a backend that compiles
   * nothing (CPU), the dry forward and backward run as they are. Weights and
   * optimizer state are untouched.
   */
  warmUp(): Promise<WarmUp>;
  /**
   * Runs window `step`. While a stream (PipeDream, 2BW: one window of all the run's steps) runs, `onStream` is told
   * its news: the worker that holds stage 0 of replica 0 (tp rank 0) the steps whose every micro-batch it has finished
   * the backward of, as they finish; every worker holding the last stage (tp rank 0) each step's losses as they land.
   */
  step(step: number, onStream?: StreamNews): Promise<StepResult>;
  /** The last step's actions at their GPU times, once read (null: none pending; late-times.ts). */
  lateTimes(): Promise<LateTimes | null>;
  /** A stream ended early, step 1 (workers holding stage 0): no new micro-batch enters; returns how many did (stream-end.ts). */
  holdStream(): number;
  /** A stream ended early, step 2 (every worker): it runs micro-batches below `microbatches` only. */
  endStreamAt(microbatches: number): void;
  /** A stream paused: the worker holds before its next action, its waits' timeouts suspended, until resumeStream (stream-pause.ts). */
  pauseStream(): void;
  resumeStream(): void;
  readWeights(): Promise<Weights>;
  readState(): Promise<RankState>;
  loadState(state: Parameters<RankHost['loadState']>[0]): void;
  stats(): Omit<RankStats, 'buffers' | 'bufferBytes' | 'adapter'>;
  /** Ends every pending and future wait with `e` (device lost, peer failed). */
  fail(e: Error): void;
  dispose(): void;
}

/** What a rank's warm-up did: its time, the kernels its steps use and how many of them it compiled (the rest were compiled already). */
export interface WarmUp {
  warmUpMs: number;
  kernels: number;
  compiled: number;
}


export interface RankHooks extends FaultEffects {
  /** A GpuBackend's: the actions timed on the GPU and not waited for, and its waits and submits counted (gpu-hooks.ts). */
  clock?: ActionClock;
  gpuCounts?: GpuCounts;
}

/**
 * A worker's ports sorted by role: its pipeline neighbours (by their rank, in its replica, ep and tp rank), its
 * ring neighbours (by worker) and the other members of its tp group (by tp rank) and of its ep group (by ep rank).
 */
function portsByRole(m: Mesh, worker: number, peers: ReadonlyMap<number, MessagePort>) {
  const { replica, rank, tpRank, epRank } = placeOf(m, worker);
  const pipeline = new Map<number, MessagePort>();
  const tp = new Map<number, MessagePort>();
  const ep = new Map<number, MessagePort>();
  for (const [w, port] of peers) {
    const p = placeOf(m, w);
    if (p.replica === replica && p.rank === rank && p.epRank === epRank && p.tpRank !== tpRank) tp.set(p.tpRank, port);
    else if (p.replica === replica && p.rank === rank && p.tpRank === tpRank && p.epRank !== epRank) ep.set(p.epRank, port);
    else if (p.replica === replica && p.tpRank === tpRank && p.epRank === epRank) pipeline.set(p.rank, port);
  }
  const next = ringNext(m, worker);
  const prev = ringPrev(m, worker);
  return { replica, tpRank, epRank, pipeline, tp, ep, next, prev, toNext: m.dp > 1 ? peers.get(next) : undefined, fromPrev: m.dp > 1 ? peers.get(prev) : undefined };
}

/**
 * The data-parallel parts of a worker's flush (flush.ts): its ring for
 * each stage's collective over the mesh's ports, the coordinator's control line,
 * and a fault in a collective when one is configured for this worker.
 */
function dataParallelParts(
  m: Mesh,
  init: RankInit,
  roles: ReturnType<typeof portsByRole>,
  mailbox: Mailbox,
  control: MeshControlClient | null,
  fault: Fault | undefined,
  effects: FaultEffects,
): DataParallelParts | undefined {
  const { config, worker, rank } = init;
  const { toNext } = roles;
  if (m.dp === 1 || !toNext) return undefined;
  const exchanges = 2 * (m.dp - 1);
  /** The chunk a fault drops or malforms: posted wrong, or not at all. */
  let spoil: { stage: number; step: number; exchange: number } | null = null;
  const post = (port: MessagePort, msg: Payload) => {
    if (spoil && spoil.stage === msg.stage && spoil.step === msg.step && spoil.exchange === msg.mb) {
      spoil = null;
      if (fault?.kind === 'malformed-message') port.postMessage({ ...msg, shape: [msg.shape[0] + 1] });
      return;
    }
    port.postMessage(msg, [msg.buffer]);
  };
  const what = (stage: number) => (config.zero === 0 ? `the all-reduce of stage ${stage}` : config.zero === 1 ? `the ZeRO-1 update of stage ${stage}` : `the ZeRO-${config.zero} collectives of stage ${stage}`);
  return {
    dp: m.dp,
    replica: roles.replica,
    zero: config.zero,
    reshard: config.reshard,
    prefetch: config.prefetch,
    overlap: config.overlap,
    order: init.schedule.order[rank],
    next: roles.next,
    control,
    onFailure: (e) => mailbox.fail(e),
    ring: (stage, step, hooks) =>
      portRing(
        { position: roles.replica, size: m.dp, worker, next: roles.next, prev: roles.prev, toNext, mailbox, stage, step, recvTimeoutMs: init.recvTimeoutMs, what: what(stage), post },
        hooks,
      ),
    beforeExchange: fault
      ? (stage, step, exchange) => {
          if (!collectiveFaultFires(fault, stage, step, exchange, exchanges)) return;
          if (fault.kind === 'throw') throw new Error(`injected fault: ${what(stage)} threw`);
          if (fault.kind === 'lose-device') effects.loseDevice?.();
          if (fault.kind === 'crash-worker') effects.crash?.();
          if (fault.kind === 'drop-message' || fault.kind === 'malformed-message') spoil = { stage, step, exchange };
        }
      : undefined,
    skipGather: fault?.kind === 'skip-gather' ? (a, step) => faultFires(fault, a, step) : undefined,
  };
}

/** The policy with the tp and ep channels told which action runs before each (their collectives are logged against it). */
function withGroupContext(inner: UpdatePolicy, channels: readonly (TpChannel | EpChannel)[]): UpdatePolicy {
  return {
    ...forwardingPolicy(inner),
    beforeAction: async (a, log) => {
      for (const c of channels) c.enter(a, log);
      await inner.beforeAction?.(a, log);
    },
  };
}

/** Whether the update policy reads a stage's gradients after action `a` of this worker's order (registry.ts gradSumEvery). */
function gradReadAt(update: UpdatePolicyName, mesh: { dp: number }, order: readonly Action[], config: { zero: number; microbatches: number }): (a: Action) => boolean {
  const at = gradSumActions([order], gradSumEvery(update, { dp: mesh.dp, zero: config.zero }, config.microbatches));
  return (a) => at.has(gradSumKey(a));
}

/**
 * The steps of a stream done as stage 0's backwards finish: after the backward of micro-batch k·m − 1 every
 * micro-batch of the first k steps has finished (a stream's stage 0 ends its micro-batches in order).
 */
function streamStepsDone(m: number, onStream: StreamNews): ActionDone {
  return (a) => {
    if (a.stage !== 0 || (a.op !== 'B' && a.op !== 'W') || (a.mb + 1) % m !== 0) return;
    // Told, never awaited: a slow or failed listener does not hold the stream up.
    void Promise.resolve()
      .then(() => onStream({ stepsDone: (a.mb + 1) / m }))
      .catch(() => {});
  };
}

export function createRankRuntime(be: Backend, init: RankInit, ports: RankPorts, hooks: RankHooks = {}): RankRuntime {
  const { config, rank, schedule, stageBlocks, spec, worker } = init;
  const train = toTrainConfig(config);
  const kind = scheduleKind(config.schedule);
  const m = meshOfRun(config);
  const roles = portsByRole(m, worker, ports.peers);
  const replica = m.dp > 1 ? roles.replica : undefined;
  const tpRank = m.tp > 1 ? roles.tpRank : undefined;
  const epSize = m.ep ?? 1;
  const epRank = epSize > 1 ? roles.epRank : undefined;

  const mailbox = new Mailbox(rank, m.tp > 1 || epSize > 1 ? `${laneLabel(m, worker)} (worker ${worker})` : replica !== undefined ? `replica ${replica}, rank ${rank}` : `rank ${rank}`);
  for (const [peer, port] of roles.pipeline) mailbox.attach(port, peer);
  if (roles.fromPrev) mailbox.attach(roles.fromPrev, `worker ${roles.prev}`);
  if (roles.toNext && roles.toNext !== roles.fromPrev) mailbox.attach(roles.toNext, `worker ${roles.next}`);
  const group = tpGroup(m, worker);
  for (const [j, port] of roles.tp) mailbox.attach(port, `worker ${group[j]}`);
  // The stage's tp group (tp = 1: a channel to nobody, whose collectives return their input).
  const tp = new TpChannel({ be, index: roles.tpRank, size: m.tp, workers: group, ports: roles.tp, mailbox, recvTimeoutMs: init.recvTimeoutMs });
  // The stage's ep group (ep = 1: none; its MoE layers hold every expert).
  const experts = epGroup(m, worker);
  for (const [e, port] of roles.ep) mailbox.attach(port, `worker ${experts[e]}`);
  const ep = epSize > 1 ? new EpChannel({ be, index: roles.epRank, size: epSize, workers: experts, ports: roles.ep, mailbox, recvTimeoutMs: init.recvTimeoutMs }) : null;

  const stages = new Map<number, Stage>();
  schedule.stageToRank.forEach((r, s) => {
    if (r === rank) stages.set(s, new Stage(be, spec, s, stageBlocks[s], config.seed, { recompute: config.recompute, recomputeAttention: config.recomputeAttention, tp: tp.groupFor(s), sequenceParallel: config.sequenceParallel, ...(ep ? { ep: ep.groupFor(s) } : {}) }));
  });
  const sampler = new BatchSampler(createDataset(train, init.corpus).train, config.batchSize, config.seed);
  const windows = UPDATE_WINDOWS[kind.update];
  const firstStep = init.stream?.firstStep ?? 0;
  const data = new SampledMicrobatches(be, sampler, config.microbatches, windows.stream, windows.lossOver, replicaRows(m, config.batchSize, roles.replica), firstStep, { index: roles.epRank, size: epSize });

  const control = ports.control ? new MeshControlClient(ports.control, init.recvTimeoutMs) : null;

  // A configured fault fires on one worker: the one of its replica (replica 0 by default).
  const fault = init.fault && (init.fault.replica ?? 0) === roles.replica ? init.fault : undefined;
  const transportOptions = { rank, replica, be, stageToRank: schedule.stageToRank, ports: roles.pipeline, mailbox, recvTimeoutMs: init.recvTimeoutMs };
  const transport = fault ? new FaultyTransport(transportOptions, fault) : new Transport(transportOptions);
  // Model copies (DualPipe): each stage's gradients are summed over its copies, after the dp all-reduces and before the update (copy-sum.ts).
  const copies = (schedule.copies ?? 1) > 1 ? { be, rank, schedule, stages, ports: roles.pipeline, mailbox, recvTimeoutMs: init.recvTimeoutMs } : null;
  // A stream with checkpoints: each worker of replica 0 tells its state as its stage ends a block of a step saved at.
  let onStreamNow: StreamNews | undefined;
  const every = (replica ?? 0) === 0 ? (init.stream?.checkpointEvery ?? 0) : 0;
  const blockEnded = async (stepsDone: number, a: Action, log: StepLog) => {
    if (every <= 0 || stepsDone % every !== 0 || stepsDone >= config.steps || !onStreamNow) return;
    const tell = onStreamNow;
    const t0 = epochMs();
    const state = await readState();
    const t1 = epochMs();
    // On the timeline: the read holds this worker between its block's last backward and its next action.
    log.comm(a.stage, a.mb, 'state-read', t0, t1);
    void Promise.resolve(tell({ state: { ...state, stepsDone, readMs: t1 - t0 } })).catch(() => {});
  };
  const base = createUpdatePolicy(kind.update, be, stages, train, dataParallelParts(m, init, roles, mailbox, control, fault, hooks), copies ? (step, log, chunks) => sumCopies(copies, step, log, chunks) : undefined, { firstStep, blockEnded }, config.offloadOptimizer === true);
  const summed = copies ? withCopyState(base, copies) : base;
  // The tp group's collectives are numbered and logged against the action running (tp-collective.ts).
  const channels = [...(m.tp > 1 ? [tp] : []), ...(ep ? [ep] : [])];
  const inTp = channels.length > 0 ? withGroupContext(summed, channels) : summed;
  // Swapping (vDNN): the named stages' stashes in host memory between their forward and their backward (swap.ts).
  const swapped = new Set(schedule.stageToRank.map((_, s) => s).filter((s) => swappedStages(config).includes(s % (config.ranks * config.virtual))));
  const policy = swapped.size > 0 ? withSwapping(inTp, { be, stages, swapped, order: schedule.order[rank] }) : inTp;
  let current = 0;
  const streamEnd = windows.stream ? new StreamEnd(mailbox) : null;
  const streamPause = windows.stream ? new StreamPause(mailbox.timers) : null;
  const executor = new RankExecutor({
    rank,
    replica,
    tpRank,
    epRank,
    be,
    order: schedule.order[rank],
    stages,
    data,
    transport,
    policy: fault ? faultyPolicy(policy, fault, hooks, () => current) : policy,
    clock: hooks.clock,
    gpuCounts: hooks.gpuCounts,
    ...(streamEnd && streamPause ? { admit: (a: Action) => streamPause.admit().then(() => streamEnd.admit(a)) } : {}),
    // Sequence parallelism: the LayerNorms' partial gradients summed over the tp group where the policy reads them.
    // Expert parallelism: the dense gradients summed over the ep group there too.
    ...([...stages.values()].some((st) => st.gradsSummedOverTp.length > 0 || st.gradsSummedOverEp.length > 0) ? { sumsGradsAfter: gradReadAt(kind.update, m, schedule.order[rank], config) } : {}),
  });
  const runner: StepRunner = fault ? faultyRunner(executor, fault) : executor;
  // One worker tells a stream's progress: the one whose backwards end each micro-batch (stage 0), of replica 0, tp rank 0.
  const reportsStreamSteps = windows.stream && stages.has(0) && (replica ?? 0) === 0 && (tpRank ?? 0) === 0;
  // And every worker whose forwards end in the loss (the last stage, tp rank 0; one per replica) tells each step's losses.
  const reportsStreamLosses = windows.stream && [...stages.values()].some((st) => st.isLast) && (tpRank ?? 0) === 0;

  /** The weights this worker holds: its stages' whole parameters, or with ZeRO-3 the pieces it owns (gather-state.ts joins them). */
  const readWeights = async (): Promise<Weights> => {
    const owned = await policy.ownedWeights?.();
    if (owned) return owned;
    // Every stage's read begun at once: one wait for the device's queue.
    const parts = await Promise.all([...stages.values()].map((st) => st.readParams()));
    return Object.assign({}, ...parts) as Weights;
  };
  /** Its weights and optimizer state (and, PipeDream-2BW, the version before the latest): between steps, or as a stream's stage ends a block. */
  const readState = async (): Promise<RankState> => {
    const [params, optimizer, previous] = await Promise.all([readWeights(), policy.readOptimizer(), policy.readPrevious?.() ?? null]);
    return { params, optimizer, ...(previous ? { previous } : {}) };
  };
  const WARM_UP_MB = 0x7fffffff;
  /** One forward and backward of a one-example micro-batch through each of the rank's stages; with `update`, a throwaway optimizer's step too. */
  const dryStep = async (update: boolean) => {
    // Gradients a policy keeps without storage between its backwards (ZeRO-2/3) get it for the pass, and give it back after.
    const freed = [...stages.values()].flatMap((st) => st.params.filter((p) => !be.hasStorage(p.grad)));
    for (const st of stages.values()) st.zeroGrads();
    for (const st of stages.values()) {
      // A micro-batch of the run's size (the kernels a shape picks, e.g. the matmul's ragged or aligned loads,
      // are the ones the steps pick); where sequence parallelism cannot split it, one example per tp worker.
      const perMb = config.batchSize / ((config.dp ?? 1) * epSize * config.microbatches);
      const examples = Number.isInteger(perMb) && perMb % st.rowSplit === 0 ? perMb : st.rowSplit;
      const inRows = st.isFirst ? examples : (rowsPerExample(spec) * examples) / st.rowSplit;
      const input = be.zeros([inRows, st.inCols], st.inDType);
      const labels = st.isLast ? be.zeros([st.outputRows(inRows)], 'i32') : undefined;
      const out = await st.forward(WARM_UP_MB, input, labels, 1);
      if (labels) be.dispose(labels);
      const dOut = st.isLast ? null : be.zeros([...out.shape]);
      be.dispose(out);
      const dIn = await st.backward(WARM_UP_MB, dOut);
      if (dIn) be.dispose(dIn);
    }
    if (update) {
      const opt = createOptimizer(be, [...stages.values()].flatMap((st) => st.params), train);
      opt.step(1);
      opt.dispose();
    }
    for (const st of stages.values()) {
      st.zeroGrads();
      for (const l of st.takeRouteLoads()) be.dispose(l.counts); // the dry micro-batch's routing is no step's
    }
    for (const p of freed) be.freeStorage(p.grad);
  };
  return {
    async warmUp() {
      const t0 = epochMs();
      tp.leave();
      ep?.leave();
      let kernels = 0, compiled = 0;
      if (be.compileUsed) {
        // Nothing is computed in this pass (weights, optimizer state untouched): it only names the kernels to compile.
        ({ kernels, compiled } = await be.compileUsed(() => dryStep(true)));
        for (const st of stages.values()) for (const p of st.params) if (be.hasStorage(p.grad)) be.fill(p.grad, 0);
      } else {
        await dryStep(false);
      }
      await be.sync();
      return { warmUpMs: epochMs() - t0, kernels, compiled };
    },
    step: (step, onStream) => {
      current = step;
      onStreamNow = onStream;
      return runner.runStep(
        step,
        onStream && reportsStreamSteps ? streamStepsDone(config.microbatches, onStream) : undefined,
        onStream && reportsStreamLosses ? { microbatches: config.microbatches, tell: (losses) => void Promise.resolve(onStream({ losses })).catch(() => {}) } : undefined,
      );
    },
    lateTimes: () => runner.lateTimes(),
    holdStream: () => streamEnd?.hold() ?? 0,
    endStreamAt: (microbatches) => streamEnd?.endAt(microbatches),
    pauseStream: () => streamPause?.pause(),
    resumeStream: () => streamPause?.resume(),
    readWeights,
    readState,
    loadState(state) {
      // Every check before any write: the stages' weights, then the optimizer's (which checks its own whole before it sets anything).
      for (const st of stages.values()) st.checkParams(state.params);
      if (firstStep > 0 && !state.previous) throw new Error(`a PipeDream-2BW stream resumed at step ${firstStep} needs the weight version before the latest (the checkpoint's previous.*)`);
      if (state.previous && !policy.loadPrevious) throw new Error(`only a PipeDream-2BW stream loads a previous weight version; ${config.schedule} keeps no older version beside its weights`);
      policy.loadOptimizer(state.optimizer);
      if (state.previous) policy.loadPrevious?.(state.previous);
      for (const st of stages.values()) st.loadParams(state.params);
    },
    stats() {
      let liveStashes = 0, stashBytes = 0;
      for (const st of stages.values()) {
        liveStashes += st.liveStashes();
        stashBytes += st.stashBytes();
      }
      return { rank, liveStashes, stashBytes };
    },
    fail(e) {
      mailbox.fail(e);
    },
    dispose() {
      policy.dispose();
      for (const st of stages.values()) st.dispose();
      transport.dispose();
      mailbox.clear();
      for (const p of ports.peers.values()) p.close();
      control?.close();
    },
  };
}
