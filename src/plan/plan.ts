/**
 * A plan from a profile: cut the blocks into one stage per rank (the optimal
 * split of partition.ts; with a cap in bytes, no stage may keep more than the
 * cap for a single micro-batch), sum the profile into per-stage costs, build
 * the auto schedule within the cap, and set 1F1B, ZB-H1 and GPipe beside it
 * under the same costs; with the profile's lanes, the two predictions (this
 * machine, shared; p independent devices). With dp replicas (dp > 1) every
 * simulation adds each stage's ring all-reduce at the flush, from the profile's
 * all-reduce fit and its blocks' weight bytes (train.py --profile of a dp ≥ 2
 * bundle measures both), and this machine's lanes are shared by dp × p workers.
 * With tp workers per stage (tp > 1) every rank is one tp group, planned as one
 * of its workers computes (profile-tp.ts: the pieces' times with the
 * collectives on the ring fitted on the cluster), and the lanes are shared by
 * dp × p × tp workers. With ZeRO (zero 1–3, dp > 1) the simulator plays the
 * stage's reduce-scatters and all-gathers on the same fitted ring (zero.ts,
 * simulate-zero.ts), and the plan says each worker's model states.
 */
import type { ModelSpec } from '../nn/model-spec.ts';
import { autoSchedule, generateSchedule, MAX_SIM_DP, predictions, simulate, type AutoResult, type CostModel, type MemoryCap, type Predictions, type Schedule } from '../schedule/index.ts';
import { flopsProfile } from './flops-profile.ts';
import { ConfigError, requireInt } from '../util/errors.ts';
import { planPartition, type PartitionPlan } from './partition.ts';
import { stageCosts, type Profile } from './profile.ts';
import { tpCollectivesTime, tpWorkerProfile } from './profile-tp.ts';
import { modelStateBytesPerParam, ZERO_STAGES, type ZeroStage } from './zero.ts';

const fmtLanes = (x: number) => String(Math.round(x * 100) / 100);

export interface PlanRequest {
  profile: Profile;
  ranks: number;
  microbatches: number;
  cap: MemoryCap;
  /** Keep heldBytesRecompute instead of heldBytes. */
  recompute?: boolean;
  /** Data-parallel replicas of the pipeline (default 1); dp > 1 needs the profile's allReduce and blocks' paramBytes. */
  dp?: number;
  /** Tensor-parallel workers per stage (default 1); tp > 1 needs the profile's tp part and tpAllReduce, measured with this tp. */
  tp?: number;
  /** ZeRO stage over the dp replicas (default 0; 1 or more needs dp ≥ 2), played on the profile's all-reduce fit. */
  zero?: ZeroStage;
  /** ZeRO-3: keep gathered weights for the step ('step', default) or gather before every action ('microbatch'). */
  reshard?: 'step' | 'microbatch';
}

export interface Baseline {
  name: 'gpipe' | '1f1b' | 'zb-h1';
  makespan: number;
  bubble: number;
  peakMicrobatches: number;
  peakBytes: number;
  /** Whether its peak stays within the cap. */
  fits: boolean;
}

export interface Plan {
  partition: PartitionPlan;
  /** Per-stage costs the schedule was built for (simulate.ts's CostModel). */
  costs: CostModel;
  auto: AutoResult;
  baselines: Baseline[];
  /** The auto schedule on this machine (the profile's shared device) and on p independent devices; null without profile.lanes. */
  predictions: Predictions | null;
  /** The ZeRO stage the plan was made for (0 without replicas). */
  zero: ZeroStage;
  /** With tp > 1: per stage, the time of one micro-batch's collectives in F and in B (included in costs); null otherwise. */
  tp: { t: number; forward: number[]; backward: number[] } | null;
  /** With the blocks' weight bytes: per stage, one worker's model states (fp32 weights, gradients, AdamW's m and v) at the plan's ZeRO stage. */
  modelStateBytes: number[] | null;
  /** Why predictions is null although the profile has lanes (ZeRO-2/3 are played on independent devices only). */
  noSharedPrediction?: string;
}

