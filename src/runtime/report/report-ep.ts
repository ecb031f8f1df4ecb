/**
 * The expert-parallel figures of a run report, read off the measured timelines' `ep-all-to-all` intervals
 * (ep-collective.ts logs one on every member of an ep group for every gather and exchange, with the bytes it sent),
 * in the manner of report-tp.ts:
 *
 * - the k-th all-to-all of a stage in a step is the same round on every member of the group (same replica and
 *   pipeline rank); the member that waited least measures the round itself (own), the others also waited for
 *   their peers' compute;
 * - per stage, the all-to-alls one worker ran per micro-batch in F and in the backward (B or I), and the mean bytes
 *   it sent in one: what the simulator's EpCosts take (ep-cost.ts), the bytes of a whole send buffer (the part a
 *   worker keeps included: sent × n / (n − 1));
 * - the α–β line of one round, time = α + bytes sent / β, fitted to the own times (tpFit: α alone when the sizes
 *   are less than 2× apart);
 * - each compute interval's time less the own times of the all-to-alls inside it: what the simulator is fed, the
 *   all-to-alls then priced on top by the fit (report.ts);
 * - the all-to-alls' share of the step: allToAllShare, the same reading for a measured and a simulated timeline.
 */
import { isCompute, laneCount, laneOf, makespan, type Interval, type Timeline } from '../../schedule/timeline.ts';
import type { EpCosts } from '../../schedule/ep-cost.ts';
import type { RunPlan } from '../executor/index.ts';
import { tpFit } from './report-tp.ts';

export interface EpFigures {
  /** Workers per ep group. */
  n: number;
  /** Per stage: all-to-alls per micro-batch in F and in the backward, and the mean bytes one worker sent in one. */
  perStage: { F: number; back: number; bytes: number }[];
  /** Per worker and step (mean over workers and steps): all-to-alls, time in them (ms), and their own time (no waits). */
  perWorker: { count: number; ms: number; ownMs: number };
  /** Mean step (latest end − earliest start), ms. */
  stepMs: number;
  /** perWorker.ms / stepMs: the all-to-alls stop the worker's compute (a layer waits for its rows). */
  share: number;
  /** perWorker.ownMs / stepMs: the rounds themselves, without the waits for slower members (what the simulator prices). */
  ownShare: number;
  /** α (ms) and β (bytes sent per ms, Infinity when only α) of one round, fitted to the own times. */
  fit: { latencyMs: number; bytesPerMs: number; sizes: number; points: number };
  /**
   * The simulator's step with the run's compute and the all-to-alls priced by the fit, played after the compute as the
   * workers run them, and their share of it; overlappedStepMs: the same with each forward and backward pair costing
   * max(compute, all-to-alls), DualPipe's overlap (ep-cost.ts withAllToAll), which the tab's workers do not run (report.ts).
   */
  simulated?: { stepMs: number; share: number; overlappedStepMs: number };
}

const isA2a = (iv: Interval): boolean => iv.op === 'collective' && iv.coll === 'ep-all-to-all';

/**
 * The all-to-alls' share of a step: over the timeline's lanes, the mean time a worker spent in `ep-all-to-all`
 * intervals, over the step (latest end − earliest start). The same reading for measured and simulated timelines.
 */
export function allToAllShare(t: Timeline): { ms: number; stepMs: number; share: number } {
  let sum = 0;
  for (const iv of t.intervals) if (isA2a(iv)) sum += iv.end - iv.start;
  const ms = sum / Math.max(1, laneCount(t));
  const stepMs = makespan(t);
  return { ms, stepMs, share: stepMs > 0 ? ms / stepMs : 0 };
}

