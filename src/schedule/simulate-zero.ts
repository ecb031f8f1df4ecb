/**
 * The simulator's ZeRO-2 and ZeRO-3 (FSDP): their collectives run between a
 * step's actions, so they are played with the pipeline, not after it
 * (simulate-mesh.ts plays ZeRO 0/1's all-reduce at the flush). The rules are
 * the runtime's (src/runtime/policies/sharded-step.ts), on each worker's one link, in
 * the order the worker issues them (replicas are identical, so one pipeline's
 * play stands for all):
 *
 * - after every action that leaves weight gradients (B, W) its stage's
 *   gradients are reduce-scattered: n − 1 exchanges of bytes / n, α + (bytes /
 *   n) / β each; with overlap the worker goes on computing, without it waits;
 * - ZeRO-3: an action that reads its stage's weights (F, B, I) waits for their
 *   all-gather (the same time as a reduce-scatter); 'step' keeps a stage's
 *   weights from its first such action of the step to its last, 'microbatch'
 *   gathers before every one; with prefetch a gather is issued when the worker
 *   reaches the action before it (one ahead, as FSDP prefetches), else when it
 *   reaches the action itself;
 * - the end of the step: ZeRO-2 all-gathers each stage's updated weights on
 *   the link after its last collective; ZeRO-3 gathers nothing there.
 *
 * The worker's own time around the ring, when given (the run's report fits
 * them to its measured intervals; 0 by default): after each B / W the worker
 * reads the stage's gradients off the device (`readback`, 'gather-grads')
 * before it goes on and before the reduce-scatter starts; a ZeRO-3 gather is
 * written onto the device (`write`, 'scatter-back') before the action that
 * waited for it starts; at the step's end, once the link is idle, each stage
 * (latest first) runs its sharded optimizer step (`update`, 'shard-update'),
 * then with ZeRO-2 its all-gather and the write of the weights, one stage
 * after another as the runtime's endStep does.
 */
import { ringExchangeTime } from './allreduce-cost.ts';
import type { PlayCosts } from './engine.ts';
import type { CollectiveKind, Interval } from './timeline.ts';
import type { Action, Schedule } from './types.ts';

export interface ZeroPlayCosts {
  dp: number;
  zero: 2 | 3;
  reshard: 'step' | 'microbatch';
  prefetch: boolean;
  overlap: boolean;
  latency: number;
  bandwidth: number;
  /** Each stage's gradient (and weight) bytes. */
  gradBytes: Float64Array;
  /** The worker's own times per stage (0 when absent): gradient read-back, shard update, weight write. */
  readback?: Float64Array;
  update?: Float64Array;
  write?: Float64Array;
}

/** The worker's steps around the ring, drawn beside the exchanges (one interval each, no peer). */
const WORKER_KINDS: ReadonlySet<CollectiveKind> = new Set(['gather-grads', 'shard-update', 'scatter-back']);

const readsWeights = (a: Action) => a.op === 'F' || a.op === 'B' || a.op === 'I';

/** One collective (or a worker's own step around it) played between the actions. */
export interface Collective {
  rank: number;
  stage: number;
  kind: CollectiveKind;
  start: number;
  end: number;
}

/** Collectives played between a schedule's actions (ZeRO-2/3 here; PipeDream-2BW's per block, simulate-blocks.ts). */
export interface CollectivePlay {
  /** Hooks for the engine's play (startAt, onEnd). */
  hooks: Required<Pick<PlayCosts, 'startAt' | 'onEnd'>>;
  /** After the play: the end of the step's collectives (ZeRO-2's last all-gathers included) and every collective. */
  finish(): { end: number; collectives: Collective[] };
}

