/**
 * Steps per second and time left, from the times steps finished. Time spent
 * paused is left out: only consecutive steps run without a pause count.
 */
export interface ProgressEstimate {
  stepsPerSecond: number | null;
  /** Milliseconds left at that rate, null until there is a rate. */
  etaMs: number | null;
}

export class ProgressMeter {
  private times: number[] = [];
  private readonly window: number;

  constructor(window = 12) {
    this.window = window;
  }

  /** Forget the history (after a pause: the gap is not a step's time). */
  reset(): void {
    this.times = [];
  }

  /** A step finished at `now` (ms). */
  mark(now: number): void {
    this.times.push(now);
    if (this.times.length > this.window) this.times.shift();
  }

  estimate(stepsDone: number, stepsTotal: number): ProgressEstimate {
    const n = this.times.length;
    if (n < 2) return { stepsPerSecond: null, etaMs: null };
    const span = this.times[n - 1] - this.times[0];
    if (!(span > 0)) return { stepsPerSecond: null, etaMs: null };
    const rate = ((n - 1) / span) * 1000;
    return { stepsPerSecond: rate, etaMs: (Math.max(0, stepsTotal - stepsDone) / rate) * 1000 };
  }
}
