/**
 * Why a measured bubble differs from the textbook: the gap between the closed
 * form and the measurement split into parts a person can check, each a
 * simulation that adds one measured effect to the one before:
 *
 *   closed form      identical stages, F = 1, B = 2, free links
 *   + stage costs    the simulator with each stage's measured mean op times, free links
 *   + communication  the same plus the measured mean time per boundary crossing on every message
 *   + blocks         PipeDream-2BW on replicas only: each worker waits for its stages' all-reduce after every
 *                    block of m inside the stream: the report's own simulation, which plays them with the
 *                    measured op, message and collective times (simulate-blocks.ts)
 *   + shared device  the rest: the measured bubble (every rank's worker shares one GPU here, so
 *                    ops of different ranks queue behind one another and starts drift)
 *   + all-reduce     data parallelism only: the idle share of the whole step once the collectives'
 *                    exposed time (not hidden behind compute) is counted: 1 − busy / (lanes · step time)
 *
 * Also the closed form's makespan in the simulator's prediction units.
 */
import type { RunReport } from '../../runtime/report/index.ts';
import { RUN_SCHEDULE_NAMES, runsAsStream, SCHEDULES, simulate, timelineStats, type ClosedForm, type Op, type RunScheduleName, type Schedule, type ScheduleKind } from '../../schedule/index.ts';
import { computeOnly } from './derived.ts';

export interface GapStep {
  id: 'closed' | 'stages' | 'comm' | 'blocks' | 'device' | 'allreduce';
  label: string;
  /** The bubble after adding this effect. */
  bubble: number;
  /** What this effect adds to the bubble (fraction; 0 for the starting point). */
  adds: number;
}

export interface GapAttribution {
  steps: GapStep[];
  /** Mean measured compute per stage (F + B + I + W), ms: the unevenness one can check. */
  stageMs: number[];
  commMsPerCrossing: number;
}

/** A schedule name that runs as one stream (PipeDream, PipeDream-2BW); a file's own name is none. */
function isStream(name: string): boolean {
  return (RUN_SCHEDULE_NAMES as readonly string[]).includes(name) && runsAsStream(name as RunScheduleName);
}

function perStage(meanOpMs: RunReport['meanOpMs'], stages: number, op: Op): number[] {
  return Array.from({ length: stages }, (_, s) => meanOpMs[s]?.[op] ?? 0);
}

/** The attribution for a finished run; null where the schedule has no closed form (it needs a starting point) or cannot be simulated. */
export function attributeGap(
  report: Pick<RunReport, 'schedule' | 'meanOpMs' | 'commMsPerCrossing' | 'bubble'> & Partial<Pick<RunReport, 'makespanMs' | 'allReduce'>>,
  closedBubble: number | null,
): GapAttribution | null {
  const start = report.bubble.closedForm ?? closedBubble;
  if (start === null || !Number.isFinite(start)) return null;
  const s: Schedule = report.schedule;
  const costs = { F: perStage(report.meanOpMs, s.stages, 'F'), B: perStage(report.meanOpMs, s.stages, 'B'), I: perStage(report.meanOpMs, s.stages, 'I'), W: perStage(report.meanOpMs, s.stages, 'W'), unit: 'ms' as const };
  let stages: number, comm: number;
  try {
    stages = simulate(s, costs).bubble;
    comm = simulate(s, { ...costs, latency: (a: number, b: number) => (a === b ? 0 : report.commMsPerCrossing) }).bubble;
  } catch {
    return null; // a schedule the simulator does not play (it was run, so this should not happen): no attribution rather than a wrong one
  }
  const measured = report.bubble.measured;
  const stageMs = Array.from({ length: s.stages }, (_, i) => (['F', 'B', 'I', 'W'] as const).reduce((sum, op) => sum + (report.meanOpMs[i]?.[op] ?? 0), 0));
  const steps: GapStep[] = [
    { id: 'closed', label: 'closed form (identical stages, free links)', bubble: start, adds: 0 },
    { id: 'stages', label: 'uneven stage costs (each stage’s measured op times)', bubble: stages, adds: stages - start },
    { id: 'comm', label: 'communication (measured time per crossing)', bubble: comm, adds: comm - stages },
  ];
  // A stream on replicas waits for each block's all-reduce inside it: the report's simulation plays those waits too.
  const blocks = report.allReduce && isStream(s.name) && Number.isFinite(report.bubble.simulated) ? report.bubble.simulated : null;
  if (blocks !== null) steps.push({ id: 'blocks', label: 'all-reduce per block (each worker waits for it inside the stream)', bubble: blocks, adds: blocks - comm });
  const before = blocks ?? comm;
  steps.push({ id: 'device', label: 'ranks sharing one device (the rest)', bubble: measured, adds: measured - before });
  const ar = report.allReduce;
  const compute = report.makespanMs?.measured ?? 0;
  if (ar && ar.stepMs > 0 && compute > 0) {
    // The same busy time over the whole step, collectives included.
    const withCollectives = 1 - ((1 - measured) * compute) / ar.stepMs;
    const label = blocks !== null ? 'the last block’s all-reduce (after the stream’s last compute)' : 'data-parallel all-reduce (its time not hidden behind compute)';
    steps.push({ id: 'allreduce', label, bubble: withCollectives, adds: withCollectives - measured });
  }
  return { stageMs, commMsPerCrossing: report.commMsPerCrossing, steps };
}

/** The attribution ending at the last measured step's bubble (the step a timeline draws) instead of the mean over the steps. */
export function attributeLastStep(report: Pick<RunReport, 'schedule' | 'meanOpMs' | 'commMsPerCrossing' | 'bubble' | 'timeline'>): GapAttribution | null {
  const last = timelineStats(computeOnly(report.timeline)).bubble;
  return attributeGap({ ...report, bubble: { ...report.bubble, measured: last } }, null);
}

/**
 * The closed form's makespan in the units the page's prediction uses (a
 * rank's share of the model costs F = 1, B = 2 whatever its chunks): the
 * closed forms count F = 1 per stage, so a rank holding v stages of an
 * interleaved or looped schedule counts v times as much. ZB-V's prediction
 * already counts per stage.
 */
export function closedMakespanInPredictionUnits(closed: Pick<ClosedForm, 'makespan'>, schedule: Pick<Schedule, 'name' | 'stages' | 'ranks'>): number {
  const v = schedule.stages / schedule.ranks;
  const kind: ScheduleKind | undefined = (SCHEDULES as Readonly<Record<string, ScheduleKind>>)[schedule.name];
  return closed.makespan / (kind ? kind.costChunks(v) : v);
}
