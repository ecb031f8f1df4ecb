/**
 * The end of a step that the timeline does not draw: after a worker's last
 * action (and its collectives) it reads the step's losses back (the ranks
 * holding a last stage) and updates its weights (flush.ts, the optimizer's
 * kernels and a wait for the device), and the next step starts only when every
 * worker is done. Per measured step: the step on the workers' clocks (from the
 * first worker's start to the last worker's end of its update), the part of it
 * after the timeline's last interval, and the longest update (rank-executor.ts
 * optimizerMs: the flush's end of step, its waits for the collectives included).
 * And per pipeline rank, the time after its last drawn action, collective or
 * copies' sum (the slowest of its workers), which the simulator plays
 * (costs.stepEnd, schedule/simulate-step-end.ts): `simulated` is that play.
 */
import type { Timeline } from '../../schedule/timeline.ts';
import type { StepResult } from '../executor/index.ts';

export interface StepEndFigures {
  /** Mean step from the first worker's start to the last worker's end, ms. */
  wallMs: number;
  /** Mean time of it after the timeline's last interval ends, ms. */
  afterMs: number;
  /** Mean of the step's longest end of step on one worker (update and its waits), ms. */
  updateMs: number;
  /** Per pipeline rank, the mean of its slowest worker's time from its last drawn action or collective to its step's end, ms. */
  tailMs: number[];
  /** The simulator's step with each rank's tail played after its last action or collective (the report sets it). */
  simulated?: { wallMs: number; afterMs: number };
}

type Ends = Pick<StepResult, 'rank' | 'intervals' | 'stepStart' | 'stepEnd' | 'optimizerMs'>;

/** A worker's time after its last drawn interval (messages in flight aside), on its own clock. */
function tailOf(r: Ends): number {
  let last = r.stepStart;
  for (const iv of r.intervals) if (iv.op !== 'comm' && iv.end > last) last = iv.end;
  return Math.max(0, r.stepEnd - last);
}

function mean(xs: readonly number[]): number {
  return xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

/** The figures over the measured steps (each timeline on its step's clock: ms from its first worker's start), or null for none. */
export function stepEndFigures(steps: readonly { timeline: Timeline; results: readonly Ends[] }[]): StepEndFigures | null {
  if (steps.length === 0) return null;
  const wall: number[] = [];
  const after: number[] = [];
  const update: number[] = [];
  const ranks = steps[0].timeline.ranks;
  const tails: number[][] = Array.from({ length: ranks }, () => []);
  for (const { timeline, results } of steps) {
    const slowest = new Array<number>(ranks).fill(-1);
    for (const r of results) if (r.rank < ranks) slowest[r.rank] = Math.max(slowest[r.rank], tailOf(r));
    slowest.forEach((t, rank) => t >= 0 && tails[rank].push(t));
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
  return { wallMs: mean(wall), afterMs: mean(after), updateMs: mean(update), tailMs: tails.map(mean) };
}
