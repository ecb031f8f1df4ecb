/**
 * The α–β cost of the data-parallel collective at a step's flush, and when
 * each stage's collective runs on its rank's link.
 *
 * Ring all-reduce of `bytes` over n workers (mesh.ts: each worker sends only to
 * its ring successor): the vector is cut into n chunks (chunkBounds), then n − 1
 * reduce-scatter exchanges and n − 1 all-gather exchanges follow, in each of
 * which every worker sends one chunk, bytes / n, to its successor at once. An
 * exchange takes α + (bytes / n) / β, so the whole all-reduce takes
 *
 *     2(n − 1) · α + 2(n − 1)/n · bytes / β.
 *
 * ZeRO-1 (reduce-scatter the gradients, each worker updates its 1/n shard of
 * the optimizer state, all-gather the updated weights) moves exactly the same
 * volume: n − 1 reduce-scatter exchanges of the gradients' chunks and n − 1
 * all-gather exchanges of the weights' chunks, each bytes / n (weights and
 * gradients have the same size), so its time in this model equals the
 * all-reduce's; only the optimizer state it keeps differs (src/plan).
 *
 * Links. The stages one rank holds share that worker's link: their collectives
 * run one at a time, each starting when its stage is ready and the link is
 * free, in the order the stages became ready (ties by stage index).
 */
import { ConfigError } from '../util/errors.ts';
import type { CollectiveKind } from './timeline.ts';

export interface AllReduceCosts {
  /** α: time of one chunk exchange before its first byte arrives (≥ 0). */
  latency: number;
  /** β: bytes per time unit on one link (> 0; Infinity for free links). */
  bandwidth: number;
  /** Start each stage's collective as soon as its last backward ends (true, default), or only after every worker's last compute. */
  overlap?: boolean;
  /**
   * ZeRO: true or 1, reduce-scatter, shard update, all-gather of the weights (the same volume as the
   * all-reduce, at the flush); 2 and 3 run their collectives between the step's actions (simulate-zero.ts).
   */
  zero?: boolean | 0 | 1 | 2 | 3;
  /** ZeRO-3: free a stage's gathered weights after its last use in the step ('step', default) or after every action. */
  reshard?: 'step' | 'microbatch';
  /** ZeRO-3: issue the next gather one action ahead (default true). */
  prefetch?: boolean;
  /**
   * ZeRO-2/3, the worker's own time around the ring (simulate-zero.ts), per stage (one number for every stage, or a
   * list): `readback` reading a stage's gradients off the device after each B / W before the worker goes on,
   * `update` the sharded optimizer step of a stage at the step's end, `write` putting gathered weights on the
   * device before they are used. Default 0 each.
   */
  readback?: number | readonly number[];
  update?: number | readonly number[];
  write?: number | readonly number[];
  /**
   * PipeDream-2BW on replicas (a stream with no flush): each stage's all-reduce runs after its every-th backward, the
   * end of each block of `every` micro-batches, and the worker waits for it before its next action
   * (simulate-blocks.ts). Absent: once per step, at the flush. ZeRO 0 only.
   */
  every?: number;
}

/** The worker's own times of ZeRO-2/3, as given (checked: numbers ≥ 0, or lists of them). */
export type WorkerTimes = Pick<AllReduceCosts, 'readback' | 'update' | 'write'>;

/** The checked costs: `zero` as a stage 0–3. */
export type CheckedAllReduceCosts = Required<Omit<AllReduceCosts, 'zero' | 'every' | keyof WorkerTimes>> & { zero: 0 | 1 | 2 | 3; every: number | null } & WorkerTimes;

function checkWorkerTime(field: string, x: unknown): void {
  const ok = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
  if (x === undefined || ok(x) || (Array.isArray(x) && x.every(ok))) return;
  throw new ConfigError(field, x, 'must be a time ≥ 0, or a list of them (one per stage)');
}

