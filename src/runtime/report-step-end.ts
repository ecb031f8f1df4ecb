/**
 * The end of a step that the timeline does not draw: after a worker's last
 * action (and its collectives) it reads the step's losses back (the ranks
 * holding a last stage) and updates its weights (flush.ts, the optimizer's
 * kernels and a wait for the device), and the next step starts only when every
 * worker is done. Per measured step: the step on the workers' clocks (from the
 * first worker's start to the last worker's end of its update), the part of it
 * after the timeline's last interval, and the longest update (rank-executor.ts
 * optimizerMs: the flush's end of step, its waits for the collectives included).
 */
import type { Timeline } from '../schedule/timeline.ts';
import type { StepResult } from './rank-executor.ts';

export interface StepEndFigures {
  /** Mean step from the first worker's start to the last worker's end, ms. */
  wallMs: number;
  /** Mean time of it after the timeline's last interval ends, ms. */
  afterMs: number;
  /** Mean of the step's longest end of step on one worker (update and its waits), ms. */
  updateMs: number;
}

type Ends = Pick<StepResult, 'stepStart' | 'stepEnd' | 'optimizerMs'>;

function mean(xs: readonly number[]): number {
  return xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

/** The figures over the measured steps (each timeline on its step's clock: ms from its first worker's start), or null for none. */
export function stepEndFigures(steps: readonly { timeline: Timeline; results: readonly Ends[] }[]): StepEndFigures | null {
  if (steps.length === 0) return null;
  const wall: number[] = [];
  const after: number[] = [];
  const update: number[] = [];
  for (const { timeline, results } of steps) {
    if (results.length === 0) continue;
    const t0 = Math.min(...results.map((r) => r.stepStart));
    const w = Math.max(...results.map((r) => r.stepEnd)) - t0;
    let drawn = 0;
    for (const iv of timeline.intervals) if (iv.end > drawn) drawn = iv.end;
    wall.push(w);
    after.push(Math.max(0, w - drawn));
    update.push(Math.max(...results.map((r) => r.optimizerMs)));
  }
  if (wall.length === 0) return null;
  return { wallMs: mean(wall), afterMs: mean(after), updateMs: mean(update) };
}
