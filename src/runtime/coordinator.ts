/**
 * The coordinator: validates a run configuration, cuts the model into stages,
 * builds and validates the schedule (all before any worker starts), starts one
 * worker per place of the mesh (dp replicas × ranks; src/schedule/mesh.ts),
 * wires one MessageChannel per pair of workers that exchange activations or
 * gradients (in a replica) or ring chunks (across replicas, same rank), runs the
 * steps and gathers the measured timelines into a report. Any failure ends every
 * worker and rejects with a message naming the replica, rank, stage and action
 * (or collective); it never hangs.
 */
import { PausableTimers } from './comm/index.ts';
import { cutPauses, StreamPauses, withLateTimes, type LateTimes, type PauseSwitch } from './executor/index.ts';
import type { Timeline } from '../schedule/timeline.ts';
import { laneLabel, meshOfRun, placeOf, stageWorkers, tpGroup, workerCount, workerOf, ringNext, type Mesh } from '../schedule/mesh.ts';
import { MeshControlHub } from './comm/index.ts';
import { channelsFor } from './channels.ts';
import { copyDifference, replicaDifference, tpDifference } from './report/index.ts';
import { checkStart, type TrainProgress } from '../nn/train.ts';
import { toTrainConfig } from '../config/run-config.ts';
import { gatherProgress, joinProgress, stateReaders, wholeWeights } from './gather-state.ts';
import { StreamCheckpoints } from './stream-checkpoint.ts';
import { tpParams } from '../nn/tp-params.ts';
import { tpView } from './tp-state.ts';
import { epView, expertParamNames } from './ep-state.ts';
import type { RankHost, RankInit, RankPorts, Weights } from './executor/index.ts';
import type { StepResult } from './executor/index.ts';
import { planRun, windowOrder, type RunPlan } from './executor/index.ts';
import { keepsPreviousVersion } from '../schedule/registry.ts';
import type { RunConfig } from '../config/run-config.ts';
import type { BudgetTarget } from '../config/memory-budget.ts';
import { buildReport, moeLoadSteps, stepTimeline, type MoeLoadStep, type RunReport, type StepRecord } from './report/index.ts';
import { budgetBreach, MemoryBudgetError } from './budget-check.ts';
import { streamNews, streamStepLosses, type StreamListeners } from './stream-news.ts';

export interface StepProgress {
  step: number;
  steps: number;
  loss: number;
  /** An MoE model's aux loss of the step summed over the workers, and its routing counts per layer, expert and micro-batch (not for a stream); absent for a dense model. */
  auxLoss?: number;
  moeLoad?: MoeLoadStep;
  timeline: Timeline;
  elapsedMs: number;
}

export interface RunOptions {
  /** A host for worker `worker` of the mesh (the pipeline rank with one pipeline). */
  hostFactory: (worker: number) => RankHost;
  onStep?: (p: StepProgress) => void;
  /**
   * A stream (PipeDream, PipeDream-2BW) runs all its steps as one window, so its onStep calls all come at its end;
   * while it runs, onStreamProgress is told how many steps every micro-batch has finished its backward of, and
   * onStreamLoss each step's loss (stream-news.ts). Not called for synchronous schedules: their onStep comes after
   * every step.
   */
  onStreamProgress?: StreamListeners['onStreamProgress'];
  onStreamLoss?: StreamListeners['onStreamLoss'];
  /** Called once the plan is made and the ranks are up. */
  onStarted?: (plan: RunPlan, adapter: string) => void;
  /** Aborting stops the run after the step in flight (a stream: at its next step boundary, stream-end.ts); the report holds the steps done. */
  signal?: AbortSignal;
  /** Awaited before each step (pause and single-step). */
  beforeStep?: (step: number) => Promise<void>;
  /** A stream has no step to pause at: this switch holds its workers between their actions while on (stream-pause.ts). */
  pause?: PauseSwitch;
  readWeights?: boolean;
  /**
   * Every this many steps (not after the last one, whose weights come with the
   * report when readWeights is set) the weights are read back from the ranks and
   * handed to onWeights, e.g. for a validation curve. 0 or absent: never.
   */
  weightsEvery?: number;
  /** `step` is the 0-based step just done. */
  onWeights?: (step: number, weights: Weights) => void;
  /** A rank that has not finished a step after this long ends the run (PipeDream: steps × this for its one stream). Default 120 s. */
  stepTimeoutMs?: number;
  /** How long a rank waits for a message from a peer. Default 60 s. */
  recvTimeoutMs?: number;
  /**
   * After a run that ended cleanly (no fault configured), each rank whose
   * dispose() said it is reusable is offered here; one taken (true) is not
   * terminated: the taker owns it (a pool of warm workers). Absent: every rank ends.
   */
  keepWarm?: (host: RankHost) => boolean;
  /**
   * Start from this point of a run of the same configuration (a checkpoint):
   * every worker loads its weights and optimizer state from it before the
   * first step, the first step is from.stepsDone (its learning rate and batch
   * follow from the step), and the report's losses begin with from.losses.
   * Synchronous schedules and PipeDream-2BW (a new stream of the steps left,
   * from.previous its older weight version: stream-checkpoint.ts); not PipeDream.
   */
  from?: TrainProgress<ArrayLike<number>>;
  /**
   * Every this many steps done, and once more after the last step run (the
   * run's end or its stop), the run's progress (weights and optimizer state
   * gathered from the workers — ZeRO-1 shards joined — losses and steps done)
   * is handed to onProgress between steps. 0 or absent: only at the end.
   * Synchronous schedules, and PipeDream-2BW, whose stream is checkpointed as
   * its stages end each such step's block (stream-checkpoint.ts); not PipeDream.
   * onProgress is not awaited: encoding and storing it stay off the workers' path.
   */
  progressEvery?: number;
  onProgress?: (p: TrainProgress) => void;
  /** Asked before each step after the first: true hands the progress so far to onProgress first (e.g. the run is about to pause). */
  progressNow?: () => boolean;
  /** The budget's plan (config/memory-budget.ts): 'gpu' for hosts on a GPU backend (its overheads too); 'cpu' (default) the plain plan. */ budgetTarget?: BudgetTarget;
}

