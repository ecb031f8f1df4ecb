/**
 * The simulator's PipeDream-2BW on dp replicas (a stream, no flush): after a
 * stage's every-th backward (the end of each block of m micro-batches) its
 * gradients are summed over its replicas by a ring all-reduce before the
 * stage's update, as the runtime does (src/runtime/policies/double-buffer-policy.ts):
 * the worker reads them off the device (`readback`), the ring runs its n − 1
 * reduce-scatter and n − 1 all-gather exchanges on the worker's one link
 * (α + (bytes / n) / β each), the sum is written back (`write`), and only then
 * does the worker go on to its next action. Replicas are identical, so one
 * pipeline's play stands for all; the collectives are drawn as ZeRO-2/3's are
 * (simulate-zero.ts zeroIntervals).
 */
import { ringExchangeTime } from './allreduce-cost.ts';
import type { Collective, CollectivePlay } from './simulate-zero.ts';
import type { CollectiveKind } from './timeline.ts';
import type { Schedule } from './types.ts';

export interface BlockPlayCosts {
  dp: number;
  /** Micro-batches per block: a stage's all-reduce follows its backward of micro-batch k when k % every = every − 1. */
  every: number;
  latency: number;
  bandwidth: number;
  gradBytes: Float64Array;
  /** The worker's own times per stage (0 when absent): reading the gradients back, writing the sum. */
  readback?: Float64Array;
  write?: Float64Array;
}

/** The hooks that play `s`'s per-block all-reduces, and what they recorded. */
export function blockPlay(s: Schedule, b: BlockPlayCosts): CollectivePlay {
  const n = b.dp;
  const none = new Float64Array(s.stages);
  const readback = b.readback ?? none, write = b.write ?? none;
  const half = (stage: number) => (n - 1) * ringExchangeTime(b.gradBytes[stage], n, b.latency, b.bandwidth);
  const linkFree = new Float64Array(s.ranks);
  const waitUntil = new Float64Array(s.ranks);
  const collectives: Collective[] = [];
  const record = (rank: number, stage: number, kind: CollectiveKind, start: number, time: number): number => {
    if (time > 0 || kind === 'reduce-scatter' || kind === 'all-gather') collectives.push({ rank, stage, kind, start, end: start + time });
    return start + time;
  };
  return {
    hooks: {
      startAt: (rank, _i, _a, _free, ready) => Math.max(ready, waitUntil[rank]),
      onEnd(rank, _i, a, _start, end) {
        waitUntil[rank] = Math.max(waitUntil[rank], end);
        if ((a.op !== 'B' && a.op !== 'W') || a.mb % b.every !== b.every - 1) return;
        const read = record(rank, a.stage, 'gather-grads', end, readback[a.stage]);
        const scattered = record(rank, a.stage, 'reduce-scatter', Math.max(read, linkFree[rank]), half(a.stage));
        const gathered = record(rank, a.stage, 'all-gather', scattered, half(a.stage));
        linkFree[rank] = gathered;
        waitUntil[rank] = record(rank, a.stage, 'scatter-back', gathered, write[a.stage]);
      },
    },
    finish() {
      let end = 0;
      for (let r = 0; r < s.ranks; r++) end = Math.max(end, waitUntil[r], linkFree[r]);
      return { end, collectives };
    },
  };
}
