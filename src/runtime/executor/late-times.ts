/**
 * A step's GPU times, a step late. A worker does not wait at a step's end for its actions' GPU spans
 * (rank-executor.ts): it begins reading them with the update's submit and places the step's actions when the next
 * step ends (the spans arrived long before), or when the run asks at its end (`lateTimes`). So a step's result
 * carries its actions as they were issued (`timesLate`) and the previous step's, placed (`late`); the coordinator
 * puts those in the previous step's record (`withLateTimes`) and waits for the last step's at the run's end.
 */
import type { StepMemory } from '../../nn/memory-ledger.ts';
import type { Interval } from '../../schedule/timeline.ts';

/** One worker's step once its actions are placed at their GPU times: every interval of the step, and its memory samples so timed. */
export interface LateTimes {
  step: number;
  intervals: Interval[];
  memory?: StepMemory;
  /** The step's end on this worker: its CPU's (the result's stepEnd), or its actions' last GPU end where that is later. */
  stepEnd: number;
}

/** What a step's result says of its times (rank-executor.ts StepResult). */
export interface TimesOfStep {
  /** The step's actions are drawn where they were issued: their GPU times come with the next step (`late`) or at the run's end. */
  timesLate?: boolean;
  /** The previous step's intervals (and memory samples) at their GPU times. */
  late?: LateTimes;
}

/** `results` (one step's, worker order) with each worker's late times put in: `late[w]` for worker w, where it has them. */
export function withLateTimes<R extends TimesOfStep & { intervals: Interval[]; memory?: StepMemory; stepEnd: number }>(results: readonly R[], late: readonly (LateTimes | null | undefined)[]): R[] {
  return results.map((r, w) => {
    const l = late[w];
    if (!l) return r;
    const { timesLate: _, ...rest } = r;
    return { ...rest, intervals: l.intervals, stepEnd: l.stepEnd, ...(l.memory ? { memory: l.memory } : {}) } as R;
  });
}