/** Bytes of a weight, its gradient, and AdamW's state (m and v) in the tab's and train.py's fp32. */
const E_FP32 = 4;
const K_ADAMW_FP32 = 8;

/**
 * The data-parallel part of the cost model for dp replicas of a profile cut at `ranges`: each stage all-reduces
 * its blocks' weight bytes with the ring fitted on the cluster (profile.allReduce); nothing when dp = 1.
 * Throws ConfigError naming dp, profile.allReduce or the first block without paramBytes.
 */
export function meshCostsOf(p: Profile, ranges: readonly (readonly [number, number])[], dp: number, zero: ZeroStage = 0, reshard: 'step' | 'microbatch' = 'step'): Pick<CostModel, 'dp' | 'gradBytes' | 'allReduce'> {
  if (!Number.isInteger(dp) || dp < 1 || dp > MAX_SIM_DP) throw new ConfigError('dp', dp, `must be a whole number between 1 and ${MAX_SIM_DP} (data-parallel replicas)`);
  if (!(ZERO_STAGES as readonly unknown[]).includes(zero)) throw new ConfigError('zero', zero, 'must be 0, 1, 2 or 3 (the ZeRO stage)');
  if (zero >= 1 && dp < 2) throw new ConfigError('zero', zero, `ZeRO-${zero} shards over the data-parallel replicas: it needs dp ≥ 2 (got dp = ${dp})`);
  if (dp === 1) return {};
  const ar = p.allReduce;
  if (!ar) throw new ConfigError('profile.allReduce', undefined, `is missing: planning dp = ${dp} replicas needs the all-reduce measured on the cluster (train.py --profile on a bundle exported with dp ≥ 2)`);
  const missing = p.blocks.findIndex((b) => b.paramBytes === undefined);
  if (missing >= 0) throw new ConfigError(`profile.blocks[${missing}].paramBytes`, undefined, `is missing: planning dp = ${dp} replicas needs each block's weight bytes (train.py --profile writes them)`);
  const gradBytes = ranges.map(([a, b]) => p.blocks.slice(a, b).reduce((t, x) => t + (x.paramBytes ?? 0), 0));
  return { dp, gradBytes, allReduce: { latency: ar.latency, bandwidth: ar.bandwidth, overlap: true, zero, ...(zero === 3 ? { reshard } : {}) } };
}

/** The simulator's per-stage cost model of a profile cut at `ranges`. */
export function costModelOf(p: Profile, ranges: readonly (readonly [number, number])[], recompute = false): CostModel {
  const c = stageCosts(p, ranges, recompute);
  return { F: c.F, I: c.I, W: c.W, B: c.B, heldBytes: c.heldBytes, comm: [...c.comm, 0], unit: p.unit };
}

/**
 * The schedule a run named 'auto' gets: stage costs from the FLOPs estimate of
 * its model (`rows` rows per micro-batch) cut at its stage ranges, within
 * `cap` micro-batches per rank (a run's memCap; 1F1B's memory, as many as
 * ranks, when it gives none).
 */
export function autoForRun(spec: ModelSpec, ranges: readonly (readonly [number, number])[], ranks: number, microbatches: number, rows: number, cap: number): Schedule {
  return autoSchedule(ranks, microbatches, costModelOf(flopsProfile(spec, rows), ranges), { microbatches: cap }).schedule;
}

