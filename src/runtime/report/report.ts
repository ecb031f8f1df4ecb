/**
 * From the ranks' step results to a run report: one clock for all ranks,
 * measured vs simulated (the simulator fed with the measured mean per-op
 * times) vs closed-form bubble, memory, communication and throughput.
 */
import { simulate, type CostModel } from '../../schedule/simulate.ts';
import { fitWhereSizesDiffer } from '../../plan/allreduce-fit.ts';
import { closedFormBubble } from '../../schedule/theory.ts';
import { bubbleFraction, computeOnly, isCompute, makespan, meanByStageOp, withEpLanes } from '../../schedule/timeline.ts';
import type { Op } from '../../schedule/types.ts';
import type { Interval, Timeline } from '../../schedule/timeline.ts';
import type { RankStats, Weights } from '../executor/index.ts';
import type { StepResult } from '../executor/index.ts';
import type { RunReport } from './report-types.ts';
import type { MemorySample, StepMemory } from '../../nn/memory-ledger.ts';
import { heldBytesPerWorker, hostBytes, ringBytesFormula } from './held-bytes.ts';
import type { RunConfig } from '../../config/run-config.ts';
import type { RunPlan } from '../executor/index.ts';
import { allReduceFigures, type AllReduceFigures } from './report-collectives.ts';
import { copySumCosts, copySumFigures, simulatedCopySum } from './report-copies.ts';
import { stepEndFigures } from './report-step-end.ts';
import { runTpGradSum, runTpMessages, tpFigures } from './report-tp.ts';
import { allToAllShare, epCostsOf, epFigures } from './report-ep.ts';
import { moeLoadSteps } from './report-moe-load.ts';
import { withEpWaits } from './report-ep-wait.ts';
import { meshOfRun } from '../../schedule/mesh.ts';

export type { RunReport } from './report-types.ts';

export interface StepRecord {
  step: number;
  /** Training loss of the step (the batch mean). */
  loss: number;
  timeline: Timeline;
  results: StepResult[];
  /** Each worker's count of its memory in the step (worker order), ms from the step's first start like `timeline`. */
  memory?: StepMemory[];
}

/** The comm kinds that cost time on the data path (recv-wait is idleness, not cost). */
const COMM_COST: ReadonlySet<string> = new Set(['readback', 'transfer', 'upload', 'send']);

/** Puts every rank's intervals on one clock, ms from the step's first start. */
export function stepTimeline(plan: RunPlan, step: number, results: StepResult[]): StepRecord {
  const t0 = Math.min(...results.map((r) => r.stepStart));
  const intervals: Interval[] = [];
  for (const r of results) for (const iv of r.intervals) intervals.push({ ...iv, start: iv.start - t0, end: iv.end - t0 });
  intervals.sort((a, b) => a.start - b.start);
  // Expert parallelism: each all-to-all's wait for the group's slowest member (report-ep-wait.ts).
  if ((plan.config.ep ?? 1) > 1) intervals.splice(0, intervals.length, ...withEpWaits(intervals));
  const timeline: Timeline = {
    source: 'measured',
    ...(plan.config.dp > 1 ? { dp: plan.config.dp } : {}),
    ...((plan.config.tp ?? 1) > 1 ? { tp: plan.config.tp } : {}),
    ...((plan.config.ep ?? 1) > 1 ? { ep: plan.config.ep } : {}),
    ranks: plan.schedule.ranks,
    stages: plan.schedule.stages,
    microbatches: plan.schedule.microbatches,
    intervals,
    unit: 'ms',
  };
  const losses = results.flatMap((r) => r.losses);
  const loss = losses.reduce((s, l) => s + l.loss, 0);
  const shift = (s: MemorySample): MemorySample => ({ ...s, t: s.t - t0 });
  const memory = results.every((r) => r.memory) ? results.map((r) => ({ samples: (r.memory as StepMemory).samples.map(shift), peak: shift((r.memory as StepMemory).peak) })) : undefined;
  return { step, loss, timeline, results, ...(memory ? { memory } : {}) };
}

