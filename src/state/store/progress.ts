/**
 * Steps per second and time left, from the times steps finished. Time spent
 * paused is left out: only consecutive steps run without a pause count. Each
 * mark says how many steps are done, so a stream (PipeDream, 2BW), whose steps
 * are told done while it runs and whose losses all land at its end, is timed
 * by the former: a mark that does not move past the last one is no step.
 */
export interface ProgressEstimate {
  stepsPerSecond: number | null;
  /** Milliseconds left at that rate, null until there is a rate. */
  etaMs: number | null;
}

export class ProgressMeter {
  private marks: { at: number; done: number }[] = [];
  private readonly window: number;

  constructor(window = 12) {
    this.window = window;
  }

  /** Forget the history (after a pause: the gap is not a step's time). */
  reset(): void {
    this.marks = [];
  }

  /** `stepsDone` steps are done at `now` (ms); by default one more than at the last mark. */
  mark(now: number, stepsDone?: number): void {
    const last = this.marks[this.marks.length - 1];
    const done = stepsDone ?? (last ? last.done + 1 : 1);
    if (last && done <= last.done) return;
    this.marks.push({ at: now, done });
    if (this.marks.length > this.window) this.marks.shift();
  }

  estimate(stepsDone: number, stepsTotal: number): ProgressEstimate {
    const n = this.marks.length;
    if (n < 2) return { stepsPerSecond: null, etaMs: null };
    const first = this.marks[0];
    const last = this.marks[n - 1];
    const span = last.at - first.at;
    if (!(span > 0)) return { stepsPerSecond: null, etaMs: null };
    const rate = ((last.done - first.done) / span) * 1000;
    return { stepsPerSecond: rate, etaMs: (Math.max(0, stepsTotal - stepsDone) / rate) * 1000 };
  }
}
