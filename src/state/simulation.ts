/**
 * Simulate-only: generate a schedule, play it against the cost model, and put
 * the closed form beside it. Pure; the views memoise it per parameter set.
 */
import { generateSchedule, scheduleKind, costsPerStage, simulate, type SimulationResult, closedForm, closedFormPeakActivations, type ClosedForm, type Schedule } from '../schedule/index.ts';
import type { SimParams } from './sim-params.ts';
import { validateSimParams } from './sim-params.ts';

export interface SimOutcome {
  params: SimParams;
  schedule: Schedule;
  result: SimulationResult;
  /** Null where theory.ts knows no closed form, or the costs are not its defaults. */
  closed: ClosedForm | null;
  closedPeak: number[] | null;
  /** Wall time the simulation took, ms. */
  tookMs: number;
}

function defaultCosts(p: SimParams): boolean {
  return p.costF === 1 && p.costB === 2 && p.costI === 1 && p.costW === 1 && p.latency === 0;
}

export function runSimulation(p: SimParams): SimOutcome {
  validateSimParams(p);
  const t0 = performance.now();
  const schedule = generateSchedule(p.schedule, p.ranks, p.microbatches, p.virtual);
  const result = simulate(schedule, {
    ...costsPerStage({ F: p.costF, B: p.costB, I: p.costI, W: p.costW }, scheduleKind(p.schedule).costChunks(p.virtual)),
    latency: p.latency,
    activationBytes: 1,
  });
  const closed = defaultCosts(p) ? closedForm(p.schedule, p.ranks, p.microbatches, p.virtual) : null;
  const closedPeak = closedFormPeakActivations(p.schedule, p.ranks, p.microbatches, p.virtual);
  return { params: p, schedule, result, closed, closedPeak, tookMs: performance.now() - t0 };
}