export interface ReportInput {
  config: RunConfig;
  plan: RunPlan;
  records: StepRecord[];
  adapter: string;
  wallMs: number;
  weights?: Weights;
  stats: RankStats[];
  leakedBuffers: number;
  /** Per-step losses when they differ from the records' (PipeDream: one record spans every step). */
  stepLosses?: number[];
  /** A resumed run: the losses of the steps before its first (they begin the report's losses). */
  priorLosses?: readonly number[];
  replicaMismatch?: number;
  tpMismatch?: number;
  /** Each read of the run's state between steps, in ms. */
  stateReadMs?: readonly number[];
  phases: RunReport['phases'];
}

/**
 * The simulator's second axis fed with the run's own collectives: each stage's
 * gradient bytes and the α–β ring model fitted to the stages' measured
 * collective times on the worker that waited least (the replicas' skew is not
 * the collective's cost) (sizes less than 2× apart: all of it read as bandwidth).
 */
function meshCosts(c: AllReduceFigures, config: RunConfig): Pick<CostModel, 'dp' | 'gradBytes' | 'allReduce'> {
  const points = c.perStage.filter((p) => p.bytes > 0 && p.ownMs > 0).map((p) => ({ bytes: p.bytes, ms: p.ownMs }));
  // Two parameters only from sizes at least 2× apart; else all of the time is read as bandwidth.
  const fit = fitWhereSizesDiffer(points, config.dp);
  const volume = points.reduce((a, p) => a + ((2 * (config.dp - 1)) / config.dp) * p.bytes, 0);
  const time = points.reduce((a, p) => a + p.ms, 0);
  return {
    dp: config.dp,
    gradBytes: c.perStage.map((p) => p.bytes),
    allReduce: { latency: fit ? fit.latencyMs : 0, bandwidth: fit ? fit.bytesPerMs : time > 0 ? volume / time : Infinity, overlap: config.overlap, zero: config.zero === 1 },
  };
}

/**
 * ZeRO-2/3's costs for the simulator (and, with `every`, a stream's all-reduce per block of that many micro-batches,
 * zero = 0 there): each stage's vector bytes, and the ring's bandwidth read off the measured
 * exchanges (the median of bytes sent / exchange time over every reduce-scatter and all-gather exchange; no
 * latency term: many small exchanges of one size do not separate α from β), and the worker's own read-back,
 * update and write around the ring, each stage's measured mean.
 */
function shardedCosts(c: AllReduceFigures, timelines: readonly Timeline[], config: RunConfig, every?: number): Pick<CostModel, 'dp' | 'gradBytes' | 'allReduce'> {
  const rates: number[] = [];
  for (const t of timelines) {
    for (const iv of t.intervals) {
      if (iv.op === 'collective' && (iv.coll === 'reduce-scatter' || iv.coll === 'all-gather') && iv.bytes && iv.end > iv.start) rates.push(iv.bytes / (iv.end - iv.start));
    }
  }
  rates.sort((a, b) => a - b);
  // A stream's all-reduce per block is a plain one, each stage's of its own size: where those sizes are at least 2×
  // apart, the α–β line through each stage's ring time (its exchanges, on the worker that waited least) prices it,
  // latency and all; otherwise the median exchange rate does, as for ZeRO-2/3.
  const fit = every ? fitWhereSizesDiffer(c.perStage.map((p) => ({ bytes: p.bytes, ms: p.ringMs })), config.dp) : null;
  const bandwidth = fit ? fit.bytesPerMs : rates.length > 0 ? rates[Math.floor(rates.length / 2)] : Infinity;
  return {
    dp: config.dp,
    gradBytes: c.perStage.map((p) => p.bytes),
    allReduce: {
      latency: fit ? fit.latencyMs : 0, bandwidth, overlap: config.overlap, zero: config.zero, reshard: config.reshard, prefetch: config.prefetch, ...(every ? { every } : {}),
      // The worker's own steps around the ring, each stage's mean as measured (simulate-zero.ts plays them where the runtime runs them).
      readback: meanWorkerTime(timelines, 'gather-grads', c.perStage.length),
      update: meanWorkerTime(timelines, 'shard-update', c.perStage.length),
      write: meanWorkerTime(timelines, 'scatter-back', c.perStage.length),
    },
  };
}

