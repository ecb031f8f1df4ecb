/** Which workers of a run need a MessageChannel between them (the coordinator wires one per pair). */
import { epGroup, meshOfRun, ringNext, tpGroup, workerCount, workerOf } from '../schedule/mesh.ts';
import type { RunPlan } from './executor/index.ts';

/**
 * The pairs of workers that need a channel: pipeline neighbours within each replica (and ep and tp rank), ring
 * neighbours across replicas, the members of each tp and ep group, and the ranks holding neighbouring copies of a
 * stage (model copies, DualPipe: copy-sum.ts).
 */
export function channelsFor(plan: RunPlan): [number, number][] {
  const m = meshOfRun(plan.config);
  const pairs = new Set<string>();
  const add = (a: number, b: number) => {
    if (a !== b) pairs.add(a < b ? `${a},${b}` : `${b},${a}`);
  };
  const { stageToRank } = plan.schedule;
  for (let d = 0; d < m.dp; d++) {
    for (let e = 0; e < (m.ep ?? 1); e++) {
      for (let j = 0; j < m.tp; j++) {
        for (let s = 0; s + 1 < stageToRank.length; s++) add(workerOf(m, d, stageToRank[s], j, e), workerOf(m, d, stageToRank[s + 1], j, e));
        const k = stageToRank.length / (plan.schedule.copies ?? 1);
        for (let s = k; s < stageToRank.length; s++) add(workerOf(m, d, stageToRank[s - k], j, e), workerOf(m, d, stageToRank[s], j, e));
      }
    }
  }
  for (let w = 0; w < workerCount(m); w++) {
    add(w, ringNext(m, w));
    // A stage's tp group: every member to every other (tp-collective.ts exchanges directly).
    for (const v of tpGroup(m, w)) add(w, v);
    // A stage's ep group likewise (ep-collective.ts).
    for (const v of epGroup(m, w)) add(w, v);
  }
  return [...pairs].map((p) => p.split(',').map(Number) as [number, number]);
}
