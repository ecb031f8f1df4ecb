/**
 * The wait in expert parallelism's all-to-alls. Each member of an ep group logs its `ep-all-to-all` interval from the
 * moment its own rows were ready (its device's work before it read back) to the moment every other member's rows had
 * arrived (ep-collective.ts). No member can finish before the last one has posted its rows, so the part of a member's
 * interval before the last member's start is time spent waiting for the slowest member; the rest is the exchange
 * itself (posting, copying, placing). wait_i = clamp(max_j start_j − start_i, 0, end_i − start_i), on the workers' one
 * clock (comm/clock.ts epochMs).
 *
 * The members' intervals of one exchange are matched by order: for a (replica, stage), every member issues the same
 * collectives in the same order (ep-collective.ts numbers them so), so the i-th interval of each member's sorted list
 * is the same exchange; where the members' counts differ nothing is matched and no wait is given.
 */
import type { Interval, Timeline } from '../../schedule/timeline.ts';

/** One ep worker's all-to-all wait over a step: its (replica, pipeline rank, stage, ep rank), the ms and the exchanges. */
export interface EpWorkerWait {
  replica: number;
  rank: number;
  stage: number;
  epRank: number;
  /** Σ of its all-to-alls' waits, ms. */
  waitMs: number;
  /** Σ of its all-to-alls' whole intervals, ms. */
  allToAllMs: number;
  exchanges: number;
}

const isA2a = (iv: Interval) => iv.op === 'collective' && iv.coll === 'ep-all-to-all';

/** The intervals with `wait` set on each matched ep-all-to-all (new objects for those; the others as they were). */
export function withEpWaits(intervals: readonly Interval[]): Interval[] {
  const groups = new Map<string, Map<number, Interval[]>>();
  for (const iv of intervals) {
    if (!isA2a(iv)) continue;
    const key = `${iv.replica ?? 0}.${iv.stage}`;
    const g = groups.get(key) ?? groups.set(key, new Map()).get(key)!;
    const e = iv.epRank ?? 0;
    (g.get(e) ?? g.set(e, []).get(e)!).push(iv);
  }
  const wait = new Map<Interval, number>();
  for (const g of groups.values()) {
    const members = [...g.values()].map((l) => [...l].sort((a, b) => a.start - b.start || a.end - b.end));
    const n = members[0].length;
    if (members.length < 2 || members.some((l) => l.length !== n)) continue;
    for (let i = 0; i < n; i++) {
      const last = Math.max(...members.map((l) => l[i].start));
      for (const l of members) {
        const iv = l[i];
        wait.set(iv, Math.max(0, Math.min(last, iv.end) - iv.start));
      }
    }
  }
  return intervals.map((iv) => (wait.has(iv) ? { ...iv, wait: wait.get(iv) } : iv));
}

/** Per ep worker (replica, stage, ep rank), its all-to-alls' waits summed over the timeline (a step's); in that order. */
export function epWaitsOf(t: Pick<Timeline, 'intervals'>): EpWorkerWait[] {
  const out = new Map<string, EpWorkerWait>();
  for (const iv of t.intervals) {
    if (!isA2a(iv) || iv.wait === undefined) continue;
    const w = { replica: iv.replica ?? 0, rank: iv.rank, stage: iv.stage, epRank: iv.epRank ?? 0 };
    const key = `${w.replica}.${w.stage}.${w.epRank}`;
    const o = out.get(key) ?? out.set(key, { ...w, waitMs: 0, allToAllMs: 0, exchanges: 0 }).get(key)!;
    o.waitMs += iv.wait;
    o.allToAllMs += iv.end - iv.start;
    o.exchanges++;
  }
  return [...out.values()].sort((a, b) => a.replica - b.replica || a.stage - b.stage || a.epRank - b.epRank);
}
