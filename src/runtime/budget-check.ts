/**
 * A run that starts stays under its memory budget (issue 54): after every step (a stream: after its window) each
 * worker's high-water mark by kind (the allocator's count, report/high-water.ts stepHighWater: live bytes at the step's
 * most, gathered weights, staging and temporaries as transient) is held against the budget;
 * the first worker over it ends the run with a message naming the step, the worker, its bytes by kind and what grew
 * past the plan the run was admitted on (config/memory-budget.ts). The coordinator throws it between steps, so no
 * worker hangs and every checkpoint already taken stays.
 */
import { byKindText, fmtBytes, MiB, PEAK_KINDS, PEAK_KIND_LABEL, plannedPeaks, totalOf } from '../config/memory-budget.ts';
import { laneLabel, meshOfRun, placeOf } from '../schedule/mesh.ts';
import type { RunConfig } from '../config/run-config.ts';
import { stepHighWater } from './report/index.ts';
import type { StepResult } from './executor/index.ts';

/** A run that passed its memory budget: it ends (a recovery would pass it again), its checkpoints kept. */
export class MemoryBudgetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MemoryBudgetError';
  }
}

/** The message of the first worker whose high-water mark in the step `when` names (`step 3`) passes the run's budget; null when all are under (or there is none). */
export function budgetBreach(config: RunConfig, when: string, results: readonly Pick<StepResult, 'held' | 'optimizerBytes' | 'peakStashBytes' | 'memory'>[]): string | null {
  if (config.memoryBudget === undefined) return null;
  const budget = config.memoryBudget * MiB;
  const m = meshOfRun(config);
  let planned: ReturnType<typeof plannedPeaks> | null = null;
  for (let w = 0; w < results.length; w++) {
    const hw = stepHighWater(results[w]);
    const total = totalOf(hw);
    if (total <= budget) continue;
    planned ??= plannedPeaks(config);
    const plan = planned[placeOf(m, w).rank];
    const grew = PEAK_KINDS.filter((k) => hw[k] > plan[k]).map((k) => `${PEAK_KIND_LABEL[k]} ${fmtBytes(hw[k])} (planned ${fmtBytes(plan[k])})`);
    return (
      `${when}: worker ${w} (${laneLabel(m, w)}) held ${fmtBytes(total)} (${byKindText(hw)}), over its memory budget of ${fmtBytes(budget)} (memoryBudget = ${config.memoryBudget}). ` +
      `${grew.length > 0 ? `What grew past the plan of ${fmtBytes(plan.total)}: ${grew.join(', ')}` : `Nothing grew past its plan of ${fmtBytes(plan.total)}`}. ` +
      'The run stopped after that step; its last checkpoint stays.'
    );
  }
  return null;
}
