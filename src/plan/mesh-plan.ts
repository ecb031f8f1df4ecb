/**
 * Plan a real model on N devices: every mesh dp × pp = N (pp ≤ layers), the
 * schedule (1F1B, interleaved 1F1B, ZB-H1, ZB-V, DualPipe-V, auto), its
 * virtual stages, the micro-batch size, ZeRO-1 and activation recomputation;
 * what does not fit a device's memory is dropped and the rest ranked by the
 * simulated step time (simulate.ts with the α–β all-reduce and point-to-point
 * costs by placement).
 *
 * Costs (transformer.ts): the analytic profile cut into pp · v stages by the
 * partitioner that balances F + B (partition.ts); each stage boundary sends a
 * [b, s, h] activation (and its gradient back); each stage all-reduces its
 * gradients (its parameters × bytes per element) over its dp replicas.
 *
 * Placement (mesh.ts, replica-major): worker w = replica · pp + rank sits on
 * node ⌊w / devicesPerNode⌋. A pipeline link (rank r → r') is intra-node when
 * it is within a node in every replica (replicas play in lock step, so the
 * slowest sets the pace); a stage group's ring is as slow as its slowest link
 * (inter-node hops of a group with k workers per node run on k NICs at once,
 * see ringLink), and the mesh's all-reduce is priced at the slowest group's.
 *
 * Memory per device: weights, gradients and Adam state of its stages
 * (16 bytes per parameter; ZeRO-1 divides the optimizer's 12 by dp), plus the
 * peak of its held activations over its schedule (simulate.ts peakMemory).
 * A candidate that fits without ZeRO-1 keeps it off (ZeRO-1 costs the same
 * time here, see allreduce-cost.ts); recomputation, which only adds time, is
 * tried where nothing fits without it. `auto` (the memory-capped builder,
 * generators/auto.ts, one stage per rank) runs on the best few layouts.
 */
import { generateSchedule, autoSchedule, peakMemory, simulateStep, stageToRankMap, MAX_MICROBATCHES, type CostModel, type Schedule } from '../schedule/index.ts';
import { ConfigError, requireInt } from '../util/errors.ts';
import { checkDevice, type DeviceSpec } from './device.ts';
import { planPartition } from './partition.ts';
import { stageCosts, type Profile } from './profile.ts';
import { blockParams, checkTransformer, headParams, modelFlopsPerStep, stateBytesPerParam, transformerProfile, type TransformerModel } from './transformer.ts';

export const PLAN_SCHEDULES = ['1f1b', 'interleaved-1f1b', 'zb-h1', 'zb-v', 'dualpipe-v', 'auto'] as const;
export type PlanSchedule = (typeof PLAN_SCHEDULES)[number];

/**
 * Bounds on the work of one plan, so that no request runs for minutes: actions simulated per candidate and
 * in all, the partitioner's dynamic program (stages × blocks² steps) per cut, and the layouts `auto` builds
 * for (its search plays many candidates per layout).
 */
export const MESH_PLAN_LIMITS = { devices: 65536, globalBatch: 1 << 20, microBatch: 64, actions: 100_000, totalActions: 3_000_000, partitionSteps: 1e8, autoActions: 12_000 } as const;

export interface MeshPlanRequest {
  model: TransformerModel;
  device: DeviceSpec;
  /** N: devices in all. */
  devices: number;
  /** Sequences per optimizer step, over all replicas. */
  globalBatch: number;
  /** Schedules to consider (default all of PLAN_SCHEDULES). */
  schedules?: readonly PlanSchedule[];
  /** Largest micro-batch size tried (powers of two up to it; default 8). */
  maxMicroBatch?: number;
  /** Layouts `auto` runs on (the best by the other schedules; default 3). */
  autoLayouts?: number;
}

export interface MeshCandidate {
  dp: number;
  pp: number;
  schedule: PlanSchedule;
  virtual: number;
  /** Sequences per micro-batch (b) and micro-batches per replica (m). */
  microBatch: number;
  microbatches: number;
  zero: boolean;
  recompute: boolean;
  stepMs: number;
  computeMs: number;
  bubble: number;
  exposedAllReduceMs: number;
  allReduceShare: number;
  /** The fullest device: state (weights, gradients, optimizer) and activations, bytes. */
  memoryBytes: number;
  stateBytes: number;
  activationBytes: number;
  /** Model FLOPs per step / (step time · N · peak). */
  mfu: number;
  /** Block ranges of each stage. */
  ranges: [number, number][];
}

