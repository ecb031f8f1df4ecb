/**
 * Pause and single-step for a run: the runtime awaits `wait()` before every
 * step. While paused it waits for a resume or for one step's credit; an abort
 * releases it at once.
 */
export class StepGate {
  private paused: boolean;
  private credits = 0;
  private waiters: (() => void)[] = [];

  constructor(paused = false, credits = 0) {
    this.paused = paused;
    this.credits = credits;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** True when wait() would hold now (paused with no step credit). */
  get wouldHold(): boolean {
    return this.paused && this.credits === 0;
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.release();
  }

  /** Lets exactly one more step run, staying paused after it. */
  stepOnce(): void {
    this.paused = true;
    this.credits++;
    this.release();
  }

  private release(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  async wait(signal?: AbortSignal): Promise<void> {
    for (;;) {
      if (signal?.aborted) return;
      if (!this.paused) return;
      if (this.credits > 0) {
        this.credits--;
        return;
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          signal?.removeEventListener('abort', done);
          resolve();
        };
        this.waiters.push(done);
        signal?.addEventListener('abort', done, { once: true });
      });
    }
  }
}
