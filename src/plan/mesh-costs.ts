/**
 * What one candidate layout of the mesh planner costs (mesh-plan.ts): the
 * simulator's cost model (stage times, held bytes, messages priced by where the
 * workers sit, each stage's gradients and its dp ring) and each device's
 * training state.
 *
 * Placement (mesh.ts, replica-major, tensor-parallel innermost): the t workers
 * of a stage sit side by side, so pipeline worker g = replica · pp + rank is
 * devices g·t … g·t + t − 1 and sits on node ⌊g·t / devicesPerNode⌋ (t divides
 * a node: tensor-parallel.ts). A pipeline link (rank r → r') is intra-node when
 * it is within a node in every replica (replicas play in lock step, so the
 * slowest sets the pace); with t > 1 each of the t workers sends its 1/t of the
 * activation on its own link (Megatron's scatter/gather, SC'21 §4.1). A stage
 * group's ring is as slow as its slowest link (inter-node hops of a group with
 * k workers per node run on k NICs at once, see ringLink); with t > 1 each of
 * the t shards has its own ring of dp workers, on its own NICs, moving 1/t of
 * the stage's gradients.
 *
 * Experts (moe.ts): with ep > 1 each MoE layer's routed experts are sharded over ep workers of a stage's
 * dp × tp (ep a multiple of tp: whole tensor-parallel groups), each holding experts / ep of them whole, the
 * rest of the model replicated over them as over any replica. Placement follows DESIGN.md's mesh order, tp
 * innermost, then ep, then pp, dp outermost: the g = ep / tp replicas of an ep group sit side by side, so
 * pipeline worker (replica d, rank r) is ((⌊d/g⌋ · pp + r) · g + d mod g) and its ep group is ep consecutive
 * devices. A stage's gradients on one device are its dense parameters / tp and its experts / ep, all priced
 * in the stage's dp ring (an expert's own group is the dp · tp / ep workers that hold it, whose ring moves
 * 2(n − 1)/n of them, at most what the dp ring is priced for: an upper bound); ZeRO divides the experts' state
 * over those dp · tp / ep holders, the rest over dp.
 * Each MoE layer's all-to-alls go to the simulator as costs.ep (stageAllToAlls), played after the compute or
 * overlapped with it as the schedule does (plan-schedules.ts overlapsAllToAll).
 *
 * ZeRO (zero.ts has the model and its assumptions): the state per device by
 * stage, with ZeRO-3's gathered block; at ZeRO-3 each action that reads a
 * stage's weights takes at least the stage's prefetched all-gather; at ZeRO-2
 * and 3, the least step the links allow (zeroLinkMs).
 */
import { ringAllReduceTime } from '../schedule/allreduce-cost.ts';
import { expertWorkerOf } from '../schedule/mesh.ts';
import type { CostModel, EpCosts } from '../schedule/index.ts';
import { allToAllBytes, allToAllCounts, isMoeLayer } from './moe.ts';
import { allToAllLink, type DeviceSpec } from './device.ts';
import { stageCosts, type Profile } from './profile.ts';
import { blockExpertParams, blockParams, headParams, stateBytesPerParam, type TransformerModel } from './transformer.ts';
import { asZeroStage, zeroLinkBoundMs, type ZeroStage } from './zero.ts';

/** What the costs read of a plan request (mesh-plan.ts's MeshPlanRequest has it). */
export interface PlanTarget {
  model: TransformerModel;
  device: DeviceSpec;
}

/** A candidate layout: dp × tp × pp, micro-batch size b, micro-batches per replica m. */
export interface Layout {
  dp: number;
  pp: number;
  /** Tensor-parallel workers per stage (absent: 1). */
  tp?: number;
  b: number;
  m: number;
  /** ZeRO stage (absent: 0). */
  zero?: ZeroStage;
  /** Expert-parallel workers sharing each MoE layer's experts (absent: 1): a multiple of tp dividing dp · tp. */
  ep?: number;
}

/** Replicas per ep group: ep / tp (1 without experts sharded). */
function epReplicas(l: Pick<Layout, 'tp' | 'ep'>): number {
  return Math.max(1, (l.ep ?? 1) / (l.tp ?? 1));
}

