/**
 * The sum over a schedule's model copies at the step's end (DualPipe holds 2:
 * copies.ts), played as the runtime runs it (runtime/policies/copy-sum.ts, flush.ts).
 *
 * A rank is free for it once its step is done: its last compute action and,
 * with replicas, its stages' data-parallel collectives. It then walks its
 * stages by model stage; the copies of model stage j meet in a ring of the
 * ranks that hold them (for DualPipe ranks r and p − 1 − r), which starts when
 * the last of them is free and holds each of them until it ends. Every
 * replica's rings run at the same times (the replicas play in lock step), and
 * with tp each tp worker sums its own pieces with its partner's.
 *
 * A stage's time is `costs.copySum` where given (the Train view passes each
 * model stage's measured time), else the α–β ring over the pipeline link
 * between its holders (costs.latency and costs.bandwidth, the ring's slowest
 * link) on the stage's gradient bytes: 2(c − 1)·α + 2(c − 1)/c · bytes / β
 * for c copies. With ZeRO (any stage) only a replica's owned chunk, bytes /
 * dp, is summed. ZeRO-1, 2 and 3 sum it between their reduce-scatter and the
 * shard's update; played here after the rank's collectives, the same time on
 * the rank's link. Nothing is played when every stage's time is 0 (free links,
 * no gradient bytes).
 */
import { ConfigError } from '../util/errors.ts';
import { ringAllReduceTime } from './allreduce-cost.ts';
import { copiesOf, stagesPerCopy } from './copies.ts';
import type { CostModel } from './cost-model.ts';
import type { Interval } from './timeline.ts';
import type { Schedule } from './types.ts';

type Shape = Pick<Schedule, 'stages' | 'ranks' | 'microbatches' | 'copies' | 'stageToRank' | 'name'>;

export interface CopySumPlay {
  copies: number;
  /** Per schedule stage: its model stage's ring time. */
  time: number[];
  start: number[];
  end: number[];
  /** The step before the sum (compute and data-parallel collectives): the replicas' figures stay beside it. */
  before: number;
}

/** The ranks holding model stage j's copies, in copy order. */
function holders(s: Shape, j: number): number[] {
  const k = stagesPerCopy(s);
  return Array.from({ length: copiesOf(s) }, (_, c) => s.stageToRank[c * k + j]);
}

/**
 * Each schedule stage's ring time (its model stage's: the largest of its copies' given times, or the α–β ring on its
 * bytes); null for a schedule with one copy. Throws ConfigError naming costs.copySum.
 */
export function copySumTimes(
  s: Shape,
  costs: Pick<CostModel, 'copySum' | 'latency' | 'bandwidth'>,
  gradBytes: Float64Array,
  zeroDp: number,
): Float64Array | null {
  const copies = copiesOf(s);
  const field = 'costs.copySum';
  if (copies === 1) {
    if (costs.copySum !== undefined) throw new ConfigError(field, costs.copySum, `is the time of the sum over model copies: schedule ${s.name} has one copy`);
    return null;
  }
  const given = costs.copySum;
  if (given !== undefined && typeof given !== 'number' && (!Array.isArray(given) || given.length !== s.stages)) {
    throw new ConfigError(field, given, `must be a number or a list of ${s.stages} numbers, one per stage`);
  }
  const at = (x: CostModel['latency'], a: number, b: number, fallback: number) => (x === undefined ? fallback : typeof x === 'number' ? x : x(a, b));
  const k = stagesPerCopy(s);
  const out = new Float64Array(s.stages);
  for (let j = 0; j < k; j++) {
    const ranks = holders(s, j);
    let t = 0;
    if (given !== undefined) {
      for (let c = 0; c < copies; c++) {
        const stage = c * k + j;
        const v = typeof given === 'number' ? given : given[stage];
        if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new ConfigError(typeof given === 'number' ? field : `${field}[${stage}]`, v, 'must be a time ≥ 0');
        t = Math.max(t, v);
      }
    } else {
      let latency = 0;
      let bandwidth = Infinity;
      for (let c = 0; c < copies; c++) {
        latency = Math.max(latency, at(costs.latency, ranks[c], ranks[(c + 1) % copies], 0));
        bandwidth = Math.min(bandwidth, at(costs.bandwidth, ranks[c], ranks[(c + 1) % copies], Infinity));
      }
      t = ringAllReduceTime(gradBytes[j] / zeroDp, copies, latency, bandwidth);
    }
    for (let c = 0; c < copies; c++) out[c * k + j] = t;
  }
  return out;
}

/**
 * When each stage's sum over its copies runs: model stages in order (every rank walks its own that way), each ring
 * starting when the last of its ranks is free (`free`, per rank, is updated). `time` from copySumTimes.
 */
export function copySumWindows(s: Shape, free: Float64Array, time: Float64Array): { start: Float64Array; end: Float64Array } {
  const k = stagesPerCopy(s);
  const copies = copiesOf(s);
  const start = new Float64Array(s.stages);
  const end = new Float64Array(s.stages);
  for (let j = 0; j < k; j++) {
    const ranks = holders(s, j);
    let t = 0;
    for (const r of ranks) t = Math.max(t, free[r]);
    for (let c = 0; c < copies; c++) {
      const stage = c * k + j;
      start[stage] = t;
      end[stage] = t + time[stage];
      free[ranks[c]] = end[stage];
    }
  }
  return { start, end };
}

/** The step with the sum over the copies played after `free` (per rank, when its step is done); null when nothing is summed or it is free. */
export function playCopySum(s: Shape, time: Float64Array | null, free: Float64Array, before: number): CopySumPlay | null {
  if (!time || time.every((t) => t === 0)) return null;
  const { start, end } = copySumWindows(s, free, time);
  return { copies: copiesOf(s), time: [...time], start: [...start], end: [...end], before };
}

/** The sums drawn: one 'copy-sum' interval per stage and replica on its rank, as the runtime logs them (bytes: what one member sent). */
export function copySumIntervals(s: Shape, play: CopySumPlay, dp: number, sentBytes: (stage: number) => number): Interval[] {
  const out: Interval[] = [];
  for (let d = 0; d < dp; d++) {
    for (let stage = 0; stage < s.stages; stage++) {
      if (play.time[stage] <= 0) continue;
      const iv: Interval = { rank: s.stageToRank[stage], stage, op: 'collective', coll: 'copy-sum', mb: -1, start: play.start[stage], end: play.end[stage], bytes: sentBytes(stage) };
      if (d > 0) iv.replica = d;
      out.push(iv);
    }
  }
  return out;
}
