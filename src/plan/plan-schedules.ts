/**
 * The schedules the mesh planner searches (mesh-plan.ts) and what each needs
 * beyond the one-schedule-per-step simulation, read off the registry's
 * declarations (src/schedule/registry.ts) rather than listed by name:
 *
 *  - virtual stages: one-stage schedules 1; a fixed count (zb-v, dualpipe-v: 2)
 *    that count; any v (interleaved 1F1B, interleaved zero bubble) or any even
 *    v (hanayo: W = 1 and 2 waves) 2 and 4.
 *  - its rules: a layout a schedule refuses (DualPipe on an odd pp or with
 *    m < 2p, PipeDream-2BW with m < p) is skipped with the registry's own
 *    words; PipeDream-2BW on replicas all-reduces each block's gradients
 *    before its update, without ZeRO (as the tab runs it: run-config.ts), so
 *    with dp > 1 it is planned at ZeRO-0 only, its all-reduce played per
 *    block (simulate-blocks.ts), and skipped where the request asks for ZeRO.
 *  - model copies (DualPipe: 2): the schedule's stages are copies × pp · v,
 *    copy c's stage j holding the blocks of the model's stage j, placed by the
 *    kind's placement (rank r holds stage r of copy 0 and p − 1 − r of copy 1):
 *    twice the parameters on every device, the copies' activations by the
 *    simulator, and after the flush each stage's gradients summed over its
 *    copies, a ring of `copies` workers over the pipeline link between them
 *    (runtime/policies/copy-sum.ts), which the simulator plays after each rank's
 *    data-parallel collectives (schedule/simulate-copies.ts), never hidden.
 *  - weight versions (PipeDream-2BW: one more, double-buffered): that many
 *    extra copies of each device's weights, at the model's bytes per element.
 *  - no flush (a stream, registry UPDATE_WINDOWS): the step is the steady
 *    state of the stream as the simulator plays it, the stream of two steps'
 *    micro-batches less the stream of one, so no fill or drain per step (on
 *    replicas, one block's all-reduce per stage in it).
 */
import { generateSchedule, resolveCosts, simulateStep, stageToRankMap, type CostModel, type Schedule, type StepSummary } from '../schedule/index.ts';
import { SCHEDULES, UPDATE_WINDOWS, type ScheduleKind } from '../schedule/registry.ts';
import { ConfigError } from '../util/errors.ts';
import type { Layout, PlanTarget } from './mesh-costs.ts';
import { zeroStagesToTry, type ZeroChoice } from './zero.ts';
import { stateBytes } from './mesh-costs.ts';
import { stateBytesPerParam } from './transformer.ts';

export const PLAN_SCHEDULES = ['1f1b', 'interleaved-1f1b', 'zb-h1', 'interleaved-zb', 'zb-v', 'dualpipe-v', 'dualpipe', 'hanayo', 'pipedream-2bw', 'auto'] as const;
export type PlanSchedule = (typeof PLAN_SCHEDULES)[number];

/** The virtual stages the planner tries for a schedule (on pp > 1). */
export function planVirtuals(name: PlanSchedule): number[] {
  const kind = SCHEDULES[name];
  if (!kind.acceptsVirtual) return [1];
  return kind.virtualFor(4) === 4 ? [2, 4] : [kind.defaultVirtual];
}

const where = (l: Layout) => `dp × tp × pp = ${l.dp} × ${l.tp ?? 1} × ${l.pp}, b = ${l.b}, m = ${l.m}`;

/**
 * Why the planner does not try `name` with v stages per rank on layout l (the registry's rule; a stream on
 * replicas with the ZeRO stages `zero` asks for), or null.
 */
export function planRefusal(name: PlanSchedule, l: Layout, v: number, zero?: ZeroChoice): string | null {
  const kind = SCHEDULES[name];
  try {
    kind.validateParams(l.pp, l.m, v);
  } catch (e) {
    if (e instanceof ConfigError) return `${name}${v > 1 ? ` v=${v}` : ''} on ${where(l)}: ${e.message}`;
    throw e;
  }
  if (kind.update === 'double-buffered' && l.dp > 1 && !zeroStagesToTry(zero, l.dp).includes(0)) {
    return `${name} on ${where(l)}: its replicas all-reduce each block's gradients without ZeRO (as the tab runs it), and the plan asks for ZeRO-${zeroStagesToTry(zero, l.dp).join('/')}`;
  }
  if (kind.update !== 'flush' && kind.update !== 'double-buffered' && l.dp > 1) {
    return `${name} on ${where(l)}: dp = ${l.dp}, but it updates after every backward, which leaves replicas nowhere to sum their gradients (dp = 1)`;
  }
  return null;
}