/** The pipeline worker of replica d, rank r among dp · pp of them with g replicas an ep group (mesh.ts expertWorkerOf, in units of tp groups). */
function pipeWorker(d: number, r: number, pp: number, g: number, dp: number): number {
  return expertWorkerOf({ dp, ranks: pp, tp: 1 }, g, d, r);
}

/** The fewest members of an ep group that share a node with any one of them (the sender included): DESIGN.md's placement. */
export function epLocal(l: Pick<Layout, 'dp' | 'pp' | 'tp' | 'ep'>, devicesPerNode: number): number {
  const ep = l.ep ?? 1;
  if (ep <= 1) return 1;
  let least = ep;
  for (let start = 0; start < l.dp * l.pp * (l.tp ?? 1); start += ep) {
    const perNode = new Map<number, number>();
    for (let x = start; x < start + ep; x++) perNode.set(Math.floor(x / devicesPerNode), (perNode.get(Math.floor(x / devicesPerNode)) ?? 0) + 1);
    least = Math.min(least, ...perNode.values());
  }
  return least;
}

/** Whether workers a and b share a node in every replica. */
function sameNodeEverywhere(a: number, b: number, dp: number, pp: number, perNode: number, g: number): boolean {
  for (let d = 0; d < dp; d++) if (Math.floor(pipeWorker(d, a, pp, g, dp) / perNode) !== Math.floor(pipeWorker(d, b, pp, g, dp) / perNode)) return false;
  return true;
}

/**
 * The slowest stage group's ring: intra-node when every group lies within one node; otherwise its
 * inter-node hops, where a group with k workers on each node crosses nodes on k NICs at once (NCCL
 * builds one ring per rail), so its bandwidth is min(k · inter, intra).
 */
function ringLink(dp: number, pp: number, d: DeviceSpec, groupsPerNode: number, g = 1): { latency: number; bandwidth: number } {
  const intra = { latency: d.latIntraUs / 1e3, bandwidth: d.bwIntraGBps * 1e6 };
  if (dp <= 1) return intra;
  let worst = intra;
  for (let r = 0; r < pp; r++) {
    const perNode = new Map<number, number>();
    for (let rep = 0; rep < dp; rep++) {
      const node = Math.floor(pipeWorker(rep, r, pp, g, dp) / groupsPerNode);
      perNode.set(node, (perNode.get(node) ?? 0) + 1);
    }
    if (perNode.size === 1) continue;
    const rails = Math.min(...perNode.values());
    const bw = Math.min(rails * d.bwInterGBps, d.bwIntraGBps) * 1e6;
    if (bw < worst.bandwidth || worst === intra) worst = { latency: d.latInterUs / 1e3, bandwidth: Math.min(bw, worst === intra ? Infinity : worst.bandwidth) };
  }
  return worst;
}

/**
 * The block ranges of each of a schedule's stages: `ranges` cuts the model; with model copies (DualPipe: stageToRank
 * lists copies × ranges.length stages) copy c's stage j holds the blocks of ranges[j] (schedule/copies.ts).
 */
function stageRanges(ranges: readonly [number, number][], stageToRank: readonly number[]): readonly [number, number][] {
  return stageToRank.length === ranges.length ? ranges : stageToRank.map((_, s) => ranges[s % ranges.length]);
}

/** How a candidate plays its experts' all-to-alls: overlapped with compute (DualPipe) or after it, and whether full recomputation runs the forward's again. */
export interface AllToAllPlay {
  overlap: boolean;
  fullRecompute: boolean;
}

/**
 * Each schedule stage's all-to-alls for the simulator (costs.ep, schedule/ep-cost.ts): per MoE layer of the stage a
 * dispatch and a combine of e·R·h / t bytes in F and in the backward's input half (twice there with full
 * recomputation), over the layout's ep group and the links it spans; undefined without experts sharded.
 */