/** Checks an AllReduceCosts value; throws ConfigError naming `costs.allReduce.<field>`. */
export function checkAllReduceCosts(x: unknown): CheckedAllReduceCosts {
  const field = 'costs.allReduce';
  const known = ['latency', 'bandwidth', 'overlap', 'zero', 'reshard', 'prefetch', 'readback', 'update', 'write', 'every'];
  if (typeof x !== 'object' || x === null || Array.isArray(x)) throw new ConfigError(field, x, 'must be an object {latency, bandwidth, overlap?, zero?, reshard?, prefetch?}');
  const r = x as Record<string, unknown>;
  for (const k of Object.keys(r)) {
    if (!known.includes(k)) throw new ConfigError(`${field}.${k}`, r[k], `is not a field of the all-reduce costs; known fields are ${known.join(', ')}`);
  }
  const { latency, bandwidth, overlap = true, zero = false, reshard = 'step', prefetch = true } = r;
  if (typeof latency !== 'number' || !Number.isFinite(latency) || latency < 0) throw new ConfigError(`${field}.latency`, latency, 'must be a finite number at least 0 (time per chunk exchange)');
  if (typeof bandwidth !== 'number' || Number.isNaN(bandwidth) || bandwidth <= 0) {
    throw new ConfigError(`${field}.bandwidth`, bandwidth, 'must be a number greater than 0 (bytes per time unit; Infinity for free links)');
  }
  if (typeof overlap !== 'boolean') throw new ConfigError(`${field}.overlap`, overlap, 'must be true or false');
  if (typeof zero !== 'boolean' && ![0, 1, 2, 3].includes(zero as number)) throw new ConfigError(`${field}.zero`, zero, 'must be true or false, or a ZeRO stage 0, 1, 2 or 3');
  if (reshard !== 'step' && reshard !== 'microbatch') throw new ConfigError(`${field}.reshard`, reshard, 'must be one of step, microbatch');
  if (typeof prefetch !== 'boolean') throw new ConfigError(`${field}.prefetch`, prefetch, 'must be true or false');
  for (const k of ['readback', 'update', 'write'] as const) checkWorkerTime(`${field}.${k}`, r[k]);
  const stage = (zero === true ? 1 : zero === false ? 0 : zero) as 0 | 1 | 2 | 3;
  const every = r.every ?? null;
  if (every !== null && (typeof every !== 'number' || !Number.isInteger(every) || every < 1)) {
    throw new ConfigError(`${field}.every`, every, 'must be a whole number ≥ 1 (micro-batches per block of a stream: PipeDream-2BW’s m)');
  }
  if (every !== null && stage !== 0) throw new ConfigError(`${field}.every`, every, `a stream's all-reduce per block is a plain one: it takes zero = 0 (zero = ${stage})`);
  const times = r as WorkerTimes;
  return { latency, bandwidth, overlap, zero: stage, reshard, prefetch, readback: times.readback, update: times.update, write: times.write, every };
}

/** One chunk exchange of a ring over n workers moving `bytes` in all: α + (bytes / n) / β; 0 when n ≤ 1. */
export function ringExchangeTime(bytes: number, n: number, latency: number, bandwidth: number): number {
  if (n <= 1) return 0;
  const chunk = bytes / n;
  return latency + (chunk > 0 ? chunk / bandwidth : 0);
}

/** Ring all-reduce of `bytes` over n workers: 2(n − 1) · α + 2(n − 1)/n · bytes / β; 0 when n ≤ 1. */
export function ringAllReduceTime(bytes: number, n: number, latency: number, bandwidth: number): number {
  return n <= 1 ? 0 : 2 * (n - 1) * ringExchangeTime(bytes, n, latency, bandwidth);
}

/** The part of a ring all-reduce exchange k (0 … 2(n − 1) − 1) belongs to. */
export function exchangeKind(k: number, n: number): CollectiveKind {
  return k < n - 1 ? 'reduce-scatter' : 'all-gather';
}

export interface LinkWindows {
  start: Float64Array;
  end: Float64Array;
}

/**
 * When each stage's collective runs: stage s is ready at ready[s] and takes
 * duration[s] on the link of rank stageToRank[s]; a rank's link runs one at a
 * time, in the order its stages became ready (ties by stage index).
 */
export function linkWindows(stageToRank: readonly number[], ready: Float64Array, duration: Float64Array): LinkWindows {
  const stages = stageToRank.length;
  const start = new Float64Array(stages);
  const end = new Float64Array(stages);
  const order = Array.from({ length: stages }, (_, s) => s).sort((a, b) => ready[a] - ready[b] || a - b);
  const free = new Map<number, number>();
  for (const s of order) {
    const r = stageToRank[s];
    const t = Math.max(ready[s], free.get(r) ?? -Infinity);
    start[s] = t;
    end[s] = t + duration[s];
    free.set(r, end[s]);
  }
  return { start, end };
}
