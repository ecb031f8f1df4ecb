/**
 * Ending a stream (PipeDream, PipeDream-2BW: one window of all the run's steps) early, at a step boundary every
 * worker keeps, so a Stop keeps what a stopped synchronous run keeps: the losses and weights of the steps done.
 *
 * Every micro-batch enters the pipeline through a forward of stage 0, so the coordinator ends a stream in two calls:
 *  1. hold() on every worker holding stage 0 (each replica's, each tp rank's): no new micro-batch enters there until
 *     the end is known; each says how many entered;
 *  2. endAt(n) on every worker, n the next step boundary at or past the most that entered: actions of micro-batches
 *     n and later are skipped, and a wait for one of their activations or gradients ends (none will come); stage 0
 *     lets micro-batches below n in again.
 * The micro-batches below n run to the end as they would have, their blocks' updates and all-reduces included.
 */
import type { Action } from '../../schedule/types.ts';
import type { Mailbox } from '../comm/index.ts';

/** A wait for a micro-batch past the stream's end, ended: the action that waited is skipped. */
export class StreamEndedError extends Error {
  constructor(readonly end: number) {
    super(`the stream ended after micro-batch ${end - 1}`);
    this.name = 'StreamEndedError';
  }
}

export class StreamEnd {
  /** Micro-batches the stream runs: all until endAt. */
  private end = Infinity;
  /** Stage-0 forwards let in on this worker so far. */
  private entered = 0;
  private held: { promise: Promise<void>; release: () => void } | null = null;

  constructor(private readonly mailbox: Mailbox) {}

  /** Step 1 (a worker holding stage 0): lets no new micro-batch in until endAt; returns how many entered. */
  hold(): number {
    if (!this.held && this.end === Infinity) {
      let release = () => {};
      const promise = new Promise<void>((resolve) => (release = resolve));
      this.held = { promise, release };
    }
    return this.entered;
  }

  /** Step 2 (every worker): the stream ends before micro-batch `microbatches`. */
  endAt(microbatches: number): void {
    this.end = Math.min(this.end, microbatches);
    this.mailbox.cancelFrom(this.end, new StreamEndedError(this.end));
    this.held?.release();
    this.held = null;
  }

  /** Before an action: false when its micro-batch is past the end (skip it); a stage-0 forward waits while held. */
  async admit(a: Action): Promise<boolean> {
    if (a.op === 'F' && a.stage === 0) {
      if (this.held) await this.held.promise;
      if (a.mb >= this.end) return false;
      this.entered = Math.max(this.entered, a.mb + 1);
      return true;
    }
    return a.mb < this.end;
  }
}
