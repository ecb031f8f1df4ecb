/**
 * The simulator's second axis: dp replicas of one pipeline (mesh.ts) and the
 * collective at the flush (allreduce-cost.ts).
 *
 * Every replica plays the same schedule on its own slice of the batch with the
 * same costs, so on independent devices every replica's timeline equals the
 * pipeline's. On one shared device (costs.lanes) all dp × ranks workers share
 * the lanes; replicas are identical and start together, so by induction over
 * the play's events they stay in lock step: when n workers of one replica
 * compute, dp · n compute in the mesh, each at rate min(1, lanes / (dp · n)) =
 * min(1, (lanes / dp) / n). The mesh therefore plays like one pipeline with
 * lanes / dp lanes (simulate-mesh.test.ts checks this against a play of all
 * dp × ranks workers).
 *
 * The step: stage s's gradients are ready when its last backward (B, or W
 * when the backward is split) ends on its rank (with overlap), or when every
 * worker of the mesh has finished its last compute action (without); its ring
 * all-reduce over the dp workers of its group then takes ringAllReduceTime,
 * sharing its rank's link with the rank's other stages (linkWindows). The step
 * ends when the last collective (or the last compute) does.
 */
import { ConfigError, requireFinite } from '../util/errors.ts';
import { checkAllReduceCosts, exchangeKind, linkWindows, ringAllReduceTime, ringExchangeTime, type WorkerTimes } from './allreduce-cost.ts';
import type { Play } from './engine.ts';
import { mesh, ringNext, workerOf } from './mesh.ts';
import type { CostModel, PerStage } from './cost-model.ts';
import type { Interval } from './timeline.ts';
import type { Schedule } from './types.ts';

export interface ResolvedMesh {
  dp: number;
  gradBytes: Float64Array;
  latency: number;
  bandwidth: number;
  overlap: boolean;
  /** The ZeRO stage: 0 and 1 collect at the flush (here); 2 and 3 between actions (simulate-zero.ts). */
  zero: 0 | 1 | 2 | 3;
  reshard: 'step' | 'microbatch';
  prefetch: boolean;
  /** A stream's block (PipeDream-2BW on replicas): the all-reduce after every `every`-th backward of a stage (simulate-blocks.ts); null: at the flush. */
  every: number | null;
  /** ZeRO-2/3's worker times per stage (allreduce-cost.ts): gradient read-back, shard update, weight write. */
  readback: Float64Array;
  update: Float64Array;
  write: Float64Array;
  /** True when the result reports the data-parallel step (dp > 1, or an all-reduce or gradient bytes given). */
  present: boolean;
}

/** Largest dp the simulator accepts (the page and the CLI keep to less). */
export const MAX_SIM_DP = 4096;

function gradBytesOf(x: PerStage | undefined, stages: number): Float64Array {
  const field = 'costs.gradBytes';
  if (x === undefined) return new Float64Array(stages);
  if (typeof x === 'number') return new Float64Array(stages).fill(requireFinite(field, x, { min: 0 }));
  if (!Array.isArray(x) || x.length !== stages) throw new ConfigError(field, x, `must be a number or a list of ${stages} numbers, one per stage`);
  return Float64Array.from(x, (v, s) => requireFinite(`${field}[${s}]`, v, { min: 0 }));
}

/** The dp fields of a cost model, checked; throws ConfigError naming costs.dp, costs.gradBytes or costs.allReduce.<field>. */
export function resolveMesh(c: CostModel, stages: number): ResolvedMesh {
  const dp = c.dp ?? 1;
  if (typeof dp !== 'number' || !Number.isInteger(dp) || dp < 1 || dp > MAX_SIM_DP) throw new ConfigError('costs.dp', dp, `must be a whole number between 1 and ${MAX_SIM_DP} (data-parallel replicas)`);
  const ar = c.allReduce === undefined ? { latency: 0, bandwidth: Infinity, overlap: true, zero: 0 as const, reshard: 'step' as const, prefetch: true, every: null } : checkAllReduceCosts(c.allReduce);
  const { readback, update, write, ...rest } = ar as typeof ar & WorkerTimes;
  return {
    dp,
    gradBytes: gradBytesOf(c.gradBytes, stages),
    ...rest,
    readback: workerTimeOf('costs.allReduce.readback', readback, stages),
    update: workerTimeOf('costs.allReduce.update', update, stages),
    write: workerTimeOf('costs.allReduce.write', write, stages),
    present: dp > 1 || c.allReduce !== undefined || c.gradBytes !== undefined,
  };
}

