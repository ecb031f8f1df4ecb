/**
 * Pause and single-step for a run: the runtime awaits `wait()` before every
 * step. While paused it waits for a resume or for one step's credit; an abort
 * releases it at once. A stream, which has no step to wait at, watches it
 * instead (runtime/executor/stream-pause.ts: its workers hold between their actions).
 */
import { PauseState, type PauseSwitch } from '../../runtime/executor/index.ts';

export class StepGate implements PauseSwitch {
  private readonly state: PauseState;
  private credits = 0;
  private waiters: (() => void)[] = [];

  constructor(paused = false, credits = 0) {
    this.state = new PauseState(paused);
    this.credits = credits;
  }

  private get paused(): boolean {
    return this.state.isPaused;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** True when wait() would hold now (paused with no step credit). */
  get wouldHold(): boolean {
    return this.paused && this.credits === 0;
  }

  pause(): void {
    this.set(true);
  }

  resume(): void {
    this.set(false);
    this.release();
  }

  /** Lets exactly one more step run, staying paused after it. */
  stepOnce(): void {
    this.set(true);
    this.credits++;
    this.release();
  }

  watch(onChange: (paused: boolean) => void): () => void {
    return this.state.watch(onChange);
  }

  private set(paused: boolean): void {
    this.state.set(paused);
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
