/**
 * A run's memory lanes from its workers' counts (nn/memory-ledger.ts StepMemory, on the timeline's clock): the
 * series the Train view stacks under each worker's timeline lane, the peak it marks, and the same series as Chrome
 * trace counter tracks (schedule/chrome-trace.ts), so Perfetto draws them under the actions.
 */
import { byKind, HOST_KINDS, liveTotal, MEMORY_KINDS, type MemoryKind, type MemorySample, type StepMemory } from '../../nn/memory-ledger.ts';
import type { CounterTrack } from '../../schedule/index.ts';

/** The lane's stacked series, bottom first: what a worker holds at rest below what comes and goes. */
export const LANE_SERIES: readonly { name: string; kinds: readonly MemoryKind[] }[] = [
  { name: 'parameters', kinds: ['weights', 'gathered'] },
  { name: 'gradients', kinds: ['grads'] },
  { name: 'optimizer state', kinds: ['optimizer'] },
  { name: 'activations', kinds: ['stash'] },
  { name: 'temporaries', kinds: ['temp'] },
  { name: 'communication staging', kinds: ['staging'] },
  { name: 'uniform ring', kinds: ['uniforms'] },
];

export interface LanePoint {
  /** ms on the timeline's clock. */
  t: number;
  /** Bytes per LANE_SERIES entry. */
  stack: number[];
  pooled: number;
  /** Bytes in the worker's host memory (swapped stashes, an offloaded optimizer), apart from the device's stack. */
  host: number;
}

export interface MemoryLane {
  worker: number;
  points: LanePoint[];
  /** The step's high-water mark: when, and how many live bytes. */
  peak: { t: number; bytes: number };
  /** The most bytes its host memory held at a sample (0: it keeps nothing there). */
  hostPeak: number;
}

/** Each worker's lane: its samples grouped into the lane's series, and its peak. */
export function memoryLanes(memory: readonly StepMemory[]): MemoryLane[] {
  return memory.map((m, worker) => {
    const points = [...m.samples, m.peak]
      .sort((a, b) => a.t - b.t)
      .map((s) => {
        const k = byKind(s.live);
        return { t: s.t, stack: LANE_SERIES.map((series) => series.kinds.reduce((n, kind) => n + k[kind], 0)), pooled: s.pooled, host: hostTotal(s) };
      });
    return { worker, points, peak: { t: m.peak.t, bytes: liveTotal(m.peak) }, hostPeak: Math.max(0, ...points.map((p) => p.host)) };
  });
}

/** A sample's host-memory bytes, all kinds. */
export function hostTotal(s: MemorySample): number {
  return (s.host ?? []).reduce((a, b) => a + b, 0);
}

/** The workers' counts as trace counter tracks: live bytes by kind (stacked) and the pool's free bytes, per worker. */
export function memoryCounters(memory: readonly StepMemory[]): CounterTrack[] {
  return memory.flatMap((m, lane) => {
    const samples = [...m.samples].sort((a, b) => a.t - b.t);
    return [
      { lane, name: `memory of worker ${lane} (bytes)`, samples: samples.map((s) => ({ t: s.t, values: Object.fromEntries(MEMORY_KINDS.map((k, i) => [k, s.live[i] ?? 0])) })) },
      { lane, name: `pooled of worker ${lane} (bytes)`, samples: samples.map((s) => ({ t: s.t, values: { pooled: s.pooled } })) },
      // Host memory, apart: swapped activations leaving and returning, an offloaded optimizer's state.
      ...(samples.some((s) => s.host)
        ? [{ lane, name: `host memory of worker ${lane} (bytes)`, samples: samples.map((s) => ({ t: s.t, values: Object.fromEntries(HOST_KINDS.map((k, i) => [k === 'stash' ? 'swapped activations' : 'offloaded optimizer', s.host?.[i] ?? 0])) })) }]
        : []),
    ];
  });
}
