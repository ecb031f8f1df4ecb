/**
 * Simulate-only: generate a schedule, play it against the cost model, and put
 * the closed form beside it. Pure; the views memoise it per parameter set.
 */
import { generateWindow, runsAsStream, streamMeshClosedForm, scheduleKind, costsPerStage, simulate, type SimulationResult, closedForm, closedFormPeakActivations, meshClosedForm, tpClosedForm, tpOpTimes, tpGradSumTime, abstractTpCosts, gradSumEvery, type ClosedForm, type MeshClosedForm, type Schedule, type CostModel, type TpCosts } from '../schedule/index.ts';
import { ConfigError } from '../util/errors.ts';
import type { SimParams } from './store/index.ts';
import { bytesPerUnit, simHasMesh, simHasTp, simWindowMicrobatches, validateSimParams } from './store/index.ts';

export interface SimOutcome {
  params: SimParams;
  schedule: Schedule;
  result: SimulationResult;
  /** Null where theory.ts knows no closed form, or the costs are not its defaults. */
  closed: ClosedForm | null;
  closedPeak: number[] | null;
  /** The dp × pp step's closed form (theory.ts meshClosedForm): with dp > 1, default costs and one stage per rank; else null. */
  closedMesh: MeshClosedForm | null;
  /** GPipe and 1F1B with tp, one stage per rank, free links and dp = 1 (tp-cost.ts tpClosedForm); else null. */
  closedTp: { step: number; share: number } | null;
  /** Wall time the simulation took, ms. */
  tookMs: number;
}

function defaultCosts(p: SimParams): boolean {
  return p.costF === 1 && p.costB === 2 && p.costI === 1 && p.costW === 1 && p.latency === 0;
}

/**
 * The data-parallel part of the cost model: dp replicas, each stage's
 * gradient bytes (a rank's share, gradMB, split over its stages like its
 * compute), and the ring all-reduce's α (ms) and β (MB/s) with one time unit
 * read as 1 ms. Nothing when dp = 1.
 */
export function simMeshCosts(p: SimParams, stagesPerRank: number): Pick<CostModel, 'dp' | 'gradBytes' | 'allReduce'> {
  if (!simHasMesh(p)) return {};
  return {
    dp: p.dp,
    // With tp each worker holds 1/tp of its stage's weights: its ring moves that much.
    gradBytes: (p.gradMB * 1e6) / stagesPerRank / p.tp,
    allReduce: {
      latency: p.arLatencyMs,
      bandwidth: bytesPerUnit(p.arBandwidthMBs),
      overlap: p.overlap,
      zero: p.zero,
      ...(p.zero === 3 ? { reshard: p.reshard } : {}),
      // PipeDream-2BW's stream: each stage's all-reduce after its last backward of each step's block of m (simulate-blocks.ts).
      ...(runsAsStream(p.schedule) ? { every: p.microbatches } : {}),
    },
  };
}

/**
 * The tp part of the cost model: t workers per stage, each stage's tpLayers / (stages per rank) layers with
 * Megatron's 2 all-reduces forward and 2 backward of tpActKB each, or with sequence parallelism its reduce-scatters and
 * all-gathers and each stage's LayerNorm gradient sum where the schedule's update reads it (tp-cost.ts
 * abstractTpCosts), priced as the tab's transport runs them (α + (t − 1)·bytes/β). Nothing when tp = 1.
 */
export function simTpCosts(p: SimParams, stages: number, stagesPerRank: number): TpCosts | null {
  if (!simHasTp(p)) return null;
  const every = gradSumEvery(scheduleKind(p.schedule).update, p, p.microbatches);
  return abstractTpCosts(
    { t: p.tp, layers: p.tpLayers / stagesPerRank, bytes: p.tpActKB * 1e3, latency: p.tpLatencyMs, bandwidth: bytesPerUnit(p.tpBandwidthMBs), sequenceParallel: p.sequenceParallel, ...(every === undefined ? {} : { every }) },
    stages,
  );
}

