/**
 * A stream's news while its one window runs (PipeDream, PipeDream-2BW: all the run's steps in one window), gathered
 * from its workers for the run's listeners:
 * - its steps done, told by the worker holding stage 0 of replica 0 (tp rank 0) as each step's last backward ends;
 * - each step's loss, once every worker holding the last stage (one per replica, tp rank 0) has told that step's
 *   micro-batch losses, in step order.
 * A step's loss is computed by one function, `streamStepLosses`, for the live ones and for the report's, from the
 * workers' losses in worker order: the two are the same numbers.
 */
import type { RankState, StreamNews } from './executor/index.ts';

type MbLoss = { mb: number; loss: number };

/** What a run tells its caller while a stream runs (coordinator RunOptions). */
export interface StreamListeners {
  /** How many steps every micro-batch has finished its backward of. */
  onStreamProgress?: (p: { stepsDone: number; steps: number; elapsedMs: number }) => void;
  /** A step's loss, as soon as every replica computed it; the same number as the report's and onStep's at the end. */
  onStreamLoss?: (p: { step: number; steps: number; loss: number; elapsedMs: number }) => void;
}

/** The coordinator's own listener: a worker's state as its stage ended a block (a checkpoint inside the stream). */
export type StreamStateListener = (worker: number, state: RankState & { stepsDone: number; readMs: number }) => void;

/**
 * The loss of each step of a stream, from the losses its workers computed (`results` in worker order): per-micro-batch
 * losses grouped into steps of m, each step's the batch mean: the mean of its micro-batches' means (lossOver
 * 'microbatch', PipeDream) or the sum of their shares of it ('step', PipeDream-2BW; with replicas, each micro-batch's
 * share is the sum of theirs, each scaled by the whole batch).
 */
export function streamStepLosses(results: readonly { losses: readonly MbLoss[] }[], m: number, lossOver: 'step' | 'microbatch'): number[] {
  const byMb = new Map<number, number>();
  for (const r of results) for (const l of r.losses) byMb.set(l.mb, (byMb.get(l.mb) ?? 0) + l.loss);
  const all = [...byMb].sort((a, b) => a[0] - b[0]).map(([, loss]) => loss);
  const out: number[] = [];
  for (let i = 0; i < all.length; i += m) out.push(all.slice(i, i + m).reduce((s, l) => s + l, 0) / (lossOver === 'microbatch' ? m : 1));
  return out;
}

export interface StreamShape {
  steps: number;
  microbatches: number;
  lossOver: 'step' | 'microbatch';
  /** The workers that compute the loss (the last stage's, tp rank 0), in worker order. */
  lossWorkers: readonly number[];
  /** The worker that tells the steps done (stage 0's of replica 0, tp rank 0). */
  progressWorker: number;
  /** The run's start, performance.now() ms. */
  t0: number;
  /** Milliseconds the stream was paused so far (stream-pause.ts): not elapsed. */
  pausedMs?: () => number;
  /** A resumed stream's first step: the window's steps are told as the run's (this many later). */
  firstStep?: number;
  /** The workers whose state a checkpoint inside the stream joins, and who hears it (stream-checkpoint.ts). */
  stateWorkers?: readonly number[];
  onState?: StreamStateListener;
}

/**
 * Each worker's listener for a running stream: its news reach `listeners`. Undefined for a worker with nothing
 * asked of it (a loss worker when nobody listens for losses reads none back mid-stream).
 */
export function streamNews(listeners: StreamListeners, shape: StreamShape): (worker: number) => StreamNews | undefined {
  const { onStreamProgress, onStreamLoss } = listeners;
  const { steps, microbatches: m, lossOver, lossWorkers, progressWorker, t0, onState } = shape;
  const first = shape.firstStep ?? 0;
  const stateWorkers = onState ? (shape.stateWorkers ?? []) : [];
  const elapsed = () => performance.now() - t0 - (shape.pausedMs?.() ?? 0);
  /** Per step not yet told: each loss worker's micro-batch losses, in worker order. */
  const told = new Map<number, (MbLoss[] | undefined)[]>();
  let next = 0;
  const tellLosses = () => {
    for (let parts = told.get(next); parts && lossWorkers.every((_, i) => parts?.[i]); parts = told.get(next)) {
      told.delete(next);
      const [loss] = streamStepLosses(parts.map((losses) => ({ losses: losses ?? [] })), m, lossOver);
      onStreamLoss?.({ step: first + next, steps, loss, elapsedMs: elapsed() });
      next++;
    }
  };
  const hear = (worker: number, news: Parameters<StreamNews>[0]) => {
    if ('state' in news) {
      if (stateWorkers.includes(worker)) onState?.(worker, news.state);
      return;
    }
    if ('stepsDone' in news) {
      onStreamProgress?.({ stepsDone: first + news.stepsDone, steps, elapsedMs: elapsed() });
      return;
    }
    const i = lossWorkers.indexOf(worker);
    if (i < 0 || news.losses.length === 0) return;
    const step = Math.floor(news.losses[0].mb / m);
    const parts = told.get(step) ?? Array.from({ length: lossWorkers.length }, () => undefined);
    parts[i] = news.losses;
    told.set(step, parts);
    tellLosses();
  };
  return (worker) => {
    const asked = (onStreamProgress && worker === progressWorker) || (onStreamLoss && lossWorkers.includes(worker)) || stateWorkers.includes(worker);
    return asked ? (news) => hear(worker, news) : undefined;
  };
}
