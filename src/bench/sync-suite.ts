/**
 * What waiting for the GPU costs in this browser, and whether nudging the wait (src/gpu/wait-nudge.ts) shortens it.
 *
 * For each nudge interval (0: none) a fresh GpuBackend runs each piece of work (one small kernel; one, then four,
 * matmuls of growing size), then waits for it the two ways the runtime does: `sync` (queue.onSubmittedWorkDone,
 * before a tp collective's exchange, a step's end) and `read` (a small tensor copied back and mapped: a loss, an
 * activation). A figure is the median, over the repeats, of the time from issuing the work to the wait's end,
 * beside the work's own GPU time (timestamp queries where the adapter has them, timed alone). Then the same with a
 * second, idle device in the page for the intervals 0 and the default: the app's workers each hold one.
 */
import { GpuBackend } from '../gpu/gpu-backend.ts';
import type { Tensor } from '../nn/backend.ts';
import { DEFAULT_NUDGE_MS } from '../gpu/wait-nudge.ts';
import { median } from './matmul-bench.ts';

export interface SyncBenchRow {
  work: string;
  /** The work's GPU time alone, ms (median of 3; `workSource` says how it was timed). */
  workMs: number;
  workSource: 'timestamp' | 'wall';
  wait: 'sync' | 'read';
  /** Milliseconds between nudges; 0: not nudged. */
  nudgeMs: number;
  /** WebGPU devices open in the page while it was measured. */
  devices: number;
  /** Median ms from issuing the work to the wait's end. */
  medianMs: number;
  /** The 90th percentile of the same. */
  p90Ms: number;
  /** Nudges (empty submits) sent per wait, mean. */
  nudgesPerWait: number;
}

export interface SyncBenchOptions {
  repeats?: number;
  /** Nudge intervals to measure (ms; 0 is none). */
  intervals?: number[];
  /** The GPU object (default navigator.gpu; Node's tests pass Dawn's). */
  gpu?: GPU;
}

const p90 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.9))];

interface Work {
  name: string;
  issue(): void;
}

function works(be: GpuBackend, keep: Tensor[]): Work[] {
  const tiny = be.zeros([64]);
  keep.push(tiny);
  // Sizes whose matmuls take ~0.1 to a few ms on a GPU; much smaller on a software adapter.
  const [s1, s2] = be.isSoftware ? [128, 256] : [1024, 2048];
  const mat = (n: number) => {
    const t = be.tensor(Float32Array.from({ length: n * n }, (_, i) => ((i * 7919) % 257) / 257 - 0.5), [n, n]);
    keep.push(t);
    return t;
  };
  const [a1, a2] = [mat(s1), mat(s2)];
  const mm = (a: Tensor, times: number) => () => {
    for (let i = 0; i < times; i++) be.dispose(be.matmul(a, a));
  };
  return [
    { name: 'one small kernel (fill 64)', issue: () => be.fill(tiny, 1) },
    { name: `matmul ${s1}³`, issue: mm(a1, 1) },
    { name: `matmul ${s2}³`, issue: mm(a2, 1) },
    { name: `4 × matmul ${s2}³`, issue: mm(a2, 4) },
  ];
}

async function measure(nudgeMs: number, devices: number, repeats: number, gpu?: GPU): Promise<SyncBenchRow[]> {
  const be = await GpuBackend.create({ gpu, nudgeWaitsMs: nudgeMs });
  const others: GpuBackend[] = [];
  for (let i = 1; i < devices; i++) others.push(await GpuBackend.create({ gpu, nudgeWaitsMs: 0 }));
  const keep: Tensor[] = [];
  try {
    const probe = be.zeros([64]);
    keep.push(probe);
    const rows: SyncBenchRow[] = [];
    for (const w of works(be, keep)) {
      const alone: number[] = [];
      let workSource: SyncBenchRow['workSource'] = 'wall';
      for (let i = 0; i < 3; i++) {
        await be.sync();
        const r = await be.time(() => w.issue());
        alone.push(r.ms);
        workSource = r.source;
      }
      for (const wait of ['sync', 'read'] as const) {
        const ms: number[] = [];
        const n0 = be.stats().nudges;
        for (let r = -2; r < repeats; r++) {
          await be.sync();
          const t0 = performance.now();
          w.issue();
          if (wait === 'sync') await be.sync();
          else await be.read(probe);
          if (r >= 0) ms.push(performance.now() - t0);
        }
        rows.push({
          work: w.name,
          workMs: median(alone),
          workSource,
          wait,
          nudgeMs,
          devices,
          medianMs: median(ms),
          p90Ms: p90(ms),
          nudgesPerWait: (be.stats().nudges - n0) / (repeats + 2),
        });
      }
    }
    return rows;
  } finally {
    for (const t of keep) be.dispose(t);
    be.destroy();
    for (const o of others) o.destroy();
  }
}

export async function benchSync(o: SyncBenchOptions = {}): Promise<SyncBenchRow[]> {
  const repeats = o.repeats ?? 11;
  const intervals = o.intervals ?? [0, 0.05, DEFAULT_NUDGE_MS, 1];
  const rows: SyncBenchRow[] = [];
  for (const ms of intervals) rows.push(...(await measure(ms, 1, repeats, o.gpu)));
  for (const ms of [0, DEFAULT_NUDGE_MS]) rows.push(...(await measure(ms, 2, repeats, o.gpu)));
  return rows;
}