export interface MeshPlan {
  /** Fitting candidates, fastest first. */
  candidates: MeshCandidate[];
  /** Candidates simulated, and those dropped for memory. */
  evaluated: number;
  dropped: number;
  /** Layouts not tried, with why (batch not divisible, too many stages, too large to simulate). */
  skipped: string[];
}

const ONE_STAGE = new Set<PlanSchedule>(['1f1b', 'zb-h1', 'auto']);

function checkRequest(r: MeshPlanRequest): void {
  checkTransformer(r.model);
  checkDevice(r.device);
  requireInt('devices', r.devices, 1, MESH_PLAN_LIMITS.devices);
  requireInt('globalBatch', r.globalBatch, 1, MESH_PLAN_LIMITS.globalBatch);
  if (r.maxMicroBatch !== undefined) requireInt('maxMicroBatch', r.maxMicroBatch, 1, MESH_PLAN_LIMITS.microBatch);
  for (const s of r.schedules ?? []) if (!(PLAN_SCHEDULES as readonly string[]).includes(s)) throw new ConfigError('schedules', s, `must be among ${PLAN_SCHEDULES.join(', ')}`);
  if (r.schedules && r.schedules.length === 0) throw new ConfigError('schedules', [], `must name at least one of ${PLAN_SCHEDULES.join(', ')}`);
}

/** Whether workers a and b share a node in every replica. */
function sameNodeEverywhere(a: number, b: number, dp: number, pp: number, perNode: number): boolean {
  for (let d = 0; d < dp; d++) if (Math.floor((d * pp + a) / perNode) !== Math.floor((d * pp + b) / perNode)) return false;
  return true;
}

/**
 * The slowest stage group's ring: intra-node when every group lies within one node; otherwise its
 * inter-node hops, where a group with k workers on each node crosses nodes on k NICs at once (NCCL
 * builds one ring per rail), so its bandwidth is min(k · inter, intra).
 */
function ringLink(dp: number, pp: number, d: DeviceSpec): { latency: number; bandwidth: number } {
  const intra = { latency: d.latIntraUs / 1e3, bandwidth: d.bwIntraGBps * 1e6 };
  if (dp <= 1) return intra;
  let worst = intra;
  for (let r = 0; r < pp; r++) {
    const perNode = new Map<number, number>();
    for (let rep = 0; rep < dp; rep++) {
      const node = Math.floor((rep * pp + r) / d.devicesPerNode);
      perNode.set(node, (perNode.get(node) ?? 0) + 1);
    }
    if (perNode.size === 1) continue;
    const rails = Math.min(...perNode.values());
    const bw = Math.min(rails * d.bwInterGBps, d.bwIntraGBps) * 1e6;
    if (bw < worst.bandwidth || worst === intra) worst = { latency: d.latInterUs / 1e3, bandwidth: Math.min(bw, worst === intra ? Infinity : worst.bandwidth) };
  }
  return worst;
}

/** The simulator's costs of one candidate: stage times, held bytes, messages by placement, gradients and the ring. */
export function candidateCosts(req: MeshPlanRequest, profile: Profile, ranges: readonly [number, number][], stageToRank: readonly number[], l: Layout): CostModel {
  const { model, device } = req;
  const c = stageCosts(profile, ranges);
  const params = blockParams(model);
  const tied = tiedRank(stageToRank);
  const gradBytes = ranges.map(([a, b], s) => {
    let n = 0;
    for (let i = a; i < b; i++) n += params[i];
    if (b === params.length && stageToRank[s] === tied) n -= params[b - 1] - headParams(model, true);
    return n * model.bytesPerElement;
  });
  const lat = { intra: device.latIntraUs / 1e3, inter: device.latInterUs / 1e3 };
  const bw = { intra: device.bwIntraGBps * 1e6, inter: device.bwInterGBps * 1e6 };
  const intra = (from: number, to: number) => sameNodeEverywhere(from, to, l.dp, l.pp, device.devicesPerNode);
  return {
    F: c.F,
    I: c.I,
    W: c.W,
    B: c.B,
    heldBytes: c.heldBytes,
    activationBytes: ranges.map(() => model.bytesPerElement * model.seq * l.b * model.hidden),
    latency: (from, to) => (intra(from, to) ? lat.intra : lat.inter),
    bandwidth: (from, to) => (intra(from, to) ? bw.intra : bw.inter),
    unit: 'ms',
    dp: l.dp,
    gradBytes,
    allReduce: ringLink(l.dp, l.pp, device),
  };
}