function workerTimeOf(field: string, x: number | readonly number[] | undefined, stages: number): Float64Array {
  if (x === undefined) return new Float64Array(stages);
  if (typeof x === 'number') return new Float64Array(stages).fill(x);
  if (x.length !== stages) throw new ConfigError(field, x, `must be a number or a list of ${stages} numbers, one per stage`);
  return Float64Array.from(x);
}

export interface MeshStep {
  /** End of the last compute action of any worker. */
  computeMakespan: number;
  /** When each stage's gradients were ready for its collective. */
  ready: Float64Array;
  /** Each stage's ring all-reduce time, and when it ran on its rank's link. */
  allReduceTime: Float64Array;
  start: Float64Array;
  end: Float64Array;
  /** The step: the later of the last compute and the last collective. */
  step: number;
}

/** The data-parallel step of a played pipeline (every replica plays the same times). */
export function meshStep(s: Schedule, p: Pick<Play, 'end'>, m: ResolvedMesh): MeshStep {
  const ready = new Float64Array(s.stages);
  let computeMakespan = 0;
  for (let r = 0; r < s.ranks; r++) {
    const list = s.order[r];
    const end = p.end[r];
    for (let i = 0; i < list.length; i++) {
      const a = list[i];
      const e = end[i];
      if (e > computeMakespan) computeMakespan = e;
      if ((a.op === 'B' || a.op === 'W') && e > ready[a.stage]) ready[a.stage] = e;
    }
  }
  if (!m.overlap) ready.fill(computeMakespan);
  const allReduceTime = Float64Array.from(m.gradBytes, (bytes) => ringAllReduceTime(bytes, m.dp, m.latency, m.bandwidth));
  const { start, end } = linkWindows(s.stageToRank, ready, allReduceTime);
  let step = computeMakespan;
  for (const e of end) if (e > step) step = e;
  return { computeMakespan, ready, allReduceTime, start, end, step };
}

/**
 * The collective's intervals on every worker of every stage's group: 2(dp − 1)
 * chunk exchanges per stage, `mb` the exchange index, `bytes` what the worker
 * sent in it, `peer` its ring successor (a worker index). None when dp = 1.
 */
export function collectiveIntervals(s: Schedule, m: ResolvedMesh, st: MeshStep): Interval[] {
  const out: Interval[] = [];
  if (m.dp <= 1) return out;
  const msh = mesh(m.dp, s.ranks);
  for (let stage = 0; stage < s.stages; stage++) {
    const rank = s.stageToRank[stage];
    const bytes = m.gradBytes[stage] / m.dp;
    const dt = ringExchangeTime(m.gradBytes[stage], m.dp, m.latency, m.bandwidth);
    for (let d = 0; d < m.dp; d++) {
      const peer = ringNext(msh, workerOf(msh, d, rank));
      for (let k = 0; k < 2 * (m.dp - 1); k++) {
        const iv: Interval = { rank, stage, op: 'collective', mb: k, start: st.start[stage] + k * dt, end: st.start[stage] + (k + 1) * dt, coll: exchangeKind(k, m.dp), bytes, peer };
        if (d > 0) iv.replica = d;
        out.push(iv);
      }
    }
  }
  return out;
}

/**
 * Copies of the pipeline's intervals for replicas 1 … dp − 1 (replica 0's are `intervals` themselves).
 * Built field by field: an object spread with an added key is several times slower at the page's sizes
 * (8 × 64 × 512: 459k copies, about 2.5 s against 0.2–0.4 s in Node).
 */
export function replicaCopies(intervals: readonly Interval[], dp: number): Interval[] {
  const out = new Array<Interval>(intervals.length * Math.max(0, dp - 1));
  let n = 0;
  for (let d = 1; d < dp; d++) {
    for (const iv of intervals) {
      const c: Interval = { rank: iv.rank, replica: d, stage: iv.stage, op: iv.op, mb: iv.mb, start: iv.start, end: iv.end };
      if (iv.comm !== undefined) c.comm = iv.comm;
      if (iv.peer !== undefined) c.peer = iv.peer;
      if (iv.gpuMs !== undefined) c.gpuMs = iv.gpuMs;
      if (iv.coll !== undefined) c.coll = iv.coll;
      if (iv.bytes !== undefined) c.bytes = iv.bytes;
      out[n++] = c;
    }
  }
  return out;
}
