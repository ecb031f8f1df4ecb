/**
 * Numbers and timelines derived from the configuration and the measurements:
 * the simulator's prediction for a configuration before it runs, a simulated
 * timeline fed with the measured per-op times, and rescaling a timeline so it
 * can be drawn over another.
 */
import type { RunConfig } from '../../config/run-config.ts';
import { checkWindowActions, stageCut } from '../../config/run-limits.ts';
import { autoScheduleForRun, windowOrder } from '../../runtime/executor/index.ts';
import { costsPerStage, meanByStageOp, meanOpTimes, scheduleKind, simulate, type SimulationResult, closedForm, closedFormPeakActivations, type ClosedForm, timelineStats, laneCount, laneOf, withEpLanes, type CostModel, type Op, type Schedule, type Timeline } from '../../schedule/index.ts';

export interface Prediction {
  schedule: Schedule;
  result: SimulationResult;
  closed: ClosedForm | null;
  closedPeak: number[] | null;
}

/** What the schedule a run's window runs depends on: a stream's window is the whole run (steps, default 1). */
export type WindowSizes = Pick<RunConfig, 'schedule' | 'ranks' | 'microbatches' | 'virtual'> & { steps?: number };

/**
 * The schedule one window of `cfg` runs, as planRun builds it: a synchronous schedule's step; a stream's (PipeDream,
 * PipeDream-2BW) whole run, its order over steps × microbatches. Throws a ConfigError past the run's action limit.
 */
export function windowSchedule(cfg: WindowSizes): Schedule {
  const v = scheduleKind(cfg.schedule).virtualFor(cfg.virtual);
  const steps = cfg.steps ?? 1;
  // A draft the run would refuse for its size is not generated either: the form's main thread stays free.
  checkWindowActions({ schedule: cfg.schedule, ranks: cfg.ranks, virtual: v, microbatches: cfg.microbatches, steps });
  return windowOrder(cfg, steps);
}

/**
 * The schedule a run of `cfg` plays in its window, as planRun builds it: windowSchedule's for `steps` of a stream,
 * except `auto`, which the run plans from the model's FLOPs per stage within its memory cap (so the page predicts
 * the order that runs, not the unit-cost search at 1F1B's memory the registry's door gives).
 */
export function runWindowSchedule(cfg: RunConfig, steps = cfg.steps): Schedule {
  if (!scheduleKind(cfg.schedule).fromStageCosts) return windowSchedule({ ...cfg, steps });
  const { spec, stageBlocks } = stageCut(cfg);
  return autoScheduleForRun(cfg, spec, stageBlocks);
}

/**
 * The simulator's timeline for one window of `cfg` (a step; a stream's whole run) with unit costs (a rank's share:
 * F = 1, B = 2); with dp > 1, dp replicas in dp × ranks lanes and a free all-reduce (unit costs know no link); with
 * tp > 1, each pipeline worker's lane repeated for its tp workers, their collectives unpriced (unit costs know no
 * link: the run measures them); null when the schedule rejects the sizes or the run would refuse them as too much work.
 */
export function predict(cfg: WindowSizes & { dp?: number; tp?: number }, given?: Schedule): Prediction | null {
  try {
    const kind = scheduleKind(cfg.schedule);
    // `given`: the schedule to play (the one a run planned or ran); by default the window's.
    const schedule = given ?? windowSchedule(cfg);
    // Stages per rank of one model copy (DualPipe's two copies each put one stage on every rank).
    const v = schedule.stages / schedule.ranks / (schedule.copies ?? 1);
    const dp = cfg.dp ?? 1;
    const result = simulate(schedule, { ...costsPerStage({ F: 1, B: 2, I: 1, W: 1 }, kind.costChunks(v)), ...(dp > 1 ? { dp } : {}), ...lanesOnly(schedule.stages, cfg.tp ?? 1) });
    return {
      schedule,
      result,
      closed: closedForm(kind.theoryAs, schedule.ranks, schedule.microbatches, v),
      closedPeak: closedFormPeakActivations(kind.theoryAs, schedule.ranks, schedule.microbatches, v),
    };
  } catch {
    return null;
  }
}

