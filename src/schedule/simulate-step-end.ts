/**
 * The end of a step the timeline does not draw, simulated: after a rank's last
 * action, its collectives and its copies' sum, its workers read the step's
 * losses back (the ranks holding a last stage), update their weights and wait
 * for the device (runtime/executor/rank-executor.ts, flush.ts); the next step starts
 * when every worker is done. `costs.stepEnd` gives each pipeline rank's time
 * for it (the Train view passes each rank's measured time after its last drawn
 * interval: runtime/report/report-step-end.ts); each rank plays it once it is free
 * (replica 0's lanes: every replica plays the same), and the step on the
 * workers' clocks ends with the last of them. Nothing is drawn and the
 * makespan stays the drawn step's, as in the measured timeline.
 */
import { ConfigError } from '../util/errors.ts';
import type { CostModel } from './cost-model.ts';
import type { Timeline } from './timeline.ts';

export interface StepEndPlay {
  /** Per pipeline rank: its end of step. */
  time: number[];
  /** Per pipeline rank: when it is free (its last compute, collective or copies' sum ends) and when its end of step ends. */
  free: number[];
  end: number[];
  /** The step on the workers' clocks: the last rank's end. */
  step: number;
}

/** Each rank's end-of-step time from costs.stepEnd (one number or one per rank), or null when not given. Throws ConfigError naming it. */
export function stepEndTimes(ranks: number, costs: Pick<CostModel, 'stepEnd'>): number[] | null {
  const given = costs.stepEnd;
  if (given === undefined) return null;
  const field = 'costs.stepEnd';
  if (typeof given !== 'number' && (!Array.isArray(given) || given.length !== ranks)) {
    throw new ConfigError(field, given, `must be a number or a list of ${ranks} numbers, one per rank`);
  }
  return Array.from({ length: ranks }, (_, r) => {
    const v = typeof given === 'number' ? given : given[r];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new ConfigError(typeof given === 'number' ? field : `${field}[${r}]`, v, 'must be a time ≥ 0');
    return v;
  });
}

/** Plays each rank's end of step after the last compute, collective or copies' sum of its lanes in `timeline` (messages in flight are not the rank's). */
export function playStepEnd(timeline: Pick<Timeline, 'ranks' | 'intervals'>, time: readonly number[]): StepEndPlay {
  const free = new Array<number>(timeline.ranks).fill(0);
  for (const iv of timeline.intervals) {
    if (iv.op === 'comm' || (iv.replica ?? 0) !== 0) continue;
    if (iv.end > free[iv.rank]) free[iv.rank] = iv.end;
  }
  const end = free.map((f, r) => f + time[r]);
  return { time: [...time], free, end, step: Math.max(0, ...end) };
}
