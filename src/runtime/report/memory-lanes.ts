/**
 * A run's memory lanes from its workers' counts (nn/memory-ledger.ts StepMemory, on the timeline's clock): the
 * series the Train view stacks under each worker's timeline lane, the peak it marks, and the same series as Chrome
 * trace counter tracks (schedule/chrome-trace.ts), so Perfetto draws them under the actions.
 */
import { byKind, liveTotal, MEMORY_KINDS, type MemoryKind, type StepMemory } from '../../nn/memory-ledger.ts';
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
}

export interface MemoryLane {
  worker: number;
  points: LanePoint[];
  /** The step's high-water mark: when, and how many live bytes. */
  peak: { t: number; bytes: number };
}

/** Each worker's lane: its samples grouped into the lane's series, and its peak. */
export function memoryLanes(memory: readonly StepMemory[]): MemoryLane[] {
  return memory.map((m, worker) => ({
    worker,
    points: [...m.samples, m.peak]
      .sort((a, b) => a.t - b.t)
      .map((s) => {
        const k = byKind(s.live);
        return { t: s.t, stack: LANE_SERIES.map((series) => series.kinds.reduce((n, kind) => n + k[kind], 0)), pooled: s.pooled };
      }),
    peak: { t: m.peak.t, bytes: liveTotal(m.peak) },
  }));
}

/** The workers' counts as trace counter tracks: live bytes by kind (stacked) and the pool's free bytes, per worker. */
export function memoryCounters(memory: readonly StepMemory[]): CounterTrack[] {
  return memory.flatMap((m, lane) => {
    const samples = [...m.samples].sort((a, b) => a.t - b.t);
    return [
      { lane, name: `memory of worker ${lane} (bytes)`, samples: samples.map((s) => ({ t: s.t, values: Object.fromEntries(MEMORY_KINDS.map((k, i) => [k, s.live[i] ?? 0])) })) },
      { lane, name: `pooled of worker ${lane} (bytes)`, samples: samples.map((s) => ({ t: s.t, values: { pooled: s.pooled } })) },
    ];
  });
}
