/**
 * Simulate-only: generate a schedule, play it against the cost model, and put
 * the closed form beside it. Pure; the views memoise it per parameter set.
 */
import { generateSchedule, scheduleKind, costsPerStage, simulate, type SimulationResult, closedForm, closedFormPeakActivations, meshClosedForm, type ClosedForm, type MeshClosedForm, type Schedule, type CostModel } from '../schedule/index.ts';
import type { SimParams } from './sim-params.ts';
import { bytesPerUnit, simHasMesh, validateSimParams } from './sim-params.ts';

export interface SimOutcome {
  params: SimParams;
  schedule: Schedule;
  result: SimulationResult;
  /** Null where theory.ts knows no closed form, or the costs are not its defaults. */
  closed: ClosedForm | null;
  closedPeak: number[] | null;
  /** The dp × pp step's closed form (theory.ts meshClosedForm): with dp > 1, default costs and one stage per rank; else null. */
  closedMesh: MeshClosedForm | null;
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
    gradBytes: (p.gradMB * 1e6) / stagesPerRank,
    allReduce: { latency: p.arLatencyMs, bandwidth: bytesPerUnit(p.arBandwidthMBs), overlap: p.overlap, zero: p.zero },
  };
}

export function runSimulation(p: SimParams): SimOutcome {
  validateSimParams(p);
  const t0 = performance.now();
  const schedule = generateSchedule(p.schedule, p.ranks, p.microbatches, p.virtual);
  const chunks = scheduleKind(p.schedule).costChunks(p.virtual);
  const result = simulate(schedule, {
    ...costsPerStage({ F: p.costF, B: p.costB, I: p.costI, W: p.costW }, chunks),
    latency: p.latency,
    activationBytes: 1,
    ...simMeshCosts(p, schedule.stages / schedule.ranks),
  });
  const closed = defaultCosts(p) ? closedForm(p.schedule, p.ranks, p.microbatches, p.virtual) : null;
  const closedPeak = closedFormPeakActivations(p.schedule, p.ranks, p.microbatches, p.virtual);
  const mc = simMeshCosts(p, 1);
  const closedMesh =
    closed && mc.allReduce && schedule.stages === schedule.ranks
      ? meshClosedForm(p.schedule, p.ranks, p.microbatches, p.virtual, { dp: p.dp, gradBytes: p.gradMB * 1e6, latency: mc.allReduce.latency, bandwidth: mc.allReduce.bandwidth, overlap: p.overlap })
      : null;
  return { params: p, schedule, result, closed, closedPeak, closedMesh, tookMs: performance.now() - t0 };
}
