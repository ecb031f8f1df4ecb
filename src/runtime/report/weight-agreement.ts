/**
 * Whether workers that must hold the same weights do, after a run: every replica against replica 0, every copy of a
 * stage (DualPipe) against the first, and every tp worker's parameters that tp does not split against tp rank 0's,
 * each as the largest difference of any value (0: bit for bit).
 */
import { placeOf, workerOf, type Mesh } from '../../schedule/mesh.ts';
import { parseTpPieceName } from '../../nn/tp-shard.ts';
import type { Weights } from '../executor/index.ts';
import { parsePieceName } from '../policies/index.ts';

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
    const { replica, rank, tpRank, epRank } = placeOf(m, w);
    if (replica === 0) return;
    const ref = byWorker[workerOf(m, 0, rank, tpRank, epRank)];
    for (const [name, v] of Object.entries(ws)) {
      const r = ref[name];
      if (!r || r.length !== v.length) return void (worst = Infinity);
      for (let i = 0; i < v.length; i++) worst = Math.max(worst, Math.abs(v[i] - r[i]));
    }
  });
  return worst;
}

/** Whether a worker's weight key (a parameter, or its ZeRO piece `name[lo:hi]`) is a tp piece `name@tpJ/T`. */
function isTpPiece(key: string): boolean {
  return parseTpPieceName(parsePieceName(key)?.name ?? key) !== null;
}

/**
 * The largest difference between a tp worker's value of a parameter tp does not split (embeddings, LayerNorms, the
 * biases of row-split layers, the head: every worker of a stage's tp group holds it whole, or with ZeRO-3 the same
 * piece of it) and tp rank 0's of the same replica and pipeline rank; Infinity where one holds such a key the other
 * lacks. The run's weights take these from tp rank 0 alone (gather-state.ts), so this is where drift would show.
 */
export function tpDifference(m: Mesh, byWorker: Weights[]): number {
  let worst = 0;
  byWorker.forEach((ws, w) => {
    const { replica, rank, tpRank } = placeOf(m, w);
    if (tpRank === 0) return;
    const ref = byWorker[workerOf(m, replica, rank, 0)];
    const own = Object.keys(ws).filter((k) => !isTpPiece(k));
    const theirs = Object.keys(ref).filter((k) => !isTpPiece(k));
    if (own.length !== theirs.length) return void (worst = Infinity);
    for (const name of own) {
      const v = ws[name], r = ref[name];
      if (!r || r.length !== v.length) return void (worst = Infinity);
      for (let i = 0; i < v.length; i++) worst = Math.max(worst, Math.abs(v[i] - r[i]));
    }
  });
  return worst;
}