/** The rank holding both the first and the last stage (the head then shares the embedding's matrix), or −1. */
function tiedRank(stageToRank: readonly number[]): number {
  return stageToRank[0] === stageToRank[stageToRank.length - 1] ? stageToRank[0] : -1;
}

/** Weights, gradients and optimizer state of each rank's stages, bytes. */
function stateBytes(req: MeshPlanRequest, ranges: readonly [number, number][], stageToRank: readonly number[], pp: number, zero: boolean, dp: number): number[] {
  const params = blockParams(req.model);
  const per = stateBytesPerParam(req.model, zero, dp);
  const out = new Array<number>(pp).fill(0);
  const tied = tiedRank(stageToRank);
  ranges.forEach(([a, b], s) => {
    let n = 0;
    for (let i = a; i < b; i++) n += params[i];
    if (b === params.length && stageToRank[s] === tied) n -= params[b - 1] - headParams(req.model, true);
    out[stageToRank[s]] += n * per;
  });
  return out;
}

/** Sequences per micro-batch to try for `rows` sequences per replica: powers of two dividing it, up to max. */
function microBatchSizes(rows: number, max: number): number[] {
  const out: number[] = [];
  for (let b = 1; b <= Math.min(rows, max); b *= 2) if (rows % b === 0 && rows / b <= MAX_MICROBATCHES) out.push(b);
  return out;
}

export interface Scored {
  cand: MeshCandidate;
  fits: boolean;
}

/** A candidate layout: dp × pp, micro-batch size b, micro-batches per replica m. */
export interface Layout {
  dp: number;
  pp: number;
  b: number;
  m: number;
}

export type Evaluate = (l: Layout, name: PlanSchedule, v: number, recompute: boolean, given?: Schedule) => Scored | null;

/** Prices candidates of one request (profiles and cuts cached); returns null for a schedule the sizes do not allow. */
export function makeEvaluator(req: MeshPlanRequest): { evaluate: Evaluate; scored: Scored[]; count: () => number } {
  checkRequest(req);
  const { model, device, devices: N, globalBatch: B } = req;
  const capacity = device.memoryGB * 1e9;
  const peak = (model.bytesPerElement === 4 ? device.peakTflopsFp32 : device.peakTflops) * 1e12;
  const flopsPerStep = modelFlopsPerStep(model, B);
  const profiles = new Map<string, Profile>();
  const profileOf = (b: number, recompute: boolean): Profile => {
    const k = `${b}/${recompute}`;
    let p = profiles.get(k);
    if (!p) profiles.set(k, (p = transformerProfile(model, { microBatch: b, recompute }, device)));
    return p;
  };
  const rangesCache = new Map<string, [number, number][]>();
  const rangesOf = (b: number, recompute: boolean, stages: number): [number, number][] => {
    // Every time of the analytic profile is linear in b, so the cut does not depend on it.
    const k = `${recompute}/${stages}`;
    let r = rangesCache.get(k);
    if (!r) rangesCache.set(k, (r = planPartition(profileOf(b, recompute), stages).ranges));
    return r;
  };
  const scored: Scored[] = [];
  let evaluated = 0;
  const evaluate: Evaluate = (l, name, v, recompute, given) => {
    const stages = l.pp * v;
    const profile = profileOf(l.b, recompute);
    const ranges = rangesOf(l.b, recompute, stages);
    const s2r = given?.stageToRank ?? stageToRankMap(l.pp, v, name === 'zb-v' || name === 'dualpipe-v' ? 'v' : 'loop');
    const costs = candidateCosts(req, profile, ranges, s2r, l);
    let schedule = given;
    if (!schedule) {
      try {
        schedule = generateSchedule(name, l.pp, l.m, v);
      } catch (e) {
        if (e instanceof ConfigError) return null;
        throw e;
      }
    }
    evaluated++;
    const act = peakMemory(schedule, Float64Array.from(costs.heldBytes as number[])).map((x) => x.peakBytes);
    const total = (zero: boolean) => stateBytes(req, ranges, s2r, l.pp, zero, l.dp).map((st, r) => ({ st, act: act[r], sum: st + act[r] }));
    const worstOf = (xs: { st: number; act: number; sum: number }[]) => xs.reduce((a, x) => (x.sum > a.sum ? x : a));
    let zero = false;
    let worst = worstOf(total(false));
    if (worst.sum > capacity && l.dp > 1) {
      zero = true;
      worst = worstOf(total(true));
    }
    const step = simulateStep(schedule, costs);
    const cand: MeshCandidate = {
      dp: l.dp,
      pp: l.pp,
      schedule: name,
      virtual: v,
      microBatch: l.b,
      microbatches: l.m,
      zero,
      recompute,
      stepMs: step.makespan,
      computeMs: step.computeMakespan,
      bubble: step.bubble,
      exposedAllReduceMs: step.exposedAllReduce,
      allReduceShare: step.allReduceShare,
      memoryBytes: worst.sum,
      stateBytes: worst.st,
      activationBytes: worst.act,
      mfu: flopsPerStep / ((step.makespan / 1e3) * N * peak),
      ranges,
    };
    const out = { cand, fits: worst.sum <= capacity };
    scored.push(out);
    return out;
  };
  return { evaluate, scored, count: () => evaluated };
}