/** The ZeRO stages a layout may use with schedule `name`: PipeDream-2BW's replicas all-reduce without ZeRO. */
export function planZeroStages(name: PlanSchedule, zero: ZeroChoice | undefined, dp: number): ReturnType<typeof zeroStagesToTry> {
  return SCHEDULES[name].update === 'double-buffered' ? [0] : zeroStagesToTry(zero, dp);
}

/**
 * The stages a schedule runs on pp ranks with v per rank: where each sits (copies × pp · v of them), and the
 * model's cut into pp · v stages, which copy c's stage j repeats (mesh-costs.ts reads them so).
 */
export interface PlanStages {
  stageToRank: number[];
  ranges: [number, number][];
}

export function planStages(name: PlanSchedule, pp: number, v: number, ranges: [number, number][]): PlanStages {
  const kind = SCHEDULES[name];
  return { stageToRank: stageToRankMap(pp, v * kind.copies, kind.placement), ranges };
}

/** Bytes each rank holds beyond its training state for the schedule's extra weight versions (PipeDream-2BW: one more copy of its weights). */
export function extraWeightBytes(req: PlanTarget, name: PlanSchedule, stages: PlanStages, l: Layout): number[] {
  const versions = UPDATE_WINDOWS[SCHEDULES[name].update].extraWeightVersions(l.pp);
  if (versions === 0) return new Array<number>(l.pp).fill(0);
  const per = stateBytesPerParam(req.model, 0, 1);
  return stateBytes(req, stages.ranges, stages.stageToRank, l.pp, 0, 1, l.tp ?? 1, l.ep ?? 1).map((x) => (x / per) * req.model.bytesPerElement * versions);
}

/**
 * Whether a schedule hides expert parallelism's all-to-all under compute: DualPipe and its V form run a forward
 * chunk and a backward chunk of two micro-batches at once, each one's all-to-all under the other's compute
 * (DeepSeek-V3, arXiv:2412.19437 §3.2.1); the others play it after the compute (transformer.ts ExpertParallel).
 */
export function overlapsAllToAll(name: PlanSchedule): boolean {
  return name === 'dualpipe' || name === 'dualpipe-v';
}

/**
 * A candidate's step as the planner prices it: the simulator's step (compute, the data-parallel collectives and
 * the copies' gradient sum), or a stream's steady state for a schedule without a flush.
 * `schedule` is one step's (for a stream, one step's micro-batches).
 */
export function planStep(name: PlanSchedule, schedule: Schedule, costs: CostModel, generate: GenerateSchedule = generateSchedule): StepSummary {
  const kind = SCHEDULES[name];
  return UPDATE_WINDOWS[kind.update].stream ? streamSteadyStep(kind, schedule, costs, generate) : simulateStep(schedule, costs);
}

/** generateSchedule, or a cache of its schedules (the planner's: mesh-plan.ts makeEvaluator). */
export type GenerateSchedule = (name: string, ranks: number, microbatches: number, virtual?: number) => Schedule;

/**
 * A stream's step in steady state: its stream of 2m micro-batches less its stream of m, as the simulator plays each
 * (the planner's and What wins here's price of a PipeDream step: no fill or drain of its own).
 */
export function streamSteadyStep(kind: ScheduleKind, one: Schedule, costs: CostModel, generate: GenerateSchedule = generateSchedule): StepSummary {
  // On replicas each stage's all-reduce follows its last backward of each block of m (simulate-blocks.ts).
  const blocks: CostModel = (costs.dp ?? 1) > 1 && costs.allReduce ? { ...costs, allReduce: { ...costs.allReduce, every: one.microbatches } } : costs;
  const a = simulateStep(one, blocks);
  const b = simulateStep(generate(kind.name, one.ranks, 2 * one.microbatches), blocks);
  const T = b.computeMakespan - a.computeMakespan;
  const c = resolveCosts(costs, one.stages);
  let busy = 0;
  for (const list of one.order) for (const x of list) busy += c.op[x.op][x.stage];
  const makespan = b.makespan - a.makespan;
  const exposed = Math.max(0, makespan - T);
  return { makespan, computeMakespan: T, bubble: T > 0 ? 1 - busy / (one.ranks * T) : 0, exposedAllReduce: exposed, allReduceShare: makespan > 0 ? exposed / makespan : 0 };
}
