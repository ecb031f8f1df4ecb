/**
 * The mesh: a run is `dp` copies (replicas) of one pipeline of `ranks` ranks,
 * each stage held by `ep` expert-parallel workers of `tp` tensor-parallel
 * workers each: dp × ranks × ep × tp workers in all. This module is the one place that says who is who; the coordinator,
 * the transport, the collectives, the simulator, the views, the export and the
 * planner all ask it.
 *
 * - Worker w is replica d, pipeline rank r, expert-parallel rank e,
 *   tensor-parallel rank j with w = ((d · ranks + r) · ep + e) · tp + j: tp
 *   innermost (the fastest links), then ep, then pp, dp outermost (replica-major,
 *   as train.py numbers its processes). With ep = tp = 1, w = d · ranks + r.
 * - The ep workers of one (d, r) form its ep group: each holds experts / ep of
 *   the stage's MoE experts and its slice of every micro-batch's sequences (data-
 *   parallel for the dense layers); tokens reach their experts' workers by an
 *   all-to-all (src/runtime/comm/ep-collective.ts). A stage's dense gradients are
 *   summed over its ep group, then over its dp ring; an expert's over the ring of
 *   the dp workers holding it (the same e in every replica).
 * - The workers of one (d, r) form its tp group: they run the same actions on
 *   the same micro-batches, each on its slice of the stage's layers, and sum or
 *   gather activations between layers (src/runtime/comm/tp-collective.ts).
 * - Every replica runs the same Schedule on its own slice of the step's batch:
 *   replica d takes rows [d·B/dp, (d+1)·B/dp) of the batch of B rows.
 * - A stage's group is the dp workers that hold it (one per replica), in replica
 *   order; its gradients are summed over that group by a ring all-reduce in
 *   which each worker sends only to its ring successor (replica d + 1 mod dp).
 */
import { ConfigError } from '../util/errors.ts';

export interface Mesh {
  /** Data-parallel replicas of the pipeline. */
  readonly dp: number;
  /** Pipeline ranks per replica (p). */
  readonly ranks: number;
  /** Tensor-parallel workers per pipeline rank (t, default 1). */
  readonly tp: number;
  /** Expert-parallel workers per pipeline rank (groups of tp workers; default 1). */
  readonly ep?: number;
}

export interface WorkerPlace {
  replica: number;
  rank: number;
  /** The worker's place in its tp group (0 with tp = 1). */
  tpRank: number;
  /** The worker's place in its ep group (0 with ep = 1). */
  epRank: number;
}

export function mesh(dp: number, ranks: number, tp = 1, ep = 1): Mesh {
  if (!Number.isInteger(dp) || dp < 1) throw new ConfigError('dp', dp, 'must be a whole number ≥ 1');
  if (!Number.isInteger(ranks) || ranks < 1) throw new ConfigError('ranks', ranks, 'must be a whole number ≥ 1');
  if (!Number.isInteger(tp) || tp < 1) throw new ConfigError('tp', tp, 'must be a whole number ≥ 1');
  if (!Number.isInteger(ep) || ep < 1) throw new ConfigError('ep', ep, 'must be a whole number ≥ 1');
  return ep === 1 ? { dp, ranks, tp } : { dp, ranks, tp, ep };
}

/** The mesh of a run's configuration (its dp, ranks, tp and ep; a configuration from before tp or ep has 1). */
export function meshOfRun(cfg: { readonly dp: number; readonly ranks: number; readonly tp?: number; readonly ep?: number }): Mesh {
  return mesh(cfg.dp, cfg.ranks, cfg.tp ?? 1, cfg.ep ?? 1);
}

/** Workers per pipeline rank of one replica: ep × tp. */
export function stageWorkers(m: Mesh): number {
  return (m.ep ?? 1) * (m.tp ?? 1);
}

/**
 * How many ways a run splits its token rows between layers and stages: its tp with sequence parallelism (the GPT,
 * tp ≥ 2), else 1. The one reading of `sequenceParallel` that the memory estimate and the report share.
 */
export function tokenRowSplit(cfg: { readonly tp?: number; readonly sequenceParallel?: boolean }): number {
  const t = cfg.tp ?? 1;
  return cfg.sequenceParallel === true && t > 1 ? t : 1;
}

/** Workers in the mesh: dp × ranks × ep × tp. */
export function workerCount(m: Mesh): number {
  return m.dp * m.ranks * stageWorkers(m);
}

/** The worker of replica `replica`, pipeline rank `rank`, tp rank `tpRank`, ep rank `epRank`. */
export function workerOf(m: Mesh, replica: number, rank: number, tpRank = 0, epRank = 0): number {
  return ((replica * m.ranks + rank) * (m.ep ?? 1) + epRank) * (m.tp ?? 1) + tpRank;
}