function stageAllToAlls(model: TransformerModel, device: DeviceSpec, ranges: readonly [number, number][], l: Layout, play: AllToAllPlay): EpCosts | undefined {
  const ep = l.ep ?? 1;
  if (ep <= 1 || !model.moe) return undefined;
  const t = l.tp ?? 1;
  const count = allToAllCounts(play.fullRecompute);
  const messages = ranges.map(([a, b]) => {
    const F: number[] = [];
    const I: number[] = [];
    // Block i is layer i − 1 (block 0 the embedding, the last the head).
    for (let i = Math.max(a, 1); i < Math.min(b, model.layers + 1); i++) {
      if (!isMoeLayer(model, i - 1)) continue;
      const bytes = allToAllBytes(model, i - 1, model.seq * l.b) / t;
      for (let k = 0; k < count.F; k++) F.push(bytes);
      for (let k = 0; k < count.I; k++) I.push(bytes);
    }
    return { F, I };
  });
  const link = allToAllLink(device);
  return { n: ep, local: epLocal(l, device.devicesPerNode), link, messages, overlap: play.overlap };
}

/**
 * The simulator's costs of one candidate: stage times, held bytes, messages by placement, gradients and the ring,
 * and with experts sharded each stage's all-to-alls (`profile` then without them: the simulator adds them, played as
 * `play` says). `ranges` cuts the model; `stageToRank` places the schedule's stages (copies × ranges.length with
 * model copies).
 */
export function candidateCosts(req: PlanTarget, profile: Profile, modelRanges: readonly [number, number][], stageToRank: readonly number[], l: Layout, play?: AllToAllPlay): CostModel {
  const { model, device } = req;
  const one = stageCosts(profile, modelRanges);
  const ranges = stageRanges(modelRanges, stageToRank);
  const each = (xs: readonly number[]) => ranges.map((_, s) => xs[s % xs.length]);
  const c = { F: each(one.F), I: each(one.I), W: each(one.W), B: each(one.B), heldBytes: each(one.heldBytes) };
  const t = l.tp ?? 1;
  // Pipeline workers (tensor-parallel groups of t devices) per node.
  const perNode = device.devicesPerNode / t;
  const g = epReplicas(l);
  const gradBytes = stageGradBytes(model, ranges, stageToRank, t, l.ep ?? 1);
  const lat = { intra: device.latIntraUs / 1e3, inter: device.latInterUs / 1e3 };
  const bw = { intra: device.bwIntraGBps * 1e6, inter: device.bwInterGBps * 1e6 };
  // Each pair of ranks asked once (the simulator asks for every message).
  const known = new Map<number, boolean>();
  const intra = (from: number, to: number) => {
    const k = from * l.pp + to;
    let x = known.get(k);
    if (x === undefined) known.set(k, (x = sameNodeEverywhere(from, to, l.dp, l.pp, perNode, g)));
    return x;
  };
  const ring = ringLink(l.dp, l.pp, device, perNode, g);
  const out: CostModel = {
    F: c.F,
    I: c.I,
    W: c.W,
    B: c.B,
    heldBytes: c.heldBytes,
    activationBytes: ranges.map(() => (model.bytesPerElement * model.seq * l.b * model.hidden) / t),
    latency: (from, to) => (intra(from, to) ? lat.intra : lat.inter),
    bandwidth: (from, to) => (intra(from, to) ? bw.intra : bw.inter),
    unit: 'ms',
    dp: l.dp,
    gradBytes,
    allReduce: ring,
  };
  const a2a = play ? stageAllToAlls(model, device, ranges, l, play) : undefined;
  if (a2a) out.ep = a2a;
  if ((l.zero ?? 0) < 3 || l.dp <= 1) return out;
  // ZeRO-3: F, I and B wait for their prefetched gather when it is the longer (the flush stays one all-reduce's time: zero.ts).
  const half = halfRingMs(gradBytes, l.dp, ring);
  const atLeast = (xs: readonly number[]) => xs.map((x, s) => Math.max(x, half[s]));
  return { ...out, F: atLeast(c.F), I: atLeast(c.I), B: atLeast(c.B) };
}

/** Each stage's gradient (and weight) bytes on one of its devices: its dense parameters / t, its experts / ep. */
function stageGradBytes(model: TransformerModel, ranges: readonly [number, number][], stageToRank: readonly number[], t: number, ep: number): number[] {
  const experts = stageExpertParams(model, ranges);
  return stageParams(model, ranges, stageToRank).map((n, s) => ((n - experts[s]) / t + experts[s] / ep) * model.bytesPerElement);
}

