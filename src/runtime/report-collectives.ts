/**
 * The data-parallel figures of a run report, from the measured timelines: per
 * stage, how long its collective took (from the first part's start to the last
 * part's end over every worker of its group) and the bytes of gradients it
 * summed; the step time with the collectives; the part of it the collectives
 * added after the last compute ended (exposed, not overlapped).
 */
import { isCompute, makespan } from '../schedule/timeline.ts';
import type { Interval, Timeline } from '../schedule/timeline.ts';

export interface AllReduceFigures {
  /**
   * Per stage: mean time of its collective, ms (reading the gradients back, the ring, writing the sum back; from
   * the first worker's start to the last one's end), the bytes of the vector it reduced (its gradients), and the
   * ring's own part, ms: on each worker from its first chunk exchange's start to its last one's end, the least
   * over the group's workers (the one that waited least for its peers); ownMs the same for the whole collective
   * (readback to write-back) on one worker: what it costs without the replicas' skew.
   */
  perStage: { ms: number; bytes: number; ringMs: number; ownMs: number }[];
  /** Mean step time with the collectives (latest end − earliest start over every interval), ms. */
  stepMs: number;
  /** Mean time from the last compute's end to the step's end: the collectives' share not hidden behind compute, ms. */
  exposedMs: number;
  /** exposedMs / stepMs. */
  share: number;
  /** Bytes one worker sent over its ring in a step (every reduce-scatter and all-gather exchange), the most over the workers, mean over the steps. */
  ringBytesPerWorker: number;
  /** The same by the formula (held-bytes.ts ringBytesFormula, float32), set by the report. */
  ringBytesFormula?: number;
  /** The simulator's step with the run's own op times and the α–β ring fitted to these collectives, and its exposed share (report.ts). */
  simulated?: { stepMs: number; share: number; perStageMs: number[] };
}

/** The flush's data-parallel collectives (tp's, between a stage's layers, are report-tp.ts's). */
function isDpCollective(iv: Interval): boolean {
  return iv.op === 'collective' && iv.coll !== 'tp-all-reduce' && iv.coll !== 'tp-all-gather';
}

function mean(xs: number[]): number {
  return xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

/** The figures over `timelines` (the measured steps), or null when they hold no collective. */
export function allReduceFigures(timelines: readonly Timeline[], stages: number): AllReduceFigures | null {
  if (!timelines.some((t) => t.intervals.some(isDpCollective))) return null;
  const perStage = Array.from({ length: stages }, () => ({ ms: [] as number[], ring: [] as number[], own: [] as number[], bytes: 0 }));
  const steps: number[] = [];
  const exposed: number[] = [];
  const sent: number[] = [];
  for (const t of timelines) {
    const byWorker = new Map<string, number>();
    const span = new Map<number, [number, number]>();
    // stage → worker (replica) → the span of its chunk exchanges
    const ring = new Map<number, Map<number, [number, number]>>();
    const own = new Map<number, Map<number, [number, number]>>();
    const widen = (m: Map<number, Map<number, [number, number]>>, stage: number, replica: number, a: number, b: number) => {
      const byWorker = m.get(stage) ?? new Map<number, [number, number]>();
      const w = byWorker.get(replica) ?? [Infinity, -Infinity];
      byWorker.set(replica, [Math.min(w[0], a), Math.max(w[1], b)]);
      m.set(stage, byWorker);
    };
    let lastCompute = -Infinity;
    for (const iv of t.intervals) {
      if (isCompute(iv)) lastCompute = Math.max(lastCompute, iv.end);
      if (!isDpCollective(iv)) continue;
      const s = span.get(iv.stage) ?? [Infinity, -Infinity];
      span.set(iv.stage, [Math.min(s[0], iv.start), Math.max(s[1], iv.end)]);
      if (iv.coll === 'gather-grads' && iv.bytes !== undefined) perStage[iv.stage].bytes = iv.bytes;
      widen(own, iv.stage, iv.replica ?? 0, iv.start, iv.end);
      if (iv.coll === 'reduce-scatter' || iv.coll === 'all-gather') {
        widen(ring, iv.stage, iv.replica ?? 0, iv.start, iv.end);
        const w = `${iv.replica ?? 0}:${iv.rank}`;
        byWorker.set(w, (byWorker.get(w) ?? 0) + (iv.bytes ?? 0));
      }
    }
    for (const [s, [a, b]] of span) perStage[s]?.ms.push(b - a);
    const least = (byWorker: Map<number, [number, number]>) => Math.min(...[...byWorker.values()].map(([a, b]) => b - a));
    for (const [s, byWorker] of ring) perStage[s]?.ring.push(least(byWorker));
    for (const [s, byWorker] of own) perStage[s]?.own.push(least(byWorker));
    const lo = Math.min(...t.intervals.map((iv) => iv.start));
    const hi = Math.max(...t.intervals.map((iv) => iv.end));
    sent.push(Math.max(0, ...byWorker.values()));
    steps.push(makespan(t));
    exposed.push(Math.max(0, hi - Math.max(lo, lastCompute)));
  }
  const stepMs = mean(steps);
  const exposedMs = mean(exposed);
  return { perStage: perStage.map((p) => ({ ms: mean(p.ms), bytes: p.bytes, ringMs: mean(p.ring), ownMs: mean(p.own) })), stepMs, exposedMs, share: stepMs > 0 ? exposedMs / stepMs : 0, ringBytesPerWorker: mean(sent) };
}
