/**
 * The run report's MoE load: per step, per MoE layer, the tokens routed to each expert by each micro-batch (as first
 * and as second choice) and those dropped for capacity, as the workers counted them where the route was computed
 * (shaders/moe.wgsl moe_capacity, moe-reference.ts routeRef) and read once a step with the aux loss
 * (executor/moe-reads.ts). A column is one micro-batch of one replica, with the worker that routed it; with ep = 1
 * that worker also computed every expert's rows. With expert parallelism (ep > 1) the column's counts are the group's
 * (ep rank 0 reports them; every member routes alike), expert e is held by ep member ⌊e / (E / ep)⌋ (epOwner), the
 * tokens a member received are the kept choices of its experts (epReceived), and each step carries every ep worker's
 * all-to-all wait for its group's slowest member (report-ep-wait.ts).
 */
import type { Mesh } from '../../schedule/mesh.ts';
import { placeOf } from '../../schedule/mesh.ts';
import type { MoeLoadRecord } from '../executor/index.ts';
import type { Timeline } from '../../schedule/timeline.ts';
import { epWaitsOf, type EpWorkerWait } from './report-ep-wait.ts';

/** One micro-batch of one replica, as a column of a layer's map. */
export interface MoeLoadColumn {
  replica: number;
  mb: number;
  /** The worker that routed it (and, with ep = 1, ran all its experts). */
  worker: number;
  /** Rows per expert it was routed into. */
  capacity: number;
}

export interface MoeLayerLoad {
  /** The layer's name (e.g. 'block1.moe') and the stage holding it. */
  layer: string;
  stage: number;
  experts: number;
  /** In replica, then micro-batch order. */
  columns: MoeLoadColumn[];
  /** [column][expert]: tokens whose first choice the expert is, second choice, and choices dropped past the capacity. */
  first: number[][];
  second: number[][];
  dropped: number[][];
}

export interface MoeLoadStep {
  step: number;
  /** In stage, then layer order. */
  layers: MoeLayerLoad[];
  /** Expert-parallel workers per stage (absent: 1). */
  ep?: number;
  /** With ep > 1 and the step's timeline: each ep worker's all-to-all wait for its group's slowest member. */
  epWait?: EpWorkerWait[];
}

/** The ep member holding expert e of E (experts [o·E/ep, (o+1)·E/ep) on member o). */
export function epOwner(e: number, experts: number, ep: number): number {
  return Math.floor(e / (experts / ep));
}

/** [column][ep member]: the tokens each member's experts received from the column (first + second choices kept: not dropped). */
export function epReceived(l: MoeLayerLoad, ep: number): number[][] {
  return l.first.map((col, c) => {
    const out = new Array<number>(ep).fill(0);
    col.forEach((f, e) => (out[epOwner(e, l.experts, ep)] += f + l.second[c][e] - l.dropped[c][e]));
    return out;
  });
}

/** The per-worker records of one window (a step; a stream's whole run) as steps: a stream's micro-batch j·m + i is step first + j's i. */
/** `timeline`: the step's own (not a stream's), whose ep all-to-alls carry their waits (report.ts stepTimeline). */
export function moeLoadSteps(step: number, perWorker: readonly (readonly MoeLoadRecord[] | undefined)[], m: Mesh, microbatches: number, stream: boolean, timeline?: Pick<Timeline, 'intervals'>): MoeLoadStep[] {
  const steps = new Map<number, Map<string, MoeLayerLoad & { order: number[] }>>();
  perWorker.forEach((records, worker) => {
    const { replica } = placeOf(m, worker);
    for (const r of records ?? []) {
      const s = stream ? step + Math.floor(r.mb / microbatches) : step;
      const mb = stream ? r.mb % microbatches : r.mb;
      const layers = steps.get(s) ?? steps.set(s, new Map()).get(s)!;
      const l = layers.get(r.layer) ?? layers.set(r.layer, { layer: r.layer, stage: r.stage, experts: r.experts, columns: [], first: [], second: [], dropped: [], order: [] }).get(r.layer)!;
      l.columns.push({ replica, mb, worker, capacity: r.capacity });
      l.order.push(replica * microbatches + mb);
      const col = (c: number) => Array.from({ length: r.experts }, (_, e) => r.counts[3 * e + c]);
      l.first.push(col(0));
      l.second.push(col(1));
      l.dropped.push(col(2));
    }
  });
  const ep = m.ep ?? 1;
  const extra = ep > 1 ? { ep, ...(timeline && !stream ? { epWait: epWaitsOf(timeline) } : {}) } : {};
  return [...steps].sort(([a], [b]) => a - b).map(([s, layers]) => ({
    step: s,
    ...extra,
    layers: [...layers.values()].sort((a, b) => a.stage - b.stage || a.layer.localeCompare(b.layer, 'en', { numeric: true })).map(({ order, ...l }) => {
      const idx = order.map((_, i) => i).sort((i, j) => order[i] - order[j]);
      return { ...l, columns: idx.map((i) => l.columns[i]), first: idx.map((i) => l.first[i]), second: idx.map((i) => l.second[i]), dropped: idx.map((i) => l.dropped[i]) };
    }),
  }));
}

/** One layer's step in figures: tokens routed to each expert (first + second choices, dropped ones included), their max / min, and the drops. */
export interface MoeLayerSummary {
  layer: string;
  /** Per expert, over the step's micro-batches. */
  routed: number[];
  dropped: number[];
  /** max / min of routed (Infinity when an expert got none; 1 when balanced). */
  maxMinRatio: number;
  /** The busiest and the idlest expert. */
  busiest: number;
  idlest: number;
  totalRouted: number;
  totalDropped: number;
}

export function summarizeLayerLoad(l: MoeLayerLoad): MoeLayerSummary {
  const sum = (rows: number[][]) => Array.from({ length: l.experts }, (_, e) => rows.reduce((a, r) => a + r[e], 0));
  const first = sum(l.first), second = sum(l.second), dropped = sum(l.dropped);
  const routed = first.map((f, e) => f + second[e]);
  const max = Math.max(...routed), min = Math.min(...routed);
  return {
    layer: l.layer,
    routed,
    dropped,
    maxMinRatio: min > 0 ? max / min : max > 0 ? Infinity : 1,
    busiest: routed.indexOf(max),
    idlest: routed.indexOf(min),
    totalRouted: routed.reduce((a, b) => a + b, 0),
    totalDropped: dropped.reduce((a, b) => a + b, 0),
  };
}