export class RunError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RunError';
  }
}

/** The mesh of a plan. */
export function meshOf(plan: RunPlan): Mesh {
  return meshOfRun(plan.config);
}

/** A worker's death named by its place in the mesh and what it was doing (its last status), e.g. inside an all-reduce. */
function namedDeath(m: Mesh, w: number, e: unknown, hub: MeshControlHub | null): Error {
  const msg = e instanceof Error ? e.message : String(e);
  if (m.dp === 1 && m.tp === 1 && (m.ep ?? 1) === 1) return e instanceof Error ? e : new Error(msg);
  const { replica, rank, tpRank, epRank } = placeOf(m, w);
  const doing = hub?.status(w);
  const body = msg.replace(new RegExp(`^rank ${w}: `), '');
  const where = `replica ${replica}, rank ${rank}${(m.ep ?? 1) > 1 ? `, ep rank ${epRank}` : ''}${m.tp > 1 ? `, tp rank ${tpRank}` : ''}`;
  return new RunError(`${where} (worker ${w})${doing ? `, during ${doing}` : ''}: ${body}`);
}

/**
 * Ends a running stream early (stream-end.ts): every worker holding stage 0 (each replica's, each tp rank's) lets no
 * new micro-batch in and says how many did; every worker then runs only those below the next step boundary at or past
 * the most that entered. Resolves to the steps the stream keeps.
 */
async function endStreamEarly(plan: RunPlan, hosts: readonly RankHost[]): Promise<number> {
  const { config, schedule } = plan;
  const m = meshOf(plan);
  const entry = hosts.filter((_, w) => placeOf(m, w).rank === schedule.stageToRank[0]);
  const entered = await Promise.all(entry.map((h) => h.holdStream()));
  // The window's steps (a resumed stream's: those left).
  const steps = Math.min(schedule.microbatches / config.microbatches, Math.max(1, Math.ceil(Math.max(...entered) / config.microbatches)));
  await Promise.all(hosts.map((h) => h.endStreamAt(steps * config.microbatches)));
  return steps;
}

/** `p`, or a RunError after `ms` of time the timers were not suspended (a paused stream's). */
function withTimeout<T>(p: Promise<T>, ms: number, message: () => string, timers = new PausableTimers()): Promise<T> {
  let cancel = () => {};
  const t = new Promise<never>((_, reject) => {
    cancel = timers.start(ms, () => reject(new RunError(message())));
  });
  return Promise.race([p, t]).finally(() => cancel());
}

/** Plans `input` (one plain-JSON copy, validated once, before any worker starts), then runs it. */
export async function runPipeline(input: RunConfig, opts: RunOptions): Promise<RunReport> {
  return runPlan(planRun(input, opts.budgetTarget), opts);
}

