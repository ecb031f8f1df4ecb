/**
 * How well the simulator predicts measured runs: today's prediction (the run's
 * own mean op times on independent devices) beside the shared-device one (solo
 * times calibrated from the same means, played on one device with k lanes).
 * k is one number for the machine; `fitLanes` picks it on some rows (e.g. the
 * m = p ones) so the others are a held-out check.
 */
import { generateSchedule, simulate } from '../schedule/index.ts';
import { calibrateSolo, type StageOpMs } from './calibrate.ts';

/** What a schedules-bench row records (src/bench/schedules-suite.ts's ScheduleBenchRow has these fields). */
export interface RecordedRun {
  schedule: string;
  p: number;
  m: number;
  v: number;
  makespanMeasuredMs: number;
  commMsPerCrossing: number;
  meanOpMs: StageOpMs;
  /** Data-parallel rows: the replicas sharing the machine with the pipeline (default 1). */
  mesh?: { dp: number };
}

export interface PredictionRow {
  run: RecordedRun;
  /** Independent devices, mean op times as measured. */
  todayMs: number;
  todayError: number;
  /** Shared device with k lanes, calibrated solo times. */
  sharedMs: number;
  sharedError: number;
  /** Calibrated solo times on independent devices: the ideal the closed forms describe. */
  independentMs: number;
}

const rel = (x: number, want: number) => (x - want) / want;

export function predictRun(run: RecordedRun, lanes: number): PredictionRow {
  const s = generateSchedule(run.schedule, run.p, run.m, run.v);
  const per = (op: 'F' | 'B' | 'I' | 'W') => Array.from({ length: s.stages }, (_, i) => run.meanOpMs[i]?.[op] ?? 0);
  const links = { latency: run.commMsPerCrossing };
  const today = simulate(s, { F: per('F'), B: per('B'), I: per('I'), W: per('W'), ...links }).makespan;
  // dp identical replicas in lock step on k lanes play like one pipeline on k / dp lanes (src/schedule/simulate-mesh.ts).
  const cal = calibrateSolo(s, run.meanOpMs, lanes / (run.mesh?.dp ?? 1), links);
  return {
    run,
    todayMs: today,
    todayError: rel(today, run.makespanMeasuredMs),
    sharedMs: cal.shared.makespan,
    sharedError: rel(cal.shared.makespan, run.makespanMeasuredMs),
    independentMs: cal.independent.makespan,
  };
}

/** What a run report records, as a RecordedRun (`v` from its schedule: stages per rank). */
export function recordedRunOf(report: { config: { schedule: string; ranks: number; microbatches: number; virtual: number }; makespanMs: { measured: number }; commMsPerCrossing: number; meanOpMs: Record<number, Partial<Record<'F' | 'B' | 'I' | 'W', number>>> }): RecordedRun {
  const c = report.config;
  return { schedule: c.schedule, p: c.ranks, m: c.microbatches, v: c.virtual, makespanMeasuredMs: report.makespanMs.measured, commMsPerCrossing: report.commMsPerCrossing, meanOpMs: report.meanOpMs };
}

/** Lane counts to try for a device shared by `ranks` ranks: 1 to max(4, ranks) in tenths (k ≥ ranks plays as independent devices). */
export function laneCandidates(ranks: number): number[] {
  const top = Math.max(4, ranks);
  return Array.from({ length: Math.round((top - 1) * 10) + 1 }, (_, i) => 1 + i / 10);
}

/** The k among `candidates` whose worst |shared error| over `runs` is least (the first on a tie). */
export function fitLanes(runs: readonly RecordedRun[], candidates: readonly number[]): number {
  let best = candidates[0];
  let bestWorst = Infinity;
  for (const k of candidates) {
    const worst = Math.max(...runs.map((r) => Math.abs(predictRun(r, k).sharedError)));
    if (worst < bestWorst) {
      bestWorst = worst;
      best = k;
    }
  }
  return best;
}

export const LANE_CANDIDATES: readonly number[] = laneCandidates(4);