export function makePlan(req: PlanRequest): Plan {
  const m = requireInt('microbatches', req.microbatches, 1);
  const t = req.tp ?? 1;
  const profile = tpWorkerProfile(req.profile, t);
  const partition = planPartition(profile, req.ranks, { memCap: req.cap.bytes, microbatches: 1, recompute: req.recompute });
  const dp = req.dp ?? 1;
  const zero = req.zero ?? 0;
  const costs = { ...costModelOf(profile, partition.ranges, req.recompute), ...meshCostsOf(profile, partition.ranges, dp, zero, req.reshard) };
  // The search plays compute; ZeRO-2/3's collectives between the actions are not in its play, so it searches under
  // ZeRO-1's flush (the same volume) and its winner is simulated with them, beside the baselines.
  const search = autoSchedule(req.ranks, m, zero >= 2 ? { ...costs, allReduce: { ...costs.allReduce!, zero: 1, reshard: undefined } } : costs, req.cap);
  let auto: AutoResult = zero >= 2 ? { ...search, simulation: simulate(search.schedule, costs) } : search;
  const named = (['1f1b', 'zb-h1', 'gpipe'] as const).map((name) => ({ name, schedule: generateSchedule(name, req.ranks, m) }));
  const baselines = named.map(({ name, schedule }): Baseline => {
    const r = simulate(schedule, costs);
    const peakMicrobatches = Math.max(...r.memory.map((x) => x.peakMicrobatches));
    const peakBytes = Math.max(...r.memory.map((x) => x.peakBytes));
    const fits = (req.cap.microbatches === undefined || peakMicrobatches <= req.cap.microbatches) && (req.cap.bytes === undefined || peakBytes <= req.cap.bytes);
    // With ZeRO-2/3 a named schedule that fits may beat the search's winner once the collectives are played: auto takes it.
    if (zero >= 2 && fits && r.makespan < auto.simulation.makespan - 1e-9) auto = { schedule: { ...schedule, name: 'auto' }, simulation: r, candidate: `${name}, the fastest with ZeRO-${zero}'s collectives` };
    return { name, makespan: r.makespan, bubble: r.bubble, peakMicrobatches, peakBytes, fits };
  });
  // A tp group's workers run in lock step: on a shared device they play like one worker with lanes / t.
  const lanes = profile.lanes === undefined ? undefined : profile.lanes / t;
  // ZeRO-2/3's collectives between the actions are played on independent devices only (simulate.ts).
  const shared = lanes !== undefined && lanes / dp < req.ranks;
  const noSharedPrediction = zero >= 2 && shared ? `ZeRO-${zero}'s collectives between the actions are simulated on independent devices only; this machine's ${fmtLanes(profile.lanes!)} lanes are shared by ${dp * req.ranks * t} workers` : undefined;
  const modelStateBytes = profile.blocks.every((b) => b.paramBytes !== undefined)
    ? partition.ranges.map(([a, b]) => (profile.blocks.slice(a, b).reduce((x, blk) => x + blk.paramBytes!, 0) / E_FP32) * modelStateBytesPerParam(E_FP32, K_ADAMW_FP32, zero, dp))
    : null;
  const tpBlocks = req.profile.tp?.blocks;
  const fit = req.profile.tpAllReduce;
  const perStage = (pick: 'forward' | 'backward') => partition.ranges.map(([a, b]) => tpBlocks!.slice(a, b).reduce((x, blk) => x + tpCollectivesTime(blk[pick], fit!), 0));
  const tp = t > 1 ? { t, forward: perStage('forward'), backward: perStage('backward') } : null;
  const predicted = lanes === undefined || noSharedPrediction ? null : predictions(auto.schedule, costs, lanes);
  return { partition, costs, auto, baselines, predictions: predicted, zero, tp, modelStateBytes, ...(noSharedPrediction ? { noSharedPrediction } : {}) };
}

/**
 * The planner's peak of each rank's worker (bytes) running `schedule` on the plan's cut: its stages' model states
 * (modelStateBytes), the stash at the schedule's peak on the plan's costs (the profile's heldBytes, simulate.ts), and
 * the most temporaries any of its blocks' workers held (the profile's workBytes: a backward's received gradient and
 * working set). Null without the blocks' paramBytes. One worker of a pipeline without tp (a tp worker's blocks are
 * not measured that way).
 */
export function rankPeakBytes(profile: Profile, plan: Plan, schedule: Schedule): number[] | null {
  const states = plan.modelStateBytes;
  if (!states) return null;
  const work = plan.partition.ranges.map(([a, b]) => Math.max(0, ...profile.blocks.slice(a, b).map((x) => x.workBytes ?? 0)));
  const sim = simulate(schedule, plan.costs);
  return sim.memory.map((m) => {
    const mine = schedule.stageToRank.flatMap((owner, s) => (owner === m.rank ? [s % states.length] : []));
    return mine.reduce((t, s) => t + states[s], 0) + m.peakBytes + Math.max(0, ...mine.map((s) => work[s]));
  });
}
