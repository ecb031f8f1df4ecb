/**
 * DualPipe's sum over its model copies in a run report (runtime/policies/copy-sum.ts
 * measures it, schedule/simulate-copies.ts plays it): per model stage, the
 * ranks of its copies' ring, the bytes a member sent, the ring's time from
 * the moment its last member starts to the moment its last member is done
 * (each measured interval spans the read-back, the ring and the write-back; a
 * member that started earlier also waits for the others, and the next ring
 * of a pair starts when both are free) and the members' wait for the last
 * one; and the step with it beside the step without it, measured and
 * simulated. The simulator is given each model stage's own time and plays
 * when each pair is free: the step's end is the check, not the stage's time.
 * With ZeRO the sum runs before each chunk's update and all-gather, so the
 * step without it is not measurable (addedMs is then ~0; the page omits it).
 */
import { copiesOf, modelStage, stagesPerCopy } from '../../schedule/copies.ts';
import { makespan, type Timeline } from '../../schedule/timeline.ts';
import type { Schedule } from '../../schedule/types.ts';
import type { CopySumPlay } from '../../schedule/simulate-copies.ts';

export interface CopySumFigures {
  copies: number;
  /** Per model stage: the schedule stages and ranks holding its copies, bytes one member sent, the ring's mean time from its last member's start to its last member's end, the members' mean wait for the last to start, ms. */
  perModelStage: { stages: number[]; ranks: number[]; bytes: number; ownMs: number; waitMs: number }[];
  /** Mean step with the sum (every interval), ms. */
  stepMs: number;
  /** Mean of what the sum adds to the step (the step less the step without it), ms. */
  addedMs: number;
  /**
   * With ZeRO the sum runs between each chunk's reduce-scatter and its update (and all-gather): inside the replicas'
   * step, which then holds it, measured and simulated; addedMs cannot be measured (the page leaves it out).
   */
  insideReplicas: boolean;
  /** The simulator's, with each model stage's `ownMs` (report.ts). */
  simulated?: { stepMs: number; addedMs: number };
}

function mean(xs: readonly number[]): number {
  return xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

/** The figures over `timelines` (the measured steps), or null for a schedule with one copy or a run that summed none; `zero`: the run's ZeRO stage. */
export function copySumFigures(timelines: readonly Timeline[], schedule: Pick<Schedule, 'stages' | 'ranks' | 'microbatches' | 'copies' | 'stageToRank'>, zero = 0): CopySumFigures | null {
  const copies = copiesOf(schedule);
  if (copies === 1 || !timelines.some((t) => t.intervals.some((iv) => iv.coll === 'copy-sum'))) return null;
  const k = stagesPerCopy(schedule);
  const own = Array.from({ length: k }, () => [] as number[]);
  const wait = Array.from({ length: k }, () => [] as number[]);
  const bytes = new Array<number>(k).fill(0);
  const steps: number[] = [];
  const added: number[] = [];
  for (const t of timelines) {
    // One ring per model stage, replica and tp rank: its members' intervals.
    const rings = new Map<string, [number, number][]>();
    for (const iv of t.intervals) {
      if (iv.coll !== 'copy-sum') continue;
      const j = modelStage(schedule, iv.stage);
      const key = `${j}:${iv.replica ?? 0}:${iv.tpRank ?? 0}`;
      const list = rings.get(key) ?? [];
      list.push([iv.start, iv.end]);
      rings.set(key, list);
      if (iv.bytes !== undefined) bytes[j] = iv.bytes;
    }
    for (const [key, members] of rings) {
      const j = Number(key.split(':')[0]);
      const lastStart = Math.max(...members.map(([start]) => start));
      own[j].push(Math.max(...members.map(([, end]) => end)) - lastStart);
      wait[j].push(mean(members.map(([start]) => lastStart - start)));
    }
    const step = makespan(t);
    steps.push(step);
    added.push(step - makespan({ ...t, intervals: t.intervals.filter((iv) => iv.coll !== 'copy-sum') }));
  }
  return {
    copies,
    perModelStage: Array.from({ length: k }, (_, j) => {
      const stages = Array.from({ length: copies }, (_, c) => c * k + j);
      return { stages, ranks: stages.map((s) => schedule.stageToRank[s]), bytes: bytes[j], ownMs: mean(own[j]), waitMs: mean(wait[j]) };
    }),
    stepMs: mean(steps),
    addedMs: mean(added),
    insideReplicas: zero >= 1,
  };
}

/** The simulator's `copySum`: each schedule stage its model stage's measured own time. */
export function copySumCosts(c: CopySumFigures, stages: number): number[] {
  const k = c.perModelStage.length;
  return Array.from({ length: stages }, (_, s) => c.perModelStage[s % k].ownMs);
}

/** The simulated step with the sum and what it adds, for the report. */
export function simulatedCopySum(play: CopySumPlay | undefined, makespanWithIt: number): CopySumFigures['simulated'] | undefined {
  return play ? { stepMs: makespanWithIt, addedMs: makespanWithIt - play.before } : undefined;
}