/**
 * With experts sharded over ep workers (ep a multiple of tp dividing dp · tp; DESIGN.md's order: tp innermost, then
 * ep, then pp, dp outermost), the g = ep / tp replicas of an ep group sit side by side: worker (replica d, rank r,
 * tp rank j) is ((⌊d/g⌋ · ranks + r) · g + d mod g) · tp + j, and an ep group is ep consecutive workers. With
 * ep ≤ tp (g = 1) it is workerOf's. The planner places MoE layouts so (src/plan/mesh-costs.ts).
 */
export function expertWorkerOf(m: Mesh, ep: number, replica: number, rank: number, tpRank = 0): number {
  const t = m.tp ?? 1;
  const g = Math.max(1, ep / t);
  if (!Number.isInteger(g) || m.dp % g !== 0) throw new ConfigError('ep', ep, `must be a multiple of tp = ${t} whose ep / tp divides dp = ${m.dp} (an ep group is whole tp groups of whole replicas)`);
  return ((Math.floor(replica / g) * m.ranks + rank) * g + (replica % g)) * t + tpRank;
}

/** Which replica, pipeline rank, ep rank and tp rank worker `w` is. */
export function placeOf(m: Mesh, w: number): WorkerPlace {
  const t = m.tp ?? 1, ep = m.ep ?? 1;
  const expert = Math.floor(w / t);
  const pipe = Math.floor(expert / ep);
  return { replica: Math.floor(pipe / m.ranks), rank: pipe % m.ranks, tpRank: w % t, epRank: expert % ep };
}

/** The tp group of worker `w`: the workers of its replica, pipeline rank and ep rank, in tp order. */
export function tpGroup(m: Mesh, w: number): number[] {
  const { replica, rank, epRank } = placeOf(m, w);
  return Array.from({ length: m.tp ?? 1 }, (_, j) => workerOf(m, replica, rank, j, epRank));
}

/** The ep group of worker `w`: the workers of its replica and pipeline rank with its tp rank, in ep order. */
export function epGroup(m: Mesh, w: number): number[] {
  const { replica, rank, tpRank } = placeOf(m, w);
  return Array.from({ length: m.ep ?? 1 }, (_, e) => workerOf(m, replica, rank, tpRank, e));
}

/** Every worker, in worker order. */
export function workers(m: Mesh): WorkerPlace[] {
  return Array.from({ length: workerCount(m) }, (_, w) => placeOf(m, w));
}

/** The workers that hold tp rank `tpRank` (and ep rank `epRank`) of pipeline rank `rank`'s stages, one per replica, in replica order (the ring of every stage on that rank). */
export function rankGroup(m: Mesh, rank: number, tpRank = 0, epRank = 0): number[] {
  return Array.from({ length: m.dp }, (_, d) => workerOf(m, d, rank, tpRank, epRank));
}

/** The workers that hold tp rank `tpRank` (and ep rank `epRank`) of stage `stage` (a stage's data-parallel group). */
export function stageGroup(m: Mesh, stageToRank: readonly number[], stage: number, tpRank = 0, epRank = 0): number[] {
  return rankGroup(m, stageToRank[stage], tpRank, epRank);
}

/** Worker `w`'s successor in its ring (the same rank, ep rank and tp rank in the next replica). */
export function ringNext(m: Mesh, w: number): number {
  const { replica, rank, tpRank, epRank } = placeOf(m, w);
  return workerOf(m, (replica + 1) % m.dp, rank, tpRank, epRank);
}

/** Worker `w`'s predecessor in its ring (the same rank, ep rank and tp rank in the previous replica). */
export function ringPrev(m: Mesh, w: number): number {
  const { replica, rank, tpRank, epRank } = placeOf(m, w);
  return workerOf(m, (replica + m.dp - 1) % m.dp, rank, tpRank, epRank);
}

/** The rows [lo, hi) of a batch of `batchSize` rows that replica `replica` trains on. */
export function replicaRows(m: Mesh, batchSize: number, replica: number): [number, number] {
  const per = batchSize / m.dp;
  return [replica * per, (replica + 1) * per];
}

/**
 * The ring all-reduce's chunks of a vector of `n` elements over `dp` workers:
 * chunk c is [bounds[c], bounds[c + 1]); sizes differ by at most one (the first
 * n mod dp chunks are one longer), and some are empty when n < dp.
 */
export function chunkBounds(n: number, dp: number): number[] {
  const base = Math.floor(n / dp);
  const extra = n % dp;
  const out = [0];
  for (let c = 0; c < dp; c++) out.push(out[c] + base + (c < extra ? 1 : 0));
  return out;
}

/** A lane's label in the views: `R2` in a single pipeline, `d1·R2` with replicas, `R2·e1` with ep, `R2·t1` with tp. */
export function laneLabel(m: Mesh, w: number): string {
  const { replica, rank, tpRank, epRank } = placeOf(m, w);
  const base = m.dp > 1 ? `d${replica}·R${rank}` : `R${rank}`;
  const withEp = (m.ep ?? 1) > 1 ? `${base}·e${epRank}` : base;
  return (m.tp ?? 1) > 1 ? `${withEp}·t${tpRank}` : withEp;
}