/** The figures over `timelines` (the measured steps) and each compute interval's time less its all-to-alls' own times; null without ep. */
export function epFigures(timelines: readonly Timeline[], plan: RunPlan): { figures: EpFigures; computeMs: Map<Interval, number> } | null {
  const n = plan.config.ep ?? 1;
  if (n <= 1 || !timelines.some((tl) => tl.intervals.some(isA2a))) return null;
  const stages = plan.schedule.stages;
  const computeMs = new Map<Interval, number>();
  const tally = Array.from({ length: stages }, () => ({ F: 0, back: 0, actionsF: 0, actionsBack: 0, bytes: 0, rounds: 0 }));
  const bySize = new Map<number, number[]>();
  const perWorker = { count: [] as number[], ms: [] as number[], ownMs: [] as number[] };
  const steps: number[] = [];
  for (const tl of timelines) {
    const lanes = new Map<number, { compute: Interval[]; a2a: Interval[] }>();
    for (const iv of tl.intervals) {
      const lane = laneOf(tl, iv);
      const l = lanes.get(lane) ?? { compute: [], a2a: [] };
      if (isCompute(iv)) l.compute.push(iv);
      else if (isA2a(iv)) l.a2a.push(iv);
      lanes.set(lane, l);
    }
    // The k-th all-to-all of a stage on each member of a group: key replica:rank:stage:k → durations.
    const matched = new Map<string, { ms: number[]; bytes: number }>();
    const keyOf = new Map<Interval, string>();
    let count = 0, ms = 0;
    for (const { a2a } of lanes.values()) {
      a2a.sort((a, b) => a.start - b.start);
      const seq = new Map<number, number>();
      for (const c of a2a) {
        const k = seq.get(c.stage) ?? 0;
        seq.set(c.stage, k + 1);
        const key = `${c.replica ?? 0}:${c.rank}:${c.stage}:${k}`;
        keyOf.set(c, key);
        const m = matched.get(key) ?? { ms: [], bytes: 0 };
        m.ms.push(c.end - c.start);
        m.bytes += c.bytes ?? 0;
        matched.set(key, m);
        count++;
        ms += c.end - c.start;
      }
    }
    const ownOf = (c: Interval) => Math.min(...(matched.get(keyOf.get(c) ?? '')?.ms ?? [0]));
    for (const { compute, a2a } of lanes.values()) {
      for (const a of compute) {
        const inside = a2a.filter((c) => c.stage === a.stage && c.start >= a.start && c.end <= a.end);
        computeMs.set(a, a.end - a.start - inside.reduce((s, c) => s + ownOf(c), 0));
        const t = tally[a.stage];
        if (a.op === 'F') (t.F += inside.length), t.actionsF++;
        else if (a.op === 'B' || a.op === 'I') (t.back += inside.length), t.actionsBack++;
        for (const c of inside) (t.bytes += c.bytes ?? 0), t.rounds++;
      }
    }
    let ownSum = 0;
    for (const m of matched.values()) {
      const least = Math.min(...m.ms);
      ownSum += least * m.ms.length;
      // One round's size: the mean bytes a member sent in it (routing makes the members' parts differ).
      const size = Math.round(m.bytes / m.ms.length);
      const s = bySize.get(size) ?? [];
      s.push(least);
      bySize.set(size, s);
    }
    perWorker.count.push(count / lanes.size);
    perWorker.ms.push(ms / lanes.size);
    perWorker.ownMs.push(ownSum / lanes.size);
    steps.push(makespan(tl));
  }
  const mean = (xs: number[]) => (xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  const points = [...bySize.entries()].sort((a, b) => a[0] - b[0]).map(([bytes, ms]) => ({ bytes, ms: mean(ms), n: ms.length }));
  const stepMs = mean(steps);
  return {
    figures: {
      n,
      perStage: tally.map((t) => ({ F: t.actionsF > 0 ? t.F / t.actionsF : 0, back: t.actionsBack > 0 ? t.back / t.actionsBack : 0, bytes: t.rounds > 0 ? t.bytes / t.rounds : 0 })),
      perWorker: { count: mean(perWorker.count), ms: mean(perWorker.ms), ownMs: mean(perWorker.ownMs) },
      stepMs,
      share: stepMs > 0 ? mean(perWorker.ms) / stepMs : 0,
      ownShare: stepMs > 0 ? mean(perWorker.ownMs) / stepMs : 0,
      fit: tpFit(points),
    },
    computeMs,
  };
}

/**
 * The simulator's ep input from the figures: each stage's all-to-alls per micro-batch (rounded to whole rounds) at
 * the mean size, the group inside one node on the fitted line; played after the compute, as the tab's workers run
 * them (one action at a time), or overlapped as DualPipe's pairs would hide them (`overlap`).
 */
export function epCostsOf(f: EpFigures, overlap = false): EpCosts {
  const buffer = (sent: number) => (sent * f.n) / (f.n - 1);
  const { latencyMs, bytesPerMs } = f.fit;
  return {
    n: f.n,
    local: f.n,
    link: { latencyIntra: latencyMs, bandwidthIntra: bytesPerMs, latencyInter: latencyMs, bandwidthInter: bytesPerMs },
    messages: f.perStage.map((s) => ({ F: new Array<number>(Math.round(s.F)).fill(buffer(s.bytes)), I: new Array<number>(Math.round(s.back)).fill(buffer(s.bytes)) })),
    overlap,
  };
}
