/**
 * Checkpoints inside a PipeDream-2BW stream.
 *
 * 2BW's arithmetic does not depend on when its actions run: micro-batch k runs its forward and backward on weight
 * version max(⌊k / m⌋ − 1, 0), and each stage updates after its last backward of a block, having summed the block's
 * gradients in micro-batch order (double-buffer-policy.ts). So the run's state after step B — each stage's W(B) and
 * W(B − 1), its optimizer state, the losses of steps 0 … B − 1 — is a point a new stream of steps B, B + 1, … can
 * start from and compute the numbers the stream that went on computed (only its fill and drain differ).
 *
 * Each stage reaches step B at its own time (the last stage first, stage 0 after its last backward of block B − 1):
 * the workers of replica 0 tell their state as they get there (rank-runtime.ts), and this module joins a step's
 * states, once every one is in and the losses of its steps are known, into the run's progress for onProgress. A
 * step some worker never reached (the stream stopped or failed first) is never handed on.
 */
import type { TrainProgress } from '../nn/train.ts';
import type { RankState } from './executor/index.ts';

export interface StreamCheckpointShape {
  /** How many workers give a state (replica 0's): worker w's state is the w-th. */
  readers: number;
  /** The losses of the steps before the window (a resumed stream's checkpoint's). */
  prior: readonly number[];
  /** The readers' states of one step, in worker order, joined into the run's progress (gather-state.ts joinProgress). */
  join: (states: RankState[], stepsDone: number, losses: readonly number[]) => TrainProgress;
  onProgress: (p: TrainProgress) => void;
}

export class StreamCheckpoints {
  private readonly states = new Map<number, ((RankState & { readMs: number }) | undefined)[]>();
  private readonly losses: number[];
  /** Each step handed on: the longest of its workers' reads of their state (on their path, as a synchronous run's read is). */
  readonly readMs: number[] = [];
  /** The first join that failed: the run ends with it (coordinator). */
  error: Error | null = null;
  private closed = false;

  constructor(private readonly shape: StreamCheckpointShape) {
    this.losses = [...shape.prior];
  }

  /** Worker `worker`'s state as its stage ended step stepsDone − 1's block. */
  state(worker: number, s: RankState & { stepsDone: number; readMs: number }): void {
    if (this.closed || worker < 0 || worker >= this.shape.readers) return;
    const { stepsDone, ...state } = s;
    const parts = this.states.get(stepsDone) ?? Array.from({ length: this.shape.readers }, () => undefined);
    parts[worker] = state;
    this.states.set(stepsDone, parts);
    this.handOn();
  }

  /**
   * The stream's window has ended: a state still on its way (its message crossed the window's end) is not handed on,
   * so nothing is saved after the run's own end-of-stream save.
   */
  close(): void {
    this.closed = true;
    this.states.clear();
  }

  /** The loss of the run's step `step` (told in step order). */
  loss(step: number, loss: number): void {
    if (step !== this.losses.length) return;
    this.losses.push(loss);
    this.handOn();
  }

  /** The steps whose states are all in and whose losses are known, oldest first. */
  private handOn(): void {
    for (const stepsDone of [...this.states.keys()].sort((a, b) => a - b)) {
      const parts = this.states.get(stepsDone) as ((RankState & { readMs: number }) | undefined)[];
      if (parts.some((p) => !p) || this.losses.length < stepsDone) return;
      this.states.delete(stepsDone);
      if (this.error) continue;
      try {
        const whole = parts as (RankState & { readMs: number })[];
        this.shape.onProgress(this.shape.join(whole.map(({ readMs: _ms, ...st }) => st), stepsDone, this.losses));
        this.readMs.push(Math.max(...whole.map((p) => p.readMs)));
      } catch (e) {
        this.error = e instanceof Error ? e : new Error(String(e));
      }
    }
  }
}