/** Runs a plan made by planRun. */
export async function runPlan(whole: RunPlan, opts: RunOptions): Promise<RunReport> {
  const { from } = opts;
  const { stream } = whole.windows;
  // A stream keeps a state between its steps only under PipeDream-2BW (two weight versions, updated per block).
  const streamState = keepsPreviousVersion(whole.config.schedule);
  if (from && stream && !streamState) throw new RunError(`a run of ${whole.kind.name} cannot start from a saved state: its weight stash is one per micro-batch in flight (use PipeDream-2BW or a synchronous schedule)`);
  if (from) checkStart(toTrainConfig(whole.config), from);
  if (from && stream && from.stepsDone >= whole.config.steps) throw new RunError(`nothing to run: the saved state is of step ${from.stepsDone}, the stream's last (steps = ${whole.config.steps})`);
  if (from && stream && from.stepsDone > 0 && !from.previous) throw new RunError(`a PipeDream-2BW stream resumed at step ${from.stepsDone} needs the weight version before the latest (the checkpoint has none)`);
  // A resumed stream is a new window of the steps left, its micro-batches numbered from its own start (run-plan.ts).
  const firstStep = stream ? (from?.stepsDone ?? 0) : 0;
  const plan: RunPlan = firstStep > 0 ? { ...whole, schedule: windowOrder(whole.config, whole.config.steps - firstStep) } : whole;
  const { schedule, config } = plan;
  const windowSteps = config.steps - firstStep;
  const streamEvery = streamState && opts.onProgress ? (opts.progressEvery ?? 0) : 0;
  const recvTimeoutMs = opts.recvTimeoutMs ?? 60_000;
  const stepTimeoutMs = opts.stepTimeoutMs ?? 120_000;
  // A window may hold several steps (a stream holds all of them): each step gets the same time.
  const windowCount = plan.windows.windows(config.steps);
  const windowTimeoutMs = stepTimeoutMs * (config.steps / windowCount);

  const hosts: RankHost[] = [];
  const kept = new Set<RankHost>();
  const m = meshOf(plan);
  let hub: MeshControlHub | null = null;
  let deaths: Error[] = [];
  const ended = () => {
    for (const h of hosts) if (!kept.has(h)) h.terminate();
    hub?.close();
  };
  const tStart = performance.now();
  try {
    const started = await startRanks(plan, opts.hostFactory, hosts, recvTimeoutMs, stream ? { firstStep, checkpointEvery: streamEvery } : undefined);
    const { up, fatal } = started;
    hub = started.hub;
    deaths = started.deaths;
    // Every replica holds the same weights: replica 0's workers give them (with ZeRO-3 each worker holds a piece: all give theirs).
    const weightHosts = config.zero === 3 ? hosts : hosts.slice(0, config.ranks * stageWorkers(m));
    const rules = tpParams(plan.spec);
    const adapter = up[0]?.adapter ?? 'unknown';
    opts.onStarted?.(plan, adapter);

    if (from) {
      // PipeDream-2BW's older version goes to its stream; a synchronous schedule resumes from the latest alone.
      const state = { params: from.params, optimizer: from.optimizer, ...(from.previous && streamState ? { previous: from.previous } : {}) };
      // Each tp worker loads its pieces of the whole state (a checkpoint holds whole tensors: any mesh resumes it).
      // Each ep worker its experts' rows (ep-state.ts).
      const experts = expertParamNames(plan.spec);
      await Promise.race([Promise.all(hosts.map((h, w) => h.loadState(epView(tpView(state, rules, m.tp, placeOf(m, w).tpRank), experts, m.ep ?? 1, placeOf(m, w).epRank)))), fatal]);
    }
    // The first window: a step of a synchronous schedule; a stream has one.
    const start = stream ? 0 : (from?.stepsDone ?? 0);
    /** Every step's loss so far, from the start of the run (a resumed run's earlier ones first). */
    const allLosses = [...(from?.losses ?? [])];
    const evals = [...(from?.evals ?? [])];
    let lastProgress = -1;
    const stateReadMs: number[] = [];
    const emitProgress = async (stepsDone: number) => {
      if (!opts.onProgress || (stream && !streamState) || stepsDone === lastProgress) return;
      lastProgress = stepsDone;
      const tRead = performance.now();
      const p = await Promise.race([gatherProgress(m, config.zero, hosts, stepsDone, allLosses, evals, rules), fatal]);
      stateReadMs.push(performance.now() - tRead);
      opts.onProgress(p);
    };

    const tUp = performance.now();
    let firstStepMs: number | null = null;
    const records: StepRecord[] = [];
    /** Each record's step results as the workers gave them (its record is rebuilt from them when its late times come). */
    const given: StepResult[][] = [];
    const recordOf = (step: number, results: StepResult[]) => stepTimeline(reportPlan, step, pauses ? cutPauses(results, pauses.pauses) : results);
    /** The last record with its workers' actions at their GPU times (they come a step late: executor/late-times.ts). */
    const placeLate = (late: readonly (LateTimes | null | undefined)[]) => {
      const i = records.length - 1;
      const mine = late.map((l) => (i >= 0 && l?.step === records[i].step ? l : null));
      if (!mine.some((l) => l)) return;
      given[i] = withLateTimes(given[i], mine);
      records[i] = recordOf(records[i].step, given[i]);
    };
    let stepLosses: number[] | undefined;
    const t0 = performance.now();
    const windows = windowCount;
    let streamCut: Promise<number | null> | null = null;
    let pauses: StreamPauses | null = null;
    let reportPlan = plan;
    const lastStageRank = schedule.stageToRank[schedule.stageToRank.length - 1];
    const lossWorkers = hosts.map((_, w) => w).filter((w) => placeOf(m, w).rank === lastStageRank && placeOf(m, w).tpRank === 0);
    const progressWorker = workerOf(m, 0, schedule.stageToRank[0], 0);
    // PipeDream-2BW with checkpoints: replica 0's workers tell their states as their stages end a saved step's block.
    const readers = stateReaders(m, config.zero);
    const inStream = streamEvery > 0 && opts.onProgress
      ? new StreamCheckpoints({ readers, prior: allLosses, join: (states, done, losses) => joinProgress(m, config.zero, states, done, losses, evals, rules), onProgress: opts.onProgress })
      : null;
    const listeners = inStream ? { ...opts, onStreamLoss: (p: Parameters<NonNullable<RunOptions['onStreamLoss']>>[0]) => (inStream.loss(p.step, p.loss), opts.onStreamLoss?.(p)) } : opts;
    const news = stream
      ? streamNews(listeners, {
          steps: config.steps, microbatches: config.microbatches, lossOver: plan.windows.lossOver, lossWorkers, progressWorker, t0, pausedMs: () => pauses?.pausedMs() ?? 0, firstStep,
          ...(inStream ? { stateWorkers: hosts.map((_, w) => w).slice(0, readers), onState: (w: number, st: Parameters<StreamCheckpoints['state']>[1]) => inStream.state(w, st) } : {}),
        })
      : undefined;
    for (let step = start; step < windows; step++) {
      if (opts.signal?.aborted) break;
      if (step > start && opts.progressNow?.()) await emitProgress(step);
      if (opts.beforeStep) await opts.beforeStep(step);
      if (opts.signal?.aborted) break;
      const pending = new Set(hosts.map((h) => h.rank));
      // A stop during a stream ends it at a step boundary (stream-end.ts) rather than after all its steps.
      const timers = new PausableTimers();
      if (stream && opts.pause) pauses = new StreamPauses(hosts, opts.pause, timers);
      const stopStream = () => {
        pauses?.release();
        streamCut ??= endStreamEarly(plan, hosts).catch(() => null);
      };
      if (stream) opts.signal?.addEventListener('abort', stopStream, { once: true });
      const results = await withTimeout(
        Promise.race([
          Promise.all(
            hosts.map((h, w) =>
              h.step(step, news?.(w)).then((r: StepResult) => {
                pending.delete(h.rank);
                return r;
              }),
            ),
          ),
          fatal,
        ]),
        windowTimeoutMs,
        () =>
          `${plan.windows.stream ? `the ${plan.kind.name} stream of ${config.steps} steps` : `step ${step}`}: ${workerCount(m) > m.ranks ? 'worker' : 'rank'} ${[...pending].map((w) => (workerCount(m) > m.ranks ? `${w} (${laneLabel(m, w)})` : String(w))).join(', ')} did not finish within ${(windowTimeoutMs / 1000).toFixed(0)} s`,
        timers,
      ).finally(() => {
        opts.signal?.removeEventListener('abort', stopStream);
        pauses?.release();
      });
      inStream?.close();
      const cutTo = streamCut ? await streamCut : null;
      // The window ran the stream's first cutTo steps: the report's schedule and counts are theirs (its config keeps the run's).
      if (cutTo !== null && cutTo < windowSteps) reportPlan = { ...plan, config: { ...config, steps: cutTo }, schedule: windowOrder(config, cutTo) };
      else if (firstStep > 0) reportPlan = { ...plan, config: { ...config, steps: windowSteps } };
      if (inStream?.error) throw new RunError(`a checkpoint inside the stream: ${inStream.error.message}`);
      placeLate(results.map((r) => r.late));
      const rec = recordOf(step, results);
      // The live timeline: the latest step whose actions are at their GPU times (this one's come with the next).
      const shown = results.some((r) => r.timesLate) && records.length > 0 ? records[records.length - 1].timeline : rec.timeline;
      const losses = stream ? streamStepLosses(results, config.microbatches, plan.windows.lossOver) : [rec.loss];
      // A stream's steps are the run's from its first (a resumed one's checkpoint step).
      const first = stream ? firstStep : step;
      losses.forEach((loss, i) => {
        if (!Number.isFinite(loss)) {
          throw new RunError(`step ${first + i}: the loss is ${loss}, not a finite number; the run stopped (try a smaller learning rate)`);
        }
      });
      const breach = budgetBreach(config, stream ? `the stream's steps ${first}–${first + losses.length - 1}` : `step ${step}`, results);
      if (breach) throw new MemoryBudgetError(breach);
      records.push(rec);
      given.push(results);
      firstStepMs ??= performance.now() - tStart;
      const aux = stream || !results.some((r) => r.auxLoss !== undefined) ? {} : { auxLoss: results.reduce((a, r) => a + (r.auxLoss ?? 0), 0), moeLoad: moeLoadSteps(step, results.map((r) => r.moeLoad), m, config.microbatches, false, rec.timeline)[0] };
      losses.forEach((loss, i) => opts.onStep?.({ step: first + i, steps: config.steps, loss, ...aux, timeline: shown, elapsedMs: performance.now() - t0 }));
      if (stream) stepLosses = losses;
      allLosses.push(...losses);
      const progressEvery = opts.progressEvery ?? 0;
      if (!stream && progressEvery > 0 && (step + 1) % progressEvery === 0 && step + 1 < config.steps) await emitProgress(step + 1);
      const every = opts.weightsEvery ?? 0;
      if (opts.onWeights && every > 0 && !stream && (step + 1) % every === 0 && step + 1 < config.steps) {
        const w = wholeWeights(m, config.zero, await Promise.race([Promise.all(weightHosts.map((h) => h.readWeights())), fatal]), rules);
        opts.onWeights(step, w);
      }
    }
    const wallMs = performance.now() - t0 - (pauses?.pausedMs() ?? 0);
    // The run's end waits for its last step's GPU times.
    if (given.length > 0 && given[given.length - 1].some((r) => r.timesLate)) placeLate(await Promise.race([Promise.all(hosts.map((h) => h.lateTimes?.() ?? null)), fatal]));
    // A stream's saves inside it: each read on its workers' path.
    if (inStream) stateReadMs.unshift(...inStream.readMs);
    if (records.length === 0 && opts.signal?.aborted) throw new RunError('the run was cancelled before its first step finished');
    if (records.length > 0) await emitProgress(stream ? firstStep + (stepLosses?.length ?? 0) : start + records.length);

    let weights: Weights | undefined;
    let replicaMismatch: number | undefined;
    let tpMismatch: number | undefined;
    if (opts.readWeights) {
      // Every replica's weights: replica 0's are the run's, the others must equal them.
      const all = await Promise.race([Promise.all(hosts.map((h) => h.readWeights())), fatal]);
      weights = wholeWeights(m, config.zero, all, rules);
      // With ZeRO-3 no two workers hold the same weights: there is nothing to compare.
      if (m.dp > 1 && config.zero !== 3) replicaMismatch = replicaDifference(m, all);
      // Model copies (DualPipe): every copy of a stage, on every replica, must hold the same weights (with ZeRO-3: the same pieces).
      if ((schedule.copies ?? 1) > 1) replicaMismatch = copyDifference(m, all);
      // tp: the parameters tp does not split are held by every worker of a stage's tp group; the run's are tp rank 0's.
      if (m.tp > 1) tpMismatch = tpDifference(m, all);
    }
    const stats = await Promise.race([Promise.all(hosts.map((h) => h.stats())), fatal]);
    const leakedBuffers = await disposeRanks(plan, hosts, fatal, opts.keepWarm, kept);
    const phases = {
      startMs: tUp - tStart,
      firstStepMs: firstStepMs ?? 0,
      stepsMs: wallMs,
      endMs: performance.now() - tStart - (tUp - tStart) - wallMs,
      ranks: up.map((u) => u.startup),
    };
    return buildReport({ config, plan: reportPlan, records, adapter, wallMs, weights, stats, leakedBuffers, stepLosses, priorLosses: from?.losses, phases, replicaMismatch, tpMismatch, stateReadMs });
  } catch (e) {
    const cause = deaths[0] ?? e;
    throw cause instanceof Error ? cause : new RunError(String(cause));
  } finally {
    ended();
  }
}