/** Per stage, the mean length of the measured `kind` intervals (0 where none). */
function meanWorkerTime(timelines: readonly Timeline[], kind: 'gather-grads' | 'shard-update' | 'scatter-back', stages: number): number[] {
  const sum = new Array<number>(stages).fill(0);
  const n = new Array<number>(stages).fill(0);
  for (const t of timelines) {
    for (const iv of t.intervals) {
      if (iv.op !== 'collective' || iv.coll !== kind || iv.stage >= stages) continue;
      sum[iv.stage] += iv.end - iv.start;
      n[iv.stage]++;
    }
  }
  return sum.map((x, i) => (n[i] > 0 ? x / n[i] : 0));
}

/**
 * Each stage's simulated collective, as the measured row holds it: the flush's (or ZeRO's ring time in the step); a
 * stream's per block (the simulator sums its blocks), with the worker's read-back and write around the ring, which
 * the measured all-reduce spans too.
 */
function simulatedPerStage(time: readonly number[], plan: RunPlan, ar: CostModel['allReduce']): number[] {
  if (!plan.windows.stream) return [...time];
  const at = (x: number | readonly number[] | undefined, s: number) => (x === undefined ? 0 : typeof x === 'number' ? x : (x[s] ?? 0));
  // The blocks the stream ran: its schedule's micro-batches in steps of m (fewer than the config's steps when stopped early).
  const blocks = plan.schedule.microbatches / plan.config.microbatches;
  return time.map((t, s) => t / blocks + at(ar?.readback, s) + at(ar?.write, s));
}

/** Each worker's counts of a step, in lane order (replica, rank, ep rank, tp rank). */
function stepCounts(results: readonly StepResult[]): RunReport['steps'][number]['counts'] {
  const key = (c: { rank: number; replica?: number; tpRank?: number; epRank?: number }) => [c.replica ?? 0, c.rank, c.epRank ?? 0, c.tpRank ?? 0];
  const out = results.map((r) => ({ rank: r.rank, ...r.counts }));
  return out.sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2] || x[3] - y[3];
  });
}