export function planMesh(req: MeshPlanRequest): MeshPlan {
  const { evaluate, scored, count } = makeEvaluator(req);
  const { model, devices: N, globalBatch: B } = req;
  const blocks = model.layers + 2;
  const wanted = new Set<PlanSchedule>(req.schedules ?? PLAN_SCHEDULES);
  const skipped: string[] = [];
  const layouts: Layout[] = [];
  for (let pp = 1; pp <= Math.min(N, model.layers); pp++) {
    if (N % pp !== 0) continue;
    const dp = N / pp;
    if (B % dp !== 0) {
      skipped.push(`dp × pp = ${dp} × ${pp}: the global batch ${B} is not divisible by dp = ${dp}`);
      continue;
    }
    for (const b of microBatchSizes(B / dp, req.maxMicroBatch ?? 8)) layouts.push({ dp, pp, b, m: B / dp / b });
  }
  let spent = 0;
  for (const l of layouts) {
    const options: [PlanSchedule, number][] = [];
    for (const name of wanted) {
      if (name === 'auto') continue;
      if (l.pp === 1 && name !== '1f1b') continue;
      if (ONE_STAGE.has(name)) options.push([name, 1]);
      else if (name === 'interleaved-1f1b') {
        for (const v of [2, 4]) options.push([name, v]); // any m: generators/interleaved.ts
      } else options.push([name, 2]);
    }
    for (const [name, v] of options) {
      const actions = l.pp * v * l.m * 3;
      const dpSteps = l.pp * v * blocks * blocks;
      if (l.pp * v > blocks) {
        skipped.push(`${name} v=${v} on pp = ${l.pp}: ${l.pp * v} stages, more than the model's ${blocks} blocks`);
        continue;
      }
      if (actions > MESH_PLAN_LIMITS.actions) {
        skipped.push(`${name} v=${v}, dp × pp = ${l.dp} × ${l.pp}, b = ${l.b}: ${actions} actions, more than the planner simulates (${MESH_PLAN_LIMITS.actions})`);
        continue;
      }
      if (dpSteps > MESH_PLAN_LIMITS.partitionSteps) {
        skipped.push(`${name} v=${v} on pp = ${l.pp}: cutting ${blocks} blocks into ${l.pp * v} stages takes more steps than the planner allows (${MESH_PLAN_LIMITS.partitionSteps})`);
        continue;
      }
      if (spent + actions > MESH_PLAN_LIMITS.totalActions) {
        skipped.push(`${name} v=${v}, dp × pp = ${l.dp} × ${l.pp}, b = ${l.b}: the plan's budget of ${MESH_PLAN_LIMITS.totalActions} simulated actions is spent`);
        continue;
      }
      spent += actions;
      const plain = evaluate(l, name, v, false);
      if (plain && !plain.fits) {
        spent += actions;
        evaluate(l, name, v, true);
      }
    }
  }
  if (wanted.has('auto')) runAuto(req, scored, layouts, evaluate, req.device.memoryGB * 1e9);

  const fitting = scored.filter((x) => x.fits).map((x) => x.cand);
  if (fitting.length === 0) throw noFit(req, scored, skipped);
  fitting.sort((a, b) => a.stepMs - b.stepMs || a.memoryBytes - b.memoryBytes);
  return { candidates: fitting, evaluated: count(), dropped: scored.length - fitting.length, skipped };
}

