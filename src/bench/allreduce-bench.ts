/**
 * The all-reduce micro-benchmark (in the bench page): dp dedicated workers in a
 * ring, wired with MessageChannels as the coordinator wires a mesh's replicas,
 * run the runtime's ring all-reduce on float32 vectors of 4 KiB … 4 MiB; a
 * repetition's time is the slowest worker's. The α–β model of the ring is then
 * fitted to these times (allreduce-fit.ts).
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

function ask(w: Worker, msg: RingBenchMessage, transfer: Transferable[] = []): Promise<RingBenchReply> {
  return new Promise((resolve, reject) => {
    w.onmessage = (e: MessageEvent<RingBenchReply>) => (e.data.type === 'error' ? reject(new Error(e.data.message)) : resolve(e.data));
    w.onerror = (e) => reject(new Error(e.message || 'the ring worker crashed'));
    w.postMessage(msg, transfer);
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function benchAllReduce(dp: number, byteSizes: readonly number[], repeats: number): Promise<AllReduceBenchRow[]> {
  const workers = Array.from({ length: dp }, () => new Worker(new URL('./ring-bench-worker.ts', import.meta.url), { type: 'module', name: 'pipelab-ring-bench' }));
  try {
    // One channel per ring link: worker i's port to i + 1, and i + 1's port from i.
    const toNext: MessagePort[] = [];
    const fromPrev: MessagePort[] = new Array<MessagePort>(dp);
    for (let i = 0; i < dp; i++) {
      const ch = new MessageChannel();
      toNext.push(ch.port1);
      fromPrev[(i + 1) % dp] = ch.port2;
    }
    await Promise.all(workers.map((w, i) => ask(w, { type: 'init', position: i, size: dp, toNext: toNext[i], fromPrev: fromPrev[i] }, [toNext[i], fromPrev[i]])));
    const rows: AllReduceBenchRow[] = [];
    for (const [round, bytes] of byteSizes.entries()) {
      const elements = Math.max(1, Math.round(bytes / 4));
      // One untimed round first (the ports and the allocator warm up), then the timed one.
      for (const timed of [false, true]) {
        const n = timed ? repeats : 2;
        const replies = await Promise.all(workers.map((w) => ask(w, { type: 'run', elements, repeats: n, round: 2 * round + (timed ? 1 : 0) })));
        if (!timed) continue;
        const times = replies.map((r) => (r.type === 'times' ? r : null));
        if (times.some((t) => !t || !t.correct)) throw new Error(`the benchmark all-reduce of ${bytes} bytes over ${dp} workers gave a wrong sum`);
        const slowest = Array.from({ length: n }, (_, k) => Math.max(...times.map((t) => (t as { ms: number[] }).ms[k])));
        const med = median(slowest);
        rows.push({ dp, bytes: elements * 4, medianMs: med, busMBps: med > 0 ? ((2 * (dp - 1)) / dp) * elements * 4 / med / 1000 : 0, repeats: n });
      }
    }
    return rows;
  } finally {
    for (const w of workers) w.terminate();
  }
}