/**
 * Starts one worker per place of the mesh (hosts from `hostFactory`, pushed onto
 * `hosts` so the caller can end them), wires their channels (and, with dp > 1,
 * the control hub) and awaits every init (device, stages, warm-up).
 */
async function startRanks(plan: RunPlan, hostFactory: (worker: number) => RankHost, hosts: RankHost[], recvTimeoutMs: number, stream?: RankInit['stream']) {
  const { schedule, config } = plan;
  const m = meshOf(plan);
  const workers = workerCount(m);
  for (let w = 0; w < workers; w++) hosts.push(hostFactory(w));
  const hub = m.dp > 1 ? new MeshControlHub(workers) : null;
  // A dead worker is the cause of whatever fails after it: its named death is what the run reports.
  const deaths: Error[] = [];
  const fatal = Promise.race(
    hosts.map((h, w) =>
      h.fatal.catch((e: unknown) => {
        const named = namedDeath(m, w, e, hub);
        deaths.push(named);
        throw named;
      }),
    ),
  );
  fatal.catch(() => {});
  const ports: RankPorts[] = hosts.map((_, w) => ({ peers: new Map<number, MessagePort>(), control: hub?.workerPorts[w] }));
  for (const [a, b] of channelsFor(plan)) {
    const ch = new MessageChannel();
    ports[a].peers.set(b, ch.port1);
    ports[b].peers.set(a, ch.port2);
  }
  const inits = hosts.map((h, w) => {
    const init: RankInit = { config, spec: plan.spec, rank: placeOf(m, w).rank, worker: w, schedule, stageBlocks: plan.stageBlocks, recvTimeoutMs, fault: config.fault, ...(plan.corpus ? { corpus: plan.corpus } : {}), ...(stream ? { stream } : {}) };
    return h.init(init, ports[w]);
  });
  try {
    const up = await Promise.race([Promise.all(inits), fatal]);
    return { up, fatal, hub, deaths };
  } catch (e) {
    hub?.close();
    throw deaths[0] ?? e;
  }
}