/** The routed experts' parameters of each stage. */
function stageExpertParams(model: TransformerModel, ranges: readonly [number, number][]): number[] {
  const params = blockExpertParams(model);
  return ranges.map(([a, b]) => params.slice(a, b).reduce((x, y) => x + y, 0));
}

/** One reduce-scatter or all-gather of each stage over its ring: half the ring all-reduce, ms. */
function halfRingMs(gradBytes: readonly number[], dp: number, ring: { latency: number; bandwidth: number }): number[] {
  return gradBytes.map((g) => ringAllReduceTime(g, dp, ring.latency, ring.bandwidth) / 2);
}

/** The least step the busiest rank's link allows at the layout's ZeRO stage (zero.ts; 0 below ZeRO-2), ms. */
export function zeroLinkMs(req: PlanTarget, ranges: readonly [number, number][], stageToRank: readonly number[], l: Layout): number {
  const zero = l.zero ?? 0;
  if (zero < 2 || l.dp <= 1) return 0;
  const t = l.tp ?? 1;
  const ring = ringLink(l.dp, l.pp, req.device, req.device.devicesPerNode / t, epReplicas(l));
  return zeroLinkBoundMs(halfRingMs(stageGradBytes(req.model, stageRanges(ranges, stageToRank), stageToRank, t, l.ep ?? 1), l.dp, ring), stageToRank, zero, l.m);
}

/** The rank holding both the first and the last stage (the head then shares the embedding's matrix), or −1. */
function tiedRank(stageToRank: readonly number[]): number {
  return stageToRank[0] === stageToRank[stageToRank.length - 1] ? stageToRank[0] : -1;
}

/** Parameters of each stage (the last stage's head shares the embedding's matrix when the same rank holds both). */
function stageParams(model: TransformerModel, ranges: readonly [number, number][], stageToRank: readonly number[]): number[] {
  const params = blockParams(model);
  const tied = tiedRank(stageToRank);
  return ranges.map(([a, b], s) => {
    let n = 0;
    for (let i = a; i < b; i++) n += params[i];
    if (b === params.length && stageToRank[s] === tied) n -= params[b - 1] - headParams(model, true);
    return n;
  });
}

/**
 * Weights, gradients and optimizer state of each rank's stages on each of its t tensor-parallel devices at
 * ZeRO stage `zero` (true: 1) over dp replicas, bytes. ZeRO-3 adds, transiently, the full weights of one
 * gathered block, the largest of the rank's (a layer, or the embedding or head), as FSDP gathers one
 * wrapped layer at a time (zero.ts); this repo's tab gathers a whole stage, which the planner does not model.
 */
export function stateBytes(req: PlanTarget, modelRanges: readonly [number, number][], stageToRank: readonly number[], pp: number, zero: ZeroStage | boolean, dp: number, tp = 1, ep = 1): number[] {
  const ranges = stageRanges(modelRanges, stageToRank);
  const per = stateBytesPerParam(req.model, zero, dp);
  // The experts' state is sharded over the dp · tp / ep workers that hold each expert.
  const perExpert = stateBytesPerParam(req.model, zero, (dp * tp) / ep);
  const out = new Array<number>(pp).fill(0);
  const experts = stageExpertParams(req.model, ranges);
  stageParams(req.model, ranges, stageToRank).forEach((n, s) => (out[stageToRank[s]] += ((n - experts[s]) / tp) * per + (experts[s] / ep) * perExpert));
  if (asZeroStage(zero) < 3 || dp <= 1) return out;
  const expertBlocks = blockExpertParams(req.model);
  const params = blockParams(req.model).map((n, i) => n - expertBlocks[i] + (expertBlocks[i] * tp) / ep);
  const tied = tiedRank(stageToRank);
  const largest = new Array<number>(pp).fill(0);
  ranges.forEach(([a, b], s) => {
    const r = stageToRank[s];
    for (let i = a; i < b; i++) {
      const n = i === params.length - 1 && r === tied ? headParams(req.model, true) : params[i];
      largest[r] = Math.max(largest[r], n);
    }
  });
  return out.map((x, r) => x + (largest[r] / tp) * req.model.bytesPerElement);
}
