/**
 * The data-parallel figures of a run report, from the measured timelines: per
 * stage, how long its collective took (from the first part's start to the last
 * part's end over every worker of its group) and the bytes of gradients it
 * summed; the step time with the collectives; the part of it the collectives
 * added after the last compute ended (exposed, not overlapped).
 */
import { isCompute, makespan } from '../schedule/timeline.ts';
import type { Timeline } from '../schedule/types.ts';

export interface AllReduceFigures {
  /** Per stage: mean time of its collective, ms, and the bytes of the vector it reduced (its gradients). */
  perStage: { ms: number; bytes: number }[];
  /** Mean step time with the collectives (latest end − earliest start over every interval), ms. */
  stepMs: number;
  /** Mean time from the last compute's end to the step's end: the collectives' share not hidden behind compute, ms. */
  exposedMs: number;
  /** exposedMs / stepMs. */
  share: number;
}

function mean(xs: number[]): number {
  return xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

/** The figures over `timelines` (the measured steps), or null when they hold no collective. */
export function allReduceFigures(timelines: readonly Timeline[], stages: number): AllReduceFigures | null {
  if (!timelines.some((t) => t.intervals.some((iv) => iv.op === 'collective'))) return null;
  const perStage = Array.from({ length: stages }, () => ({ ms: [] as number[], bytes: 0 }));
  const steps: number[] = [];
  const exposed: number[] = [];
  for (const t of timelines) {
    const span = new Map<number, [number, number]>();
    let lastCompute = -Infinity;
    for (const iv of t.intervals) {
      if (isCompute(iv)) lastCompute = Math.max(lastCompute, iv.end);
      if (iv.op !== 'collective') continue;
      const s = span.get(iv.stage) ?? [Infinity, -Infinity];
      span.set(iv.stage, [Math.min(s[0], iv.start), Math.max(s[1], iv.end)]);
      if (iv.coll === 'gather-grads' && iv.bytes !== undefined) perStage[iv.stage].bytes = iv.bytes;
    }
    for (const [s, [a, b]] of span) perStage[s]?.ms.push(b - a);
    const lo = Math.min(...t.intervals.map((iv) => iv.start));
    const hi = Math.max(...t.intervals.map((iv) => iv.end));
    steps.push(makespan(t));
    exposed.push(Math.max(0, hi - Math.max(lo, lastCompute)));
  }
  const stepMs = mean(steps);
  const exposedMs = mean(exposed);
  return { perStage: perStage.map((p) => ({ ms: mean(p.ms), bytes: p.bytes })), stepMs, exposedMs, share: stepMs > 0 ? exposedMs / stepMs : 0 };
}
