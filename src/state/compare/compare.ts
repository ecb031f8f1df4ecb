/**
 * Compare: one configuration, several schedules. Each is simulated at once
 * with unit costs; "measure" then trains each for a few steps on the workers,
 * one after the other, with the same model, data and seed. PipeDream and
 * PipeDream-2BW run those steps as one stream (no flush between them): they are
 * simulated and measured over all of them.
 */
import { runInBrowser } from '../../runtime/browser-run.ts';
import type { RunReport } from '../../runtime/report/index.ts';
import { withoutCut, type RunConfig } from '../../config/run-config.ts';
import { RUN_SCHEDULE_NAMES, runsAsStream, scheduleKind, type RunScheduleName } from '../../schedule/index.ts';
import { checkRunConfig } from '../store/index.ts';
import { predictRun, type Prediction } from '../store/index.ts';
import { attributeLastStep } from '../store/index.ts';
import { beginSession, endSession, sessionBusyReason, usePipeLab, type CompareMeasurement, type SessionControl } from '../store/index.ts';

export const COMPARE_SCHEDULES: readonly RunScheduleName[] = RUN_SCHEDULE_NAMES;

/** Stages per rank each schedule gets in a comparison: its fixed count, or `virtual` for those that take any. */
export function compareVirtual(name: RunScheduleName, virtual: number): number {
  return scheduleKind(name).virtualFor(virtual);
}

/**
 * The configuration each schedule runs with: the same model for all, deep
 * enough (layers + 1 ≥ ranks × v) for the schedule with the most stages; a
 * stream's (PipeDream, 2BW) of the `steps` measured, its window all of them.
 */
export function compareConfigs(base: RunConfig, names: readonly RunScheduleName[], virtual: number, steps = base.steps): Map<RunScheduleName, RunConfig> {
  const maxV = Math.max(1, ...names.map((n) => compareVirtual(n, virtual)));
  const layers = Math.max(base.layers, base.ranks * maxV - 1);
  const out = new Map<RunScheduleName, RunConfig>();
  for (const n of names) {
    const c: RunConfig = { ...base, layers, schedule: n, virtual: compareVirtual(n, virtual), ...(runsAsStream(n) ? { steps } : {}) };
    // An explicit cut holds only for the stages and depth it was written for; other entries cut by FLOPs.
    out.set(n, c.layers === base.layers && c.virtual === base.virtual ? c : withoutCut(c));
  }
  return out;
}

export interface CompareSimulated {
  name: RunScheduleName;
  config: RunConfig;
  prediction: Prediction | null;
  /** Why it cannot run at these sizes (from the schedule's or the configuration's rules). */
  problem: string | null;
}

/** Each schedule's entry; `steps`: the steps measured (a stream is simulated over all of them). */
export function simulateAll(base: RunConfig, names: readonly RunScheduleName[], virtual: number, steps = 1): CompareSimulated[] {
  const cfgs = compareConfigs(base, names, virtual, steps);
  return names.map((name) => {
    const config = cfgs.get(name) as RunConfig;
    let problem: string | null = null;
    try {
      scheduleKind(name).validateParams(config.ranks, config.microbatches, config.virtual);
    } catch (e) {
      problem = e instanceof Error ? e.message : String(e);
    }
    const prediction = problem ? null : predictRun(config);
    if (!problem) problem = checkRunConfig(config)?.message ?? null;
    return { name, config, prediction, problem };
  });
}


function setMeasurement(name: string, m: Partial<CompareMeasurement>): void {
  usePipeLab.setState((s) => {
    const prev: CompareMeasurement = s.compare[name] ?? { status: 'queued', timeline: null, makespanMs: null, stepMs: null, bubble: null, samplesPerSecond: null, finalLoss: null, error: null };
    return { compare: { ...s.compare, [name]: { ...prev, ...m } } };
  });
}

/** Why "measure" cannot start now (another session holds the workers, no WebGPU), or null. */
export function cannotMeasureReason(): string | null {
  const busy = sessionBusyReason();
  if (busy) return `Cannot measure now: ${busy}.`;
  if (usePipeLab.getState().webgpu.state !== 'available') return 'Measuring needs WebGPU; the simulated side still works.';
  return null;
}

/** One run of a sequence: a key for its result and the configuration it trains. */
export interface MeasureJob {
  key: string;
  config: RunConfig;
}

/** What a sequence says about one job: queued, running, its report, or why it failed. */
export type MeasureEvent = { status: 'queued' | 'running' } | { status: 'done'; report: RunReport } | { status: 'error'; error: string };

/**
 * Trains each job's configuration, one after the other, in a session of
 * `kind` (refused, doing nothing, when another session holds the workers or
 * there is no WebGPU); a failed job is reported and the next one runs; abort
 * the session's controller to stop after the run in flight.
 */
export async function measureEach(kind: 'comparing' | 'planning', jobs: readonly MeasureJob[], record: (key: string, e: MeasureEvent) => void): Promise<void> {
  if (cannotMeasureReason() !== null) return;
  const control: SessionControl = { kind, abort: new AbortController() };
  const ac = control.abort;
  beginSession(control);
  for (const j of jobs) record(j.key, { status: 'queued' });
  try {
    for (const j of jobs) {
      if (ac.signal.aborted) break;
      record(j.key, { status: 'running' });
      try {
        record(j.key, { status: 'done', report: await runInBrowser(j.config, { signal: ac.signal }) });
      } catch (err) {
        record(j.key, { status: 'error', error: err instanceof Error ? err.message : String(err) });
      }
    }
  } finally {
    endSession(control);
  }
}

/** Stops the session of `kind` after its run in flight (nothing when another kind holds the workers). */
export function stopSession(kind: 'comparing' | 'planning'): void {
  const c = usePipeLab.getState().control;
  if (c?.kind === kind) c.abort.abort();
}

/** The configuration an entry is measured with: its own, trained for the `steps` measured, no evaluation. */
export function measuredConfig(e: CompareSimulated, steps: number): RunConfig {
  return { ...e.config, steps, evalEvery: 0 };
}

/** Trains every runnable entry for `steps` steps, one after the other (the store's 'comparing' session). */
export async function measureAll(entries: readonly CompareSimulated[], steps: number): Promise<void> {
  if (cannotMeasureReason() !== null) return;
  usePipeLab.setState({ compare: {} });
  const jobs = entries.filter((e) => e.problem === null).map((e) => ({ key: e.name, config: measuredConfig(e, steps) }));
  await measureEach('comparing', jobs, (name, ev) => {
    if (ev.status !== 'done') return setMeasurement(name, ev);
    const report = ev.report;
    setMeasurement(name, {
      status: 'done',
      timeline: report.timeline,
      makespanMs: report.makespanMs.measured,
      // The whole step: with the copies' sum (which the replicas' figures leave out), else with the all-reduce.
      stepMs: report.copySum?.stepMs ?? report.allReduce?.stepMs ?? report.makespanMs.measured,
      bubble: report.bubble.measured,
      samplesPerSecond: report.samplesPerSecond,
      finalLoss: report.losses.length ? report.losses[report.losses.length - 1] : null,
      gap: attributeLastStep(report),
      memory: { memory: report.memory, heldBytesPerWorker: report.heldBytesPerWorker },
    });
  });
}

export function stopMeasuring(): void {
  stopSession('comparing');
}
