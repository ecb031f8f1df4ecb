/**
 * The collective micro-benchmarks (in the bench page), on one piece of
 * plumbing: n dedicated workers (ring-bench-worker.ts) wired with
 * MessageChannels, each round a vector size run `repeats` times after an
 * untimed round, a repetition's time the slowest worker's, the median kept.
 *
 * - benchAllReduce: dp workers in a ring, wired as the coordinator wires a
 *   mesh's replicas, run the runtime's ring all-reduce on float32 vectors of
 *   4 KiB … 4 MiB; the α–β ring model is then fitted to these times.
 * - benchTpAllReduce: t workers, a channel between every pair as the
 *   coordinator wires a tp group, run the runtime's tp all-reduce (one round of
 *   direct exchange) at the sizes a block sends, small tensors several
 *   back to back per repetition; the α–β model of the direct exchange is then
 *   fitted (tp-suite.ts).
 */
import type { RingBenchMessage, RingBenchReply } from './ring-bench-worker.ts';

export interface AllReduceBenchRow {
  dp: number;
  bytes: number;
  /** Median over the repetitions of the slowest worker's time, ms. */
  medianMs: number;
  /** Bytes each worker sent per ms of that median (2(n − 1)/n · bytes / time), in MB/s. */
  busMBps: number;
  repeats: number;
}

export interface TpAllReduceBenchRow {
  /** Workers of the tp group. */
  t: number;
  /** The tensor each member holds (and sends to each other member), bytes. */
  bytes: number;
  /** Median over the repetitions of the slowest member's time, ms. */
  medianMs: number;
  /** Bytes each member sent ((t − 1) · bytes) per second of that median, MB/s. */
  sendMBps: number;
  repeats: number;
  /** Collectives back to back per repetition (its time their mean). */
  inner: number;
}

function ask(w: Worker, msg: RingBenchMessage, transfer: Transferable[] = []): Promise<RingBenchReply> {
  return new Promise((resolve, reject) => {
    w.onmessage = (e: MessageEvent<RingBenchReply>) => (e.data.type === 'error' ? reject(new Error(e.data.message)) : resolve(e.data));
    w.onerror = (e) => reject(new Error(e.message || 'the benchmark worker crashed'));
    w.postMessage(msg, transfer);
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** What each of n workers is told at start: its message and the ports it takes. */
type Wiring = { msg: RingBenchMessage; transfer: Transferable[] }[];

/**
 * Starts n workers wired by `wiring`, times each size (the slowest worker per repetition, median over them; a repetition
 * `inner(bytes)` collectives back to back, its time their mean); `what` names a wrong sum.
 */
async function timeCollective(n: number, wiring: Wiring, byteSizes: readonly number[], repeats: number, what: string, inner: (bytes: number) => number = () => 1): Promise<{ bytes: number; medianMs: number; repeats: number; inner: number }[]> {
  const workers = Array.from({ length: n }, () => new Worker(new URL('./ring-bench-worker.ts', import.meta.url), { type: 'module', name: 'pipelab-collective-bench' }));
  try {
    await Promise.all(workers.map((w, i) => ask(w, wiring[i].msg, wiring[i].transfer)));
    const rows: { bytes: number; medianMs: number; repeats: number; inner: number }[] = [];
    for (const [round, bytes] of byteSizes.entries()) {
      const elements = Math.max(1, Math.round(bytes / 4));
      const k0 = inner(elements * 4);
      // One untimed round first (the ports and the allocator warm up), then the timed one.
      for (const timed of [false, true]) {
        const k = timed ? repeats : 2;
        const replies = await Promise.all(workers.map((w) => ask(w, { type: 'run', elements, repeats: k, round: 2 * round + (timed ? 1 : 0), inner: k0 })));
        if (!timed) continue;
        const times = replies.map((r) => (r.type === 'times' ? r : null));
        if (times.some((t) => !t || !t.correct)) throw new Error(`the benchmark ${what} of ${elements * 4} bytes over ${n} workers gave a wrong sum`);
        const slowest = Array.from({ length: k }, (_, i) => Math.max(...times.map((t) => (t as { ms: number[] }).ms[i])));
        rows.push({ bytes: elements * 4, medianMs: median(slowest), repeats: k, inner: k0 });
      }
    }
    return rows;
  } finally {
    for (const w of workers) w.terminate();
  }
}

export async function benchAllReduce(dp: number, byteSizes: readonly number[], repeats: number): Promise<AllReduceBenchRow[]> {
  // One channel per ring link: worker i's port to i + 1, and i + 1's port from i.
  const toNext: MessagePort[] = [];
  const fromPrev: MessagePort[] = new Array<MessagePort>(dp);
  for (let i = 0; i < dp; i++) {
    const ch = new MessageChannel();
    toNext.push(ch.port1);
    fromPrev[(i + 1) % dp] = ch.port2;
  }
  const wiring: Wiring = Array.from({ length: dp }, (_, i) => ({ msg: { type: 'init', mode: 'ring', position: i, size: dp, toNext: toNext[i], fromPrev: fromPrev[i] }, transfer: [toNext[i], fromPrev[i]] }));
  const rows = await timeCollective(dp, wiring, byteSizes, repeats, 'all-reduce');
  return rows.map(({ inner: _, ...r }) => ({ dp, ...r, busMBps: r.medianMs > 0 ? (((2 * (dp - 1)) / dp) * r.bytes) / r.medianMs / 1000 : 0 }));
}

export async function benchTpAllReduce(t: number, byteSizes: readonly number[], repeats: number): Promise<TpAllReduceBenchRow[]> {
  // One channel per pair of members, as the coordinator wires a tp group.
  const ports: { member: number; port: MessagePort }[][] = Array.from({ length: t }, () => []);
  for (let i = 0; i < t; i++) {
    for (let j = i + 1; j < t; j++) {
      const ch = new MessageChannel();
      ports[i].push({ member: j, port: ch.port1 });
      ports[j].push({ member: i, port: ch.port2 });
    }
  }
  const wiring: Wiring = ports.map((p, i) => ({ msg: { type: 'init', mode: 'tp', position: i, size: t, ports: p }, transfer: p.map((x) => x.port) }));
  // Small tensors: up to 64 collectives back to back per repetition (about 256 KiB sent in all), as a stage's layers issue them.
  const rows = await timeCollective(t, wiring, byteSizes, repeats, 'tp all-reduce', (bytes) => Math.min(64, Math.max(1, Math.ceil((256 << 10) / bytes))));
  return rows.map((r) => ({ t, ...r, sendMBps: r.medianMs > 0 ? ((t - 1) * r.bytes) / r.medianMs / 1000 : 0 }));
}