/** Frees every rank's stages; each reusable one (no leak, healthy device, no fault configured) is offered to `keepWarm` and, when taken, added to `kept`. Returns the buffers leaked, all ranks together. */
async function disposeRanks(plan: RunPlan, hosts: RankHost[], fatal: Promise<never>, keepWarm: RunOptions['keepWarm'], kept: Set<RankHost>): Promise<number> {
  const disposed = await Promise.race([Promise.all(hosts.map((h) => h.dispose())), fatal]);
  if (keepWarm && !plan.config.fault) {
    disposed.forEach((d, i) => {
      if (d.reusable && d.leakedBuffers === 0 && keepWarm(hosts[i])) kept.add(hosts[i]);
    });
  }
  return disposed.reduce((s, d) => s + d.leakedBuffers, 0);
}

/**
 * Prepares workers for a plan without training: starts its ranks (device,
 * stages, the warm-up that compiles the kernels its steps use), frees their
 * stages and hands every reusable one to `keepWarm` (the page does this at load,
 * so its first Run starts on warm workers). Rejects as a run would when a rank
 * fails to start; every rank not kept ends.
 */
export async function prepareRanks(plan: RunPlan, opts: Pick<RunOptions, 'hostFactory' | 'keepWarm'>): Promise<{ kept: number }> {
  const hosts: RankHost[] = [];
  const kept = new Set<RankHost>();
  let hub: MeshControlHub | null = null;
  try {
    const started = await startRanks(plan, opts.hostFactory, hosts, 60_000);
    hub = started.hub;
    await disposeRanks(plan, hosts, started.fatal, opts.keepWarm, kept);
    return { kept: kept.size };
  } catch (e) {
    throw e instanceof Error ? e : new RunError(String(e));
  } finally {
    for (const h of hosts) if (!kept.has(h)) h.terminate();
    hub?.close();
  }
}