export function buildReport(input: ReportInput): RunReport {
  const { config, plan, records, adapter, wallMs } = input;
  const { schedule } = plan;
  if (records.length === 0) throw new Error('the run ended before its first step finished');
  const measured = records.length > 1 ? records.slice(1) : records;

  // Mean measured time per stage and op: wall (what the timeline shows) and, where
  // timestamp queries gave it, the GPU's own time of the action's kernels.
  const compute = measured.flatMap((r) => r.timeline.intervals.filter(isCompute));
  const meanOpMs = meanByStageOp(compute, (iv) => iv.end - iv.start);
  const meanGpuOpMs = meanByStageOp(compute, (iv) => iv.gpuMs);
  const computeMs = compute.reduce((s, iv) => s + (iv.end - iv.start), 0);
  let commMs = 0, crossings = 0;
  for (const rec of measured) {
    for (const iv of rec.timeline.intervals) {
      if (iv.op !== 'comm') continue;
      if (iv.comm && COMM_COST.has(iv.comm)) commMs += iv.end - iv.start;
      if (iv.comm === 'transfer') crossings++;
    }
  }
  // With tp: the simulator is fed each op's compute without its tp collectives, and prices them by the run's own α–β fit (report-tp.ts, schedule/tp-cost.ts).
  const tp = tpFigures(measured.map((r) => r.timeline), plan);
  // With ep: likewise each op's compute without its all-to-alls, priced by the run's own α–β fit (report-ep.ts, schedule/ep-cost.ts), played after the compute as the workers run them.
  const ep = tp ? null : epFigures(measured.map((r) => r.timeline), plan);
  const simOpMs = tp ? meanByStageOp(compute, (iv) => tp.computeMs.get(iv)) : ep ? meanByStageOp(compute, (iv) => ep.computeMs.get(iv)) : meanOpMs;
  const perStage = (op: Op): number[] => Array.from({ length: schedule.stages }, (_, s) => simOpMs[s]?.[op] ?? 0);
  const commMsPerCrossing = crossings > 0 ? commMs / crossings : 0;
  const collectives = allReduceFigures(measured.map((r) => r.timeline), schedule.stages, plan.windows.stream, config.zero >= 2);
  const tpFit = tp?.figures.fit;
  // DualPipe: each model stage's sum over its copies at its measured own time, played when both ranks are done (simulate-copies.ts).
  const copies = copySumFigures(measured.map((r) => r.timeline), schedule, config.zero);
  const dpCosts = collectives && config.dp > 1
    ? plan.windows.stream
      ? shardedCosts(collectives, measured.map((r) => r.timeline), config, config.microbatches)
      : config.zero <= 1 ? meshCosts(collectives, config) : shardedCosts(collectives, measured.map((r) => r.timeline), config)
    : {};
  // Each rank's end of step after its last drawn action (the losses read, the update), played after it (simulate-step-end.ts).
  const ends = stepEndFigures(measured);
  const costs: CostModel = {
    F: perStage('F'), B: perStage('B'), I: perStage('I'), W: perStage('W'), latency: commMsPerCrossing, unit: 'ms',
    ...(tp && tpFit ? { tp: { t: tp.figures.t, latency: tpFit.latencyMs, bandwidth: tpFit.bytesPerMs, bytesPerElement: tp.figures.bytesPerElement, messages: runTpMessages(plan), gradSum: runTpGradSum(plan) } } : {}),
    // ZeRO 0/1: the flush's all-reduce on the α–β ring fitted to it; ZeRO-2/3: their collectives played between the actions (simulate-zero.ts).
    // A stream (PipeDream-2BW on replicas): an all-reduce per stage and block, played between the actions (simulate-blocks.ts).
    ...(ep ? { ep: epCostsOf(ep.figures) } : {}),
    ...dpCosts,
    ...(copies ? { copySum: copySumCosts(copies, schedule.stages) } : {}),
    ...(ends ? { stepEnd: ends.tailMs } : {}),
  };
  const sim = simulate(schedule, costs);

  const makespans = measured.map((r) => makespan(computeOnly(r.timeline)));
  const bubbles = measured.map((r) => bubbleFraction(computeOnly(r.timeline)));
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

  const peakStashBytes: Record<number, number> = {};
  for (const rec of records) for (const r of rec.results) for (const [s, b] of Object.entries(r.peakStashBytes)) peakStashBytes[Number(s)] = Math.max(peakStashBytes[Number(s)] ?? 0, b);

  const last = records[records.length - 1];
  const run = input.stepLosses ?? records.map((r) => r.loss);
  const losses = [...(input.priorLosses ?? []), ...run];
  const report: RunReport = {
    config,
    schedule,
    stageBlocks: plan.stageBlocks,
    adapter,
    steps: records.map((r) => ({ step: r.step, loss: r.loss, makespanMs: makespan(computeOnly(r.timeline)), bubble: bubbleFraction(computeOnly(r.timeline)), counts: stepCounts(r.results) })),
    losses,
    timeline: last.timeline,
    simulatedTimeline: withEpLanes({ ...sim.timeline, source: 'simulated' }, config.ep ?? 1),
    // Compute only, as measured: before the collectives and the copies' sum.
    makespanMs: { measured: mean(makespans), simulated: sim.dp?.computeMakespan ?? sim.copySum?.before ?? sim.makespan },
    bubble: {
      measured: mean(bubbles),
      simulated: sim.bubble,
      // A stream's one window is its theory's schedule (1F1B) over every step's micro-batches: that window's closed form.
      closedForm: closedFormBubble(plan.windows.stream ? plan.kind.theoryAs : schedule.name, schedule.ranks, schedule.microbatches, config.virtual),
    },
    meanOpMs,
    ...(Object.keys(meanGpuOpMs).length > 0 ? { meanGpuOpMs } : {}),
    peakStashBytes,
    commShare: computeMs > 0 ? commMs / computeMs : 0,
    commMsPerCrossing,
    samplesPerSecond: wallMs > 0 ? (config.batchSize * run.length) / (wallMs / 1000) : 0,
    wallMs,
    phases: input.phases,
    leakedBuffers: input.leakedBuffers,
    weights: input.weights,
    optimizerBytesPerWorker: last.results.map((r) => r.optimizerBytes ?? 0),
    ...hostBytes(records),
    heldBytesPerWorker: heldBytesPerWorker(plan, records),
    ...(last.memory ? { memory: last.memory } : {}),
  };
  if (collectives) collectives.ringBytesFormula = ringBytesFormula(plan);
  // The replicas' step leaves the copies' sum out, measured (report-collectives.ts) and simulated alike; with ZeRO the
  // sum runs inside the measured step (report-copies.ts insideReplicas): the simulated one holds it too.
  if (collectives) report.allReduce = sim.dp ? { ...collectives, simulated: { stepMs: copies?.insideReplicas ? sim.makespan : (sim.copySum?.before ?? sim.makespan), share: sim.dp.allReduceShare, perStageMs: simulatedPerStage(sim.dp.allReduceTime, plan, dpCosts.allReduce) } } : collectives;
  if (copies) report.copySum = { ...copies, simulated: simulatedCopySum(sim.copySum, sim.makespan) };
  if (ends) report.stepEnd = sim.stepEnd ? { ...ends, simulated: { wallMs: sim.stepEnd.step, afterMs: Math.max(0, sim.stepEnd.step - sim.makespan) } } : ends;
  if (tp) report.tensorParallel = { ...tp.figures, ...(sim.tp ? { simulated: { stepMs: sim.makespan, share: sim.tp.share, exposedMs: sim.tp.share * sim.makespan } } : {}) };
  // And what overlapping them with compute would give (DualPipe's pairs on a device that runs a forward and a backward chunk at once; the tab's workers do not).
  if (ep) report.expertParallel = { ...ep.figures, simulated: { stepMs: sim.makespan, share: allToAllShare(report.simulatedTimeline).share, overlappedStepMs: simulate(schedule, { ...costs, ep: epCostsOf(ep.figures, true) }).makespan } };
  if (input.replicaMismatch !== undefined) report.replicaMismatch = input.replicaMismatch;
  if (input.tpMismatch !== undefined) report.tpMismatch = input.tpMismatch;
  const reads = input.stateReadMs ?? [];
  if (reads.length > 0) report.stateReads = { count: reads.length, meanMs: reads.reduce((a, b) => a + b, 0) / reads.length, maxMs: Math.max(...reads) };
  // An MoE run: each step's routing counts per layer, expert and micro-batch (a stream's steps from its first).
  const first = plan.windows.stream ? (input.priorLosses?.length ?? 0) : 0;
  const moeLoad = records.flatMap((r) => moeLoadSteps(first + r.step, r.results.map((x) => x.moeLoad), meshOfRun(config), config.microbatches, plan.windows.stream, r.timeline));
  if (moeLoad.length > 0) report.moeLoad = moeLoad;
  if (last.results.some((r) => r.weightStash)) {
    const ws: Record<number, { versions: number; bytes: number }> = {};
    for (const r of last.results) Object.assign(ws, r.weightStash ?? {});
    report.weightStash = ws;
  }
  return report;
}