/** The hooks that play `s`'s ZeRO-2/3 collectives, and what they recorded. */
export function zeroPlay(s: Schedule, z: ZeroPlayCosts): CollectivePlay {
  const n = z.dp;
  const none = new Float64Array(s.stages);
  const readback = z.readback ?? none, update = z.update ?? none, write = z.write ?? none;
  /** One collective (a reduce-scatter or an all-gather) of stage `stage`: n − 1 exchanges. */
  const half = (stage: number) => (n - 1) * ringExchangeTime(z.gradBytes[stage], n, z.latency, z.bandwidth);
  const linkFree = new Float64Array(s.ranks);
  const waitUntil = new Float64Array(s.ranks);
  const lastCompute = new Float64Array(s.ranks);
  const resident = s.order.map(() => new Set<number>());
  /** Gathers issued ahead, by the index of the action they are for: when they end. */
  const pending = s.order.map(() => new Map<number, number>());
  const lastUse = s.order.map((list) => {
    const last = new Map<number, number>();
    list.forEach((a, i) => readsWeights(a) && last.set(a.stage, i));
    return last;
  });
  const collectives: Collective[] = [];
  const onLink = (rank: number, stage: number, kind: CollectiveKind, at: number): number => {
    const start = Math.max(at, linkFree[rank]);
    const end = start + half(stage);
    linkFree[rank] = end;
    collectives.push({ rank, stage, kind, start, end });
    return end;
  };
  /** The worker's own step of `time` from `at` (drawn when it takes any time); its end. */
  const onWorker = (rank: number, stage: number, kind: CollectiveKind, at: number, time: number): number => {
    if (time > 0) collectives.push({ rank, stage, kind, start: at, end: at + time });
    return at + time;
  };
  /** Issues (at `at`) the gather of the next action after `i` whose stage will not be on the device: the runtime's prefetch. */
  const prefetchAfter = (rank: number, i: number, at: number) => {
    const list = s.order[rank];
    for (let j = i + 1; j < list.length; j++) {
      const b = list[j];
      if (!readsWeights(b)) continue;
      const freed = z.reshard === 'microbatch' || (!resident[rank].has(b.stage) && b.stage !== list[i].stage);
      if (!freed) continue;
      const aheadForStage = z.reshard === 'step' && [...pending[rank].keys()].some((k) => list[k].stage === b.stage);
      if (!pending[rank].has(j) && !aheadForStage) pending[rank].set(j, onLink(rank, b.stage, 'all-gather', at));
      return;
    }
  };
  const hooks: CollectivePlay['hooks'] = {
    startAt(rank, i, a, free, ready) {
      let start = Math.max(ready, waitUntil[rank]);
      if (z.zero === 3 && readsWeights(a)) {
        if (!resident[rank].has(a.stage)) {
          const gathered = pending[rank].get(i) ?? onLink(rank, a.stage, 'all-gather', free);
          pending[rank].delete(i);
          if (z.prefetch) prefetchAfter(rank, i, free);
          start = Math.max(start, onWorker(rank, a.stage, 'scatter-back', Math.max(gathered, free), write[a.stage]));
          resident[rank].add(a.stage);
        } else if (z.prefetch) {
          prefetchAfter(rank, i, free);
        }
      }
      return start;
    },
    onEnd(rank, i, a, _start, end) {
      lastCompute[rank] = Math.max(lastCompute[rank], end);
      if (a.op === 'B' || a.op === 'W') {
        const read = onWorker(rank, a.stage, 'gather-grads', end, readback[a.stage]);
        waitUntil[rank] = Math.max(waitUntil[rank], read);
        const done = onLink(rank, a.stage, 'reduce-scatter', read);
        if (!z.overlap) waitUntil[rank] = done;
      }
      if (z.zero === 3 && readsWeights(a) && (z.reshard === 'microbatch' || lastUse[rank].get(a.stage) === i)) resident[rank].delete(a.stage);
    },
  };
  return {
    hooks,
    finish() {
      let end = 0;
      for (let r = 0; r < s.ranks; r++) {
        // Latest stage first, as the runtime's endStep updates and gathers them, once the link is idle.
        const held = s.stageToRank.flatMap((owner, st) => (owner === r ? [st] : [])).sort((x, y) => y - x);
        const anyWorkerTime = held.some((st) => update[st] > 0 || write[st] > 0);
        if (!anyWorkerTime) {
          if (z.zero === 2) for (const st of held) onLink(r, st, 'all-gather', lastCompute[r]);
          end = Math.max(end, linkFree[r], lastCompute[r]);
          continue;
        }
        let t = Math.max(lastCompute[r], waitUntil[r], linkFree[r]);
        for (const st of held) {
          t = onWorker(r, st, 'shard-update', t, update[st]);
          if (z.zero === 2) t = onWorker(r, st, 'scatter-back', onLink(r, st, 'all-gather', t), write[st]);
        }
        end = Math.max(end, t, linkFree[r]);
      }
      return { end, collectives };
    },
  };
}

/** The collectives as the timeline's intervals: each of n − 1 exchanges of every replica's worker, `mb` its index. */
export function zeroIntervals(z: Pick<ZeroPlayCosts, 'dp' | 'gradBytes'>, collectives: readonly Collective[], peerOf: (replica: number, rank: number) => number): Interval[] {
  const out: Interval[] = [];
  const n = z.dp;
  collectives.forEach((c) => {
    if (WORKER_KINDS.has(c.kind)) {
      for (let d = 0; d < n; d++) {
        const iv: Interval = { rank: c.rank, stage: c.stage, op: 'collective', mb: -1, start: c.start, end: c.end, coll: c.kind, bytes: z.gradBytes[c.stage] / (c.kind === 'shard-update' ? n : 1) };
        if (d > 0) iv.replica = d;
        out.push(iv);
      }
      return;
    }
    const dt = (c.end - c.start) / (n - 1);
    for (let d = 0; d < n; d++) {
      for (let k = 0; k < n - 1; k++) {
        const iv: Interval = { rank: c.rank, stage: c.stage, op: 'collective', mb: k, start: c.start + k * dt, end: c.start + (k + 1) * dt, coll: c.kind, bytes: z.gradBytes[c.stage] / n, peer: peerOf(d, c.rank) };
        if (d > 0) iv.replica = d;
        out.push(iv);
      }
    }
  });
  return out;
}
