/**
 * The ring collectives of data parallelism, as NCCL's ring runs them: n workers
 * in a ring, each sending only to its successor and receiving only from its
 * predecessor, a vector cut into n chunks (mesh.ts chunkBounds).
 *
 * - reduce-scatter, n − 1 exchanges: in exchange s, worker i sends chunk
 *   (i − s) mod n and adds the chunk (i − s − 1) mod n it receives into its own.
 *   Afterwards worker i holds the sum over all workers of chunk (i + 1) mod n
 *   (`ownedChunk`).
 * - all-gather, n − 1 exchanges: in exchange s, worker i sends chunk
 *   (i + 1 − s) mod n and overwrites chunk (i − s) mod n with what it receives.
 *   Afterwards every worker holds every owner's chunk, bit for bit the same.
 *
 * An all-reduce is both (2(n − 1) exchanges, each moving about 1/n of the
 * vector); ZeRO-1 puts its sharded optimizer step between them. The ring knows
 * nothing of workers or GPUs: it moves Float32Array / Float64Array chunks
 * through a RingLink (over MessagePorts in a run, in-memory in tests).
 */
import { chunkBounds } from '../../schedule/mesh.ts';
import type { CollectiveKind } from '../../schedule/timeline.ts';
import { epochMs } from './clock.ts';

export type Vector = Float32Array | Float64Array;

/** One worker's end of a ring, for one collective (one stage's, in one step). */
export interface RingLink {
  /** This worker's position in the ring (its replica). */
  readonly position: number;
  /** Workers in the ring (dp). */
  readonly size: number;
  /** Sends exchange `exchange`'s chunk to the successor; the buffer is transferred (do not use `chunk` after). */
  send(exchange: number, chunk: Vector): void;
  /** The predecessor's chunk of exchange `exchange`. */
  receive(exchange: number): Promise<Vector>;
  /** Called once per exchange with its interval and the bytes this worker sent in it. */
  onExchange?(kind: CollectiveKind, exchange: number, start: number, end: number, bytes: number): void;
  /** Called before each exchange (fault injection, status): `exchange` counts over the whole collective. */
  beforeExchange?(exchange: number): void;
}

const mod = (a: number, n: number) => ((a % n) + n) % n;

/** The chunk worker `position` owns after a reduce-scatter: (position + 1) mod size. */
export function ownedChunk(position: number, size: number): number {
  return mod(position + 1, size);
}

async function exchange(ring: RingLink, kind: CollectiveKind, index: number, x: Vector, bounds: number[], sendChunk: number, recvChunk: number): Promise<void> {
  ring.beforeExchange?.(index);
  const t0 = epochMs();
  const out = x.slice(bounds[sendChunk], bounds[sendChunk + 1]);
  const bytes = out.byteLength;
  ring.send(index, out);
  const got = await ring.receive(index);
  const lo = bounds[recvChunk];
  const len = bounds[recvChunk + 1] - lo;
  if (got.length !== len) throw new Error(`ring ${kind} exchange ${index}: got ${got.length} values for chunk ${recvChunk}, expected ${len}`);
  if (kind === 'reduce-scatter') for (let k = 0; k < len; k++) x[lo + k] += got[k];
  else x.set(got, lo);
  ring.onExchange?.(kind, index, t0, epochMs(), bytes);
}

/** Sums `x` over the ring, chunk-wise: afterwards chunk ownedChunk(position) of `x` holds the sum; returns that chunk's index. */
export async function reduceScatter(ring: RingLink, x: Vector): Promise<number> {
  const n = ring.size;
  const i = ring.position;
  const bounds = chunkBounds(x.length, n);
  for (let s = 0; s < n - 1; s++) await exchange(ring, 'reduce-scatter', s, x, bounds, mod(i - s, n), mod(i - s - 1, n));
  return ownedChunk(i, n);
}

/** Spreads every worker's owned chunk (ownedChunk) to all: afterwards `x` is the same on every worker. Exchanges are numbered after the reduce-scatter's. */
export async function allGather(ring: RingLink, x: Vector): Promise<void> {
  const n = ring.size;
  const i = ring.position;
  const bounds = chunkBounds(x.length, n);
  for (let s = 0; s < n - 1; s++) await exchange(ring, 'all-gather', n - 1 + s, x, bounds, mod(i + 1 - s, n), mod(i - s, n));
}

/** Sums `x` over the ring in place: reduce-scatter, then all-gather (2(n − 1) exchanges). */
export async function allReduce(ring: RingLink, x: Vector): Promise<void> {
  await reduceScatter(ring, x);
  await allGather(ring, x);
}

/** The same ring with exchange numbers moved by `base`: one of several collectives of a stage in a step, each with its own message keys. */
export function shiftedRing(ring: RingLink, base: number): RingLink {
  if (base === 0) return ring;
  return {
    position: ring.position,
    size: ring.size,
    send: (exchange, chunk) => ring.send(base + exchange, chunk),
    receive: (exchange) => ring.receive(base + exchange),
    onExchange: ring.onExchange && ((kind, exchange, start, end, bytes) => ring.onExchange?.(kind, base + exchange, start, end, bytes)),
    beforeExchange: ring.beforeExchange && ((exchange) => ring.beforeExchange?.(base + exchange)),
  };
}