/** `auto` on the best few layouts: one stage per rank, built within what each device has left for activations. */
function runAuto(req: MeshPlanRequest, scored: Scored[], layouts: Layout[], evaluate: Evaluate, capacity: number): void {
  const best = new Map<string, { stepMs: number; recompute: boolean }>();
  for (const x of scored) {
    if (!x.fits) continue;
    const k = `${x.cand.dp}/${x.cand.pp}/${x.cand.microBatch}`;
    const prev = best.get(k);
    if (!prev || x.cand.stepMs < prev.stepMs) best.set(k, { stepMs: x.cand.stepMs, recompute: x.cand.recompute });
  }
  const top = [...best.entries()].sort((a, b) => a[1].stepMs - b[1].stepMs).slice(0, req.autoLayouts ?? 3);
  for (const [k, { recompute }] of top) {
    const l = layouts.find((x) => `${x.dp}/${x.pp}/${x.b}` === k);
    const blocks = req.model.layers + 2;
    if (!l || l.pp === 1 || l.pp > blocks || l.pp * l.m * 3 > MESH_PLAN_LIMITS.autoActions || l.pp * blocks * blocks > MESH_PLAN_LIMITS.partitionSteps) continue;
    const ranges = planPartition(transformerProfile(req.model, { microBatch: l.b, recompute }, req.device), l.pp).ranges;
    const s2r = stageToRankMap(l.pp, 1, 'loop');
    const state = Math.max(...stateBytes(req, ranges, s2r, l.pp, l.dp > 1, l.dp));
    const capBytes = capacity - state;
    const costs = candidateCosts(req, transformerProfile(req.model, { microBatch: l.b, recompute }, req.device), ranges, s2r, l);
    const oneMicrobatch = Math.max(...(costs.heldBytes as number[]));
    if (!(capBytes >= oneMicrobatch)) continue;
    const schedule = autoSchedule(l.pp, l.m, costs, { bytes: capBytes }).schedule;
    evaluate(l, 'auto', 1, recompute, schedule);
  }
}

function noFit(req: MeshPlanRequest, scored: Scored[], skipped: string[]): ConfigError {
  if (scored.length === 0) {
    return new ConfigError('globalBatch', req.globalBatch, `leaves no layout to try on ${req.devices} devices: ${skipped.slice(0, 3).join('; ') || 'no dp × pp with pp ≤ layers divides the devices'}`);
  }
  const least = scored.reduce((a, x) => (x.cand.memoryBytes < a.cand.memoryBytes ? x : a)).cand;
  const gb = Math.ceil(least.memoryBytes / 1e8) / 10;
  return new ConfigError(
    'device.memoryGB',
    req.device.memoryGB,
    `no layout of the ${req.devices} devices fits in it (every dp × pp, schedule, micro-batch, ZeRO-1 and recomputation tried); the smallest memory that would fit is ${gb} GB: dp × pp = ${least.dp} × ${least.pp}, ${least.schedule}${least.virtual > 1 ? ` v=${least.virtual}` : ''}, micro-batch ${least.microBatch}${least.zero ? ', ZeRO-1' : ''}${least.recompute ? ', recomputation' : ''}`,
  );
}

/** The schedule of a candidate (auto rebuilt within the same cap), for drawing or export. */
export function candidateSchedule(req: MeshPlanRequest, c: MeshCandidate): { schedule: Schedule; costs: CostModel } {
  const l = { dp: c.dp, pp: c.pp, b: c.microBatch, m: c.microbatches };
  const profile = transformerProfile(req.model, { microBatch: c.microBatch, recompute: c.recompute }, req.device);
  const s2r = stageToRankMap(c.pp, c.virtual, c.schedule === 'zb-v' || c.schedule === 'dualpipe-v' ? 'v' : 'loop');
  const costs = candidateCosts(req, profile, c.ranges, s2r, l);
  if (c.schedule !== 'auto') return { schedule: generateSchedule(c.schedule, c.pp, c.microbatches, c.virtual), costs };
  const state = Math.max(...stateBytes(req, c.ranges, s2r, c.pp, c.dp > 1, c.dp));
  return { schedule: autoSchedule(c.pp, c.microbatches, costs, { bytes: req.device.memoryGB * 1e9 - state }).schedule, costs };
}