/** The prediction for the schedule a run of `cfg` plays (runWindowSchedule); null where it cannot be planned or played. */
export function predictRun(cfg: RunConfig): Prediction | null {
  try {
    return predict(cfg, runWindowSchedule(cfg));
  } catch {
    return null;
  }
}

/** Mean measured duration per stage and op, ms. */
export { meanOpTimes };

/** tp workers per stage with no collectives priced: the lanes of the mesh, each running its pipeline worker's actions. */
function lanesOnly(stages: number, t: number): Pick<CostModel, 'tp'> {
  if (t <= 1) return {};
  const none = { F: [], B: [], I: [], W: [] };
  return { tp: { t, latency: 0, bandwidth: Infinity, bytesPerElement: 0, messages: Array.from({ length: stages }, () => none) } };
}

/**
 * The simulator fed with the measured mean per-op times (free links): what the schedule alone predicts for this
 * run, in the measured timeline's lanes (its replicas, ep and tp workers; the collectives are the measurement's).
 */
export function simulateWithMeasured(schedule: Schedule, measured: Timeline): Timeline | null {
  try {
    const means = meanByStageOp(measured.intervals, (iv) => iv.end - iv.start);
    const per = (op: Op) => Array.from({ length: schedule.stages }, (_, s) => means[s]?.[op] ?? 0);
    const dp = measured.dp ?? 1;
    const sim = simulate(schedule, { F: per('F'), B: per('B'), I: per('I'), W: per('W'), unit: 'ms', ...(dp > 1 ? { dp } : {}), ...lanesOnly(schedule.stages, measured.tp ?? 1) }).timeline;
    return withEpLanes(sim, measured.ep ?? 1);
  } catch {
    return null;
  }
}

/** `t` stretched and shifted so that it spans exactly the time `target` spans (for drawing one over the other). */
export function scaleOnto(t: Timeline, target: Timeline): { timeline: Timeline; factor: number } {
  const src = timelineStats(t);
  const dst = timelineStats(target);
  if (!(src.makespan > 0) || !(dst.makespan > 0)) return { timeline: t, factor: 1 };
  const factor = dst.makespan / src.makespan;
  const at = (x: number) => dst.start + (x - src.start) * factor;
  const intervals = t.intervals.map((iv) => ({ ...iv, start: at(iv.start), end: at(iv.end) }));
  return { timeline: { ...t, intervals, unit: target.unit }, factor };
}

export { computeOnly } from '../../schedule/timeline.ts';

/**
 * Most micro-batches whose activations a rank held at once in a measured
 * timeline: a forward holds from its start, a backward (B, or W when the
 * backward is split) frees at its end. With dp replicas, the most any replica's
 * worker of that rank held.
 */
export function measuredPeakMicrobatches(t: Timeline): number[] {
  // A micro-batch is held from its F until its B, or its W where its backward is split (a schedule may do both:
  // DualPipe splits only some backwards), as peakMemory counts the order.
  const events: { lane: number; rank: number; at: number; d: number }[] = [];
  for (const iv of t.intervals) {
    if (iv.op === 'F') events.push({ lane: laneOf(t, iv), rank: iv.rank, at: iv.start, d: 1 });
    else if (iv.op === 'B' || iv.op === 'W') events.push({ lane: laneOf(t, iv), rank: iv.rank, at: iv.end, d: -1 });
  }
  // Frees before holds at the same instant.
  events.sort((a, b) => a.at - b.at || a.d - b.d);
  const held = new Array<number>(laneCount(t)).fill(0);
  const peak = new Array<number>(t.ranks).fill(0);
  // Each lane (a worker: a replica's, a tp rank's) holds its own; a rank's peak is its busiest worker's, by the
  // interval's own rank (with tp, lane mod ranks is not the rank: rank 0's second tp worker counted as rank 1's).
  for (const e of events) {
    held[e.lane] += e.d;
    if (held[e.lane] > peak[e.rank]) peak[e.rank] = held[e.lane];
  }
  return peak;
}