/**
 * The step's time overflowed a number: the field most to blame (the largest time, size or latency, or the smallest
 * bandwidth, which divides), named with its value.
 */
function overflow(p: SimParams): ConfigError {
  const weight: [keyof SimParams, number][] = [
    ['costF', p.costF], ['costB', p.costB], ['costI', p.costI], ['costW', p.costW], ['latency', p.latency],
    ['gradMB', p.gradMB], ['arLatencyMs', p.arLatencyMs], ['arBandwidthMBs', 1 / p.arBandwidthMBs],
    ['tpActKB', p.tpActKB], ['tpLatencyMs', p.tpLatencyMs], ['tpBandwidthMBs', 1 / p.tpBandwidthMBs],
  ];
  const [field] = weight.reduce((a, b) => (b[1] > a[1] ? b : a));
  return new ConfigError(`sim.${field}`, p[field], 'makes the step longer than a number can hold (the simulated makespan is infinite); choose a smaller time or size, or a larger bandwidth');
}

export function runSimulation(p: SimParams): SimOutcome {
  validateSimParams(p);
  const t0 = performance.now();
  // PipeDream and 2BW: the steps as one stream, never flushed (theory: 1F1B's over all its micro-batches).
  const schedule = generateWindow(p.schedule, p.ranks, p.microbatches, p.steps, p.virtual);
  const kind = scheduleKind(p.schedule);
  const m = simWindowMicrobatches(p);
  const chunks = kind.costChunks(p.virtual);
  // With tp each worker computes 1/tp of its stage (the abstract model splits all of it, as Megatron's layers do).
  const tpCosts = simTpCosts(p, schedule.stages, chunks);
  const result = simulate(schedule, {
    ...costsPerStage({ F: p.costF / p.tp, B: p.costB / p.tp, I: p.costI / p.tp, W: p.costW / p.tp }, chunks),
    latency: p.latency,
    activationBytes: 1,
    ...simMeshCosts(p, schedule.stages / schedule.ranks),
    ...(tpCosts ? { tp: tpCosts } : {}),
  });
  if (!Number.isFinite(result.makespan)) throw overflow(p);
  const closedPeak = closedFormPeakActivations(kind.theoryAs, p.ranks, m, p.virtual);
  const mc = simMeshCosts(p, 1);
  const meshCosts = mc.allReduce ? { dp: p.dp, gradBytes: p.gradMB * 1e6, latency: mc.allReduce.latency, bandwidth: mc.allReduce.bandwidth, overlap: p.overlap } : null;
  // PipeDream-2BW on replicas: its stream's own closed form (each block's all-reduce on the critical path once, theory.ts).
  const streamMesh = runsAsStream(p.schedule) && meshCosts && defaultCosts(p) && p.tp === 1 ? streamMeshClosedForm(p.ranks, p.microbatches, p.steps, meshCosts) : null;
  const closed = streamMesh ? streamMesh.pipeline : defaultCosts(p) && p.tp === 1 ? closedForm(kind.theoryAs, p.ranks, m, p.virtual) : null;
  const closedMesh =
    streamMesh ??
    (closed && meshCosts && schedule.stages === schedule.ranks && p.zero <= 1 ? meshClosedForm(kind.theoryAs, p.ranks, m, p.virtual, meshCosts) : null);
  let closedTp: SimOutcome['closedTp'] = null;
  if (tpCosts && (kind.theoryAs === 'gpipe' || kind.theoryAs === '1f1b') && schedule.stages === schedule.ranks && p.latency === 0 && p.dp === 1) {
    const tau = tpOpTimes(tpCosts, schedule.stages);
    const c = tpClosedForm(p.ranks, m, { F: p.costF / p.tp, B: p.costB / p.tp }, { F: tau.F[0], B: tau.B[0], G: tpGradSumTime(tpCosts, 0) });
    closedTp = { step: c.step, share: c.share };
  }
  return { params: p, schedule, result, closed, closedPeak, closedMesh, closedTp, tookMs: performance.now() - t0 };
}
