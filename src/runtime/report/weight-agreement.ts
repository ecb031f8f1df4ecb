/**
 * Whether workers that must hold the same weights do, after a run: every replica against replica 0, and every copy of a
 * stage (DualPipe) against the first, each as the largest difference of any value (0: bit for bit).
 */
import { placeOf, workerOf, type Mesh } from '../../schedule/mesh.ts';
import type { Weights } from '../executor/index.ts';

/**
 * The largest difference between two workers' values of the same weight among the workers of one tp rank (each tp
 * rank holds its own pieces under the weights' names): DualPipe's copies of a stage, and its replicas with dp.
 */
export function copyDifference(m: Mesh, byWorker: Weights[]): number {
  let worst = 0;
  const first = new Map<string, ArrayLike<number>>();
  byWorker.forEach((ws, w) => {
    const { tpRank } = placeOf(m, w);
    for (const [name, v] of Object.entries(ws)) {
      const key = `${tpRank}/${name}`;
      const r = first.get(key);
      if (!r) first.set(key, v);
      else if (r.length !== v.length) worst = Infinity;
      else for (let i = 0; i < v.length; i++) worst = Math.max(worst, Math.abs(v[i] - r[i]));
    }
  });
  return worst;
}

/** The largest difference between a weight of any replica and the same weight of replica 0 (`byWorker`: each worker's weights, in worker order). */
export function replicaDifference(m: Mesh, byWorker: Weights[]): number {
  let worst = 0;
  byWorker.forEach((ws, w) => {
    const { replica, rank, tpRank } = placeOf(m, w);
    if (replica === 0) return;
    const ref = byWorker[workerOf(m, 0, rank, tpRank)];
    for (const [name, v] of Object.entries(ws)) {
      const r = ref[name];
      if (!r || r.length !== v.length) return void (worst = Infinity);
      for (let i = 0; i < v.length; i++) worst = Math.max(worst, Math.abs(v[i] - r[i]));
    }
  });
  return worst;
}
