/**
 * Plan a real model on N devices: every mesh dp × pp = N (pp ≤ layers), the
 * schedule (1F1B, interleaved 1F1B, ZB-H1, the interleaved zero bubble, ZB-V,
 * DualPipe-V, DualPipe, Hanayo, PipeDream-2BW, auto; plan-schedules.ts says how the
 * copies, the extra weight version and the stream are priced, and which
 * layouts each refuses, named in `skipped`), its
 * virtual stages, the micro-batch size, the ZeRO stage and activation recomputation;
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
 * (16 bytes per parameter; ZeRO-1 divides the optimizer's 12 by dp, ZeRO-2 the
 * gradients' too, ZeRO-3 the weights' too and holds one gathered block, see
 * zero.ts), plus the peak of its held activations over its schedule
 * (simulate.ts peakMemory). Each candidate takes the least ZeRO stage that
 * fits, trying 0 → 1 → 2 → 3 where dp > 1 (ZeRO-1 costs the all-reduce's time,
 * see allreduce-cost.ts; ZeRO-2 and 3 cost more, see zero.ts), or the stage the
 * request fixes; recomputation, which only adds time, is tried where nothing
 * fits without it: selective first (the attention's core, a few per cent of a
 * layer's FLOPs, Korthikanti et al. 2022), then full (the whole forward
 * again). `auto` (the memory-capped builder, generators/auto.ts, one stage per
 * rank) runs on the best few layouts.
 *
 * Mixture-of-experts models (moe.ts): the expert-parallel size ep is searched too, every ep dividing the
 * experts and dp · tp and made of whole tensor-parallel groups (ep a multiple of tp; torchtitan's and
 * Megatron's expert grid borrow the ep workers from dp × tp), or fixed by the request; each MoE layer's
 * all-to-all priced on the links its ep group spans (mesh-costs.ts epLocal) and played after the compute, or
 * overlapped with it by DualPipe (plan-schedules.ts overlapsAllToAll). With tp > 1 an MoE model needs
 * sequence parallelism (each tensor-parallel worker routes its own tokens).
 */
import { generateSchedule, autoSchedule, peakMemory, stageToRankMap, type CostModel, type Schedule } from '../schedule/index.ts';
import { ConfigError, requireInt } from '../util/errors.ts';
import { SCHEDULES, UPDATE_WINDOWS } from '../schedule/registry.ts';
import { checkDevice, type DeviceSpec } from './device.ts';
import { planPartition } from './partition.ts';
import type { Profile } from './profile.ts';
import { candidateCosts, epLocal, stateBytes, zeroLinkMs, type Layout, type PlanTarget } from './mesh-costs.ts';
import { checkEp } from './moe.ts';
import { epOf, epSizes, microBatchSizes } from './mesh-layouts.ts';
import { checkTensorParallel, tpCandidates } from './tensor-parallel.ts';
import { checkTransformer, modelFlopsPerStep, RECOMPUTE_MODES, transformerProfile, type Recompute, type TransformerModel } from './transformer.ts';
import { checkZeroChoice, highestZero, zeroStagesToTry, type ZeroChoice, type ZeroStage } from './zero.ts';
import { checkHostOptions, fitOverHost } from './host-options.ts';
import { extraWeightBytes, overlapsAllToAll, planRefusal, planStages, planStep, planVirtuals, planZeroStages, PLAN_SCHEDULES, type PlanSchedule } from './plan-schedules.ts';

export type { Layout } from './mesh-costs.ts';
export { candidateCosts } from './mesh-costs.ts';
export type { ZeroChoice, ZeroStage } from './zero.ts';

export { PLAN_SCHEDULES, type PlanSchedule } from './plan-schedules.ts';

/**
 * Bounds on the work of one plan, so that no request runs for minutes: actions simulated per candidate and
 * in all, the partitioner's dynamic program (stages × blocks² steps) per cut, and the layouts `auto` builds
 * for (its search plays many candidates per layout).
 */
export const MESH_PLAN_LIMITS = { devices: 65536, globalBatch: 1 << 20, microBatch: 64, actions: 100_000, totalActions: 3_000_000, partitionSteps: 1e8, autoActions: 12_000 } as const;

export type { MeshCandidate, MeshPlan, MeshPlanRequest } from './mesh-plan-types.ts';
import type { MeshCandidate, MeshPlan, MeshPlanRequest } from './mesh-plan-types.ts';

function checkRequest(r: MeshPlanRequest): void {
  checkTransformer(r.model);
  checkDevice(r.device);
  requireInt('devices', r.devices, 1, MESH_PLAN_LIMITS.devices);
  requireInt('globalBatch', r.globalBatch, 1, MESH_PLAN_LIMITS.globalBatch);
  if (r.maxMicroBatch !== undefined) requireInt('maxMicroBatch', r.maxMicroBatch, 1, MESH_PLAN_LIMITS.microBatch);
  for (const s of r.schedules ?? []) if (!(PLAN_SCHEDULES as readonly string[]).includes(s)) throw new ConfigError('schedules', s, `must be among ${PLAN_SCHEDULES.join(', ')}`);
  if (r.schedules && r.schedules.length === 0) throw new ConfigError('schedules', [], `must name at least one of ${PLAN_SCHEDULES.join(', ')}`);
  for (const x of r.recompute ?? []) if (!RECOMPUTE_MODES.includes(x)) throw new ConfigError('recompute', x, `must be among ${RECOMPUTE_MODES.join(', ')}`);
  if (r.recompute && r.recompute.length === 0) throw new ConfigError('recompute', [], `must name at least one of ${RECOMPUTE_MODES.join(', ')}`);
  if (r.tp !== undefined) {
    checkTensorParallel({ t: r.tp, sequenceParallel: r.sequenceParallel }, r.model, r.device);
    if (r.devices % r.tp !== 0) throw new ConfigError('tp', r.tp, `must divide the devices (${r.devices}): dp · tp · pp = N`);
  }
  if (r.sequenceParallel !== undefined && typeof r.sequenceParallel !== 'boolean') throw new ConfigError('sequenceParallel', r.sequenceParallel, 'must be true or false');
  if (r.model.moe && r.tp !== undefined && r.tp > 1 && r.sequenceParallel !== true) throw new ConfigError('tp', r.tp, 'above 1 on a model with experts needs sequenceParallel (each tensor-parallel worker routes its own 1/tp of the tokens, Megatron\'s rule)');
  if (r.ep !== undefined) {
    checkEp(r.ep, r.model);
    if (r.ep > r.devices) throw new ConfigError('ep', r.ep, `must be at most the devices (${r.devices}): the ep workers are a stage's dp × tp`);
    if (r.tp !== undefined && r.ep > 1 && r.ep % r.tp !== 0) throw new ConfigError('ep', r.ep, `must be a multiple of tp = ${r.tp}: an ep group is made of whole tensor-parallel groups`);
  }
  checkZeroChoice(r.zero);
  checkHostOptions(r.hostOptions, r.device);
}

/** The recomputation modes the request lets a layout try, cheapest first. */
function recomputeModes(req: MeshPlanRequest): Recompute[] {
  return RECOMPUTE_MODES.filter((x) => !req.recompute || req.recompute.includes(x));
}

export interface Scored {
  cand: MeshCandidate;
  fits: boolean;
}

export type Evaluate = (l: Layout, name: PlanSchedule, v: number, recompute: Recompute, given?: Schedule) => Scored | null;

/** A candidate's step left unsimulated (makeEvaluator's `unfit: 'skip'`): every time NaN. */
const UNPRICED = { makespan: NaN, computeMakespan: NaN, bubble: NaN, exposedAllReduce: NaN, allReduceShare: NaN } as const;

/**
 * Prices candidates of one request (profiles, cuts and schedules cached); returns null for a schedule the sizes do
 * not allow. A candidate's memory is counted before its step is simulated: with `unfit: 'skip'` (a search that keeps
 * only what fits) one that fits neither the device nor, where the request allows it, over the host link is not
 * simulated, its times NaN (fits false, its memory as counted); 'price' (the default) simulates every candidate.
 */
export function makeEvaluator(req: MeshPlanRequest, o: { unfit?: 'price' | 'skip' } = {}): { evaluate: Evaluate; scored: Scored[]; count: () => number } {
  checkRequest(req);
  const { model, device, devices: N, globalBatch: B } = req;
  const capacity = device.memoryGB * 1e9;
  const peak = (model.bytesPerElement === 4 ? device.peakTflopsFp32 : device.peakTflops) * 1e12;
  const flopsPerStep = modelFlopsPerStep(model, B);
  const profiles = new Map<string, Profile>();
  const profileOf = (l: Layout, recompute: Recompute, name: PlanSchedule): Profile => {
    const t = l.tp ?? 1;
    const ep = epOf(req, l, name);
    const k = `${l.b}/${recompute}/${t}/${ep.n}/${ep.local}/${ep.overlap}`;
    let p = profiles.get(k);
    if (!p) profiles.set(k, (p = transformerProfile(model, { microBatch: l.b, recompute, tp: { t, sequenceParallel: req.sequenceParallel }, ep }, device)));
    return p;
  };
  const rangesCache = new Map<string, [number, number][]>();
  const rangesOf = (l: Layout, recompute: Recompute, stages: number, name: PlanSchedule): [number, number][] => {
    // Every compute time of the analytic profile is linear in b, so without tensor or expert parallelism the cut
    // does not depend on it; the collectives' latency is not, so with t > 1 or ep > 1 each b has its own cut.
    const t = l.tp ?? 1;
    const ep = l.ep ?? 1;
    const k = `${recompute}/${stages}/${t}/${ep}/${overlapsAllToAll(name)}${t > 1 || ep > 1 ? `/${l.b}/${epLocal(l, device.devicesPerNode)}` : ''}`;
    let r = rangesCache.get(k);
    if (!r) rangesCache.set(k, (r = planPartition(profileOf(l, recompute, name), stages).ranges));
    return r;
  };
  // One schedule per (kind, pp, m, v): every recomputation mode and every layout of the same pp and m plays the same
  // plain value (nothing downstream writes to it), so it is generated, and validated, once per plan; a refusal too.
  const schedules = new Map<string, Schedule | ConfigError>();
  const scheduleOf = (name: string, pp: number, m: number, v?: number): Schedule => {
    const k = `${name}/${pp}/${m}/${v ?? ''}`;
    let s = schedules.get(k);
    if (s === undefined) {
      try {
        s = generateSchedule(name, pp, m, v);
      } catch (e) {
        if (!(e instanceof ConfigError)) throw e;
        s = e;
      }
      schedules.set(k, s);
    }
    if (s instanceof ConfigError) throw s;
    return s;
  };
  const scored: Scored[] = [];
  let evaluated = 0;
  const evaluate: Evaluate = (l, name, v, recompute, given) => {
    const stages = l.pp * v;
    const t = l.tp ?? 1;
    // The cut sees each MoE layer's all-to-alls; the simulator plays them from the costs (costs.ep) on a profile without.
    const profile = profileOf({ ...l, ep: 1 }, recompute, name);
    const ranges = rangesOf(l, recompute, stages, name);
    const play = { overlap: overlapsAllToAll(name), fullRecompute: recompute === 'full' };
    // The schedule's stages (a copy's stage j holds the model's stage j's blocks) and where they sit.
    const at = planStages(name, l.pp, v, ranges);
    const s2r = given?.stageToRank ?? at.stageToRank;
    let schedule = given;
    if (!schedule) {
      try {
        schedule = scheduleOf(name, l.pp, l.m, v);
      } catch (e) {
        if (e instanceof ConfigError) return null;
        throw e;
      }
    }
    evaluated++;
    const base = candidateCosts(req, profile, at.ranges, s2r, l, play);
    const { zero, worst } = leastZero(req, at.ranges, s2r, l, base, schedule, capacity, extraWeightBytes(req, name, at, l), planZeroStages(name, req.zero, l.dp));
    const zl = { ...l, zero };
    // Only ZeRO-3 changes the simulator's costs (zero.ts); ZeRO-2's extra reduce-scatters bound the step below.
    const priced = o.unfit !== 'skip' || worst.sum <= capacity || Boolean(req.hostOptions);
    const sim = priced ? planStep(name, schedule, zero === 3 ? candidateCosts(req, profile, at.ranges, s2r, zl, play) : base, scheduleOf) : UNPRICED;
    const stepMs = Math.max(sim.makespan, zeroLinkMs(req, at.ranges, s2r, zl));
    // Nothing fits on the device alone: optimizer offload or swapping over the host link, the fastest that fits (host-options.ts).
    const state = (extra = extraWeightBytes(req, name, at, l)) => stateBytes(req, at.ranges, s2r, l.pp, zero, l.dp, t).map((x, r) => x + extra[r]);
    const hosted = worst.sum > capacity && req.hostOptions ? fitOverHost({ model, device, schedule, name, costs: zero === 3 ? candidateCosts(req, profile, at.ranges, s2r, zl) : base, zero, dp: l.dp, state: state(), stepMs, linkMs: zeroLinkMs(req, at.ranges, s2r, zl), capacity }) : null;
    const exposed = stepMs - sim.computeMakespan;
    const cand: MeshCandidate = {
      dp: l.dp,
      pp: l.pp,
      tp: t,
      ep: l.ep ?? 1,
      schedule: name,
      virtual: v,
      microBatch: l.b,
      microbatches: l.m,
      zero,
      recompute,
      stepMs,
      computeMs: sim.computeMakespan,
      bubble: sim.bubble,
      exposedAllReduceMs: exposed,
      allReduceShare: stepMs > 0 ? exposed / stepMs : 0,
      memoryBytes: worst.sum,
      stateBytes: worst.st,
      activationBytes: worst.act,
      ...(hosted ? { stepMs: hosted.stepMs, memoryBytes: hosted.sum, stateBytes: hosted.st, activationBytes: hosted.act, offload: hosted.offload, swap: hosted.swap } : {}),
      mfu: flopsPerStep / ((stepMs / 1e3) * N * peak),
      ranges,
    };
    const out = { cand, fits: worst.sum <= capacity || hosted !== null };
    scored.push(out);
    return out;
  };
  return { evaluate, scored, count: () => evaluated };
}

interface DeviceMemory {
  st: number;
  act: number;
  sum: number;
}

/**
 * The least ZeRO stage the request lets the layout try at which every device fits (zero.ts's order,
 * 0 → 1 → 2 → 3 where dp > 1), or, when none does, the one that comes closest (ZeRO-3's gathered block
 * can outweigh what it shards on a small dp); with the fullest device at it.
 */
function leastZero(
  req: MeshPlanRequest,
  ranges: [number, number][],
  s2r: readonly number[],
  l: Layout,
  costs: CostModel,
  schedule: Schedule,
  capacity: number,
  extra: readonly number[],
  stages: readonly ZeroStage[],
): { zero: ZeroStage; worst: DeviceMemory } {
  const act = peakMemory(schedule, Float64Array.from(costs.heldBytes as number[])).map((x) => x.peakBytes);
  // The state, with the weight versions a schedule keeps beyond it (PipeDream-2BW's second), per rank.
  const worstAt = (zero: ZeroStage) =>
    stateBytes(req, ranges, s2r, l.pp, zero, l.dp, l.tp ?? 1, l.ep ?? 1)
      .map((x, r) => ({ st: x + extra[r], act: act[r], sum: x + extra[r] + act[r] }))
      .reduce((a, x) => (x.sum > a.sum ? x : a));
  let best = { zero: stages[0], worst: worstAt(stages[0]) };
  for (const z of stages.slice(1)) {
    if (best.worst.sum <= capacity) break;
    const worst = worstAt(z);
    if (worst.sum < best.worst.sum || worst.sum <= capacity) best = { zero: z, worst };
  }
  return best;
}

export function planMesh(req: MeshPlanRequest): MeshPlan {
  const { evaluate, scored, count } = makeEvaluator(req, { unfit: 'skip' });
  const { model, devices: N, globalBatch: B } = req;
  const blocks = model.layers + 2;
  const wanted = new Set<PlanSchedule>(req.schedules ?? PLAN_SCHEDULES);
  const recomputes = recomputeModes(req);
  const skipped: string[] = [];
  const layouts: Layout[] = [];
  // Tensor parallelism innermost: t workers per stage inside a node, then pp, dp outermost (DESIGN.md's mesh order).
  // The largest t first: when the simulation budget runs out on a large mesh, what is left untried is the
  // layouts with the most pipeline stages and replicas per stage, the slowest to simulate.
  // An MoE model splits its layers t ways only with sequence parallelism (checkRequest refuses a fixed tp without it).
  const tps = req.tp !== undefined ? [req.tp] : tpCandidates(model, req.device).filter((t) => N % t === 0 && (t === 1 || !model.moe || req.sequenceParallel === true));
  for (const tp of tps.reverse()) {
    const G = N / tp;
    for (let pp = 1; pp <= Math.min(G, model.layers); pp++) {
      if (G % pp !== 0) continue;
      const dp = G / pp;
      if (B % dp !== 0) {
        skipped.push(`dp × tp × pp = ${dp} × ${tp} × ${pp}: the global batch ${B} is not divisible by dp = ${dp}`);
        continue;
      }
      for (const ep of epSizes(model, req.ep, dp, tp, skipped)) for (const b of microBatchSizes(B / dp, req.maxMicroBatch ?? 8)) layouts.push({ dp, pp, tp, ep, b, m: B / dp / b });
    }
  }
  let spent = 0;
  for (const l of layouts) {
    const options: [PlanSchedule, number][] = [];
    for (const name of wanted) {
      if (name === 'auto') continue;
      if (l.pp === 1 && name !== '1f1b') continue;
      for (const v of planVirtuals(name)) {
        const refused = planRefusal(name, l, v, req.zero);
        if (refused) skipped.push(refused);
        else options.push([name, v]);
      }
    }
    for (const [name, v] of options) {
      // DualPipe's copies double its actions; a stream's steady state plays one step and two.
      const kind = SCHEDULES[name];
      const actions = l.pp * v * l.m * 3 * kind.copies * (UPDATE_WINDOWS[kind.update].stream ? 3 : 1);
      const dpSteps = l.pp * v * blocks * blocks;
      if (l.pp * v > blocks) {
        skipped.push(`${name} v=${v} on pp = ${l.pp}: ${l.pp * v} stages, more than the model's ${blocks} blocks`);
        continue;
      }
      if (actions > MESH_PLAN_LIMITS.actions) {
        skipped.push(`${name} v=${v}, dp × tp × pp = ${l.dp} × ${l.tp} × ${l.pp}, b = ${l.b}: ${actions} actions, more than the planner simulates (${MESH_PLAN_LIMITS.actions})`);
        continue;
      }
      if (dpSteps > MESH_PLAN_LIMITS.partitionSteps) {
        skipped.push(`${name} v=${v} on pp = ${l.pp}: cutting ${blocks} blocks into ${l.pp * v} stages takes more steps than the planner allows (${MESH_PLAN_LIMITS.partitionSteps})`);
        continue;
      }
      if (spent + actions > MESH_PLAN_LIMITS.totalActions) {
        skipped.push(`${name} v=${v}, dp × tp × pp = ${l.dp} × ${l.tp} × ${l.pp}, b = ${l.b}: the plan's budget of ${MESH_PLAN_LIMITS.totalActions} simulated actions is spent`);
        continue;
      }
      spent += actions;
      // Recomputation only adds time: the next mode is tried only where the last does not fit.
      for (const [i, recompute] of recomputes.entries()) {
        if (i > 0) spent += actions;
        const s = evaluate(l, name, v, recompute);
        // A fit over the host link may be slower than recomputing: the next mode is tried too, the fastest kept.
        if (!s || (s.fits && !s.cand.offload && !s.cand.swap)) break;
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
  const best = new Map<string, { stepMs: number; recompute: Recompute }>();
  for (const x of scored) {
    if (!x.fits) continue;
    const k = `${x.cand.dp}/${x.cand.tp}/${x.cand.ep}/${x.cand.pp}/${x.cand.microBatch}`;
    const prev = best.get(k);
    if (!prev || x.cand.stepMs < prev.stepMs) best.set(k, { stepMs: x.cand.stepMs, recompute: x.cand.recompute });
  }
  const top = [...best.entries()].sort((a, b) => a[1].stepMs - b[1].stepMs).slice(0, req.autoLayouts ?? 3);
  for (const [k, { recompute }] of top) {
    const l = layouts.find((x) => `${x.dp}/${x.tp ?? 1}/${x.ep ?? 1}/${x.pp}/${x.b}` === k);
    const blocks = req.model.layers + 2;
    if (!l || l.pp === 1 || l.pp > blocks || l.pp * l.m * 3 > MESH_PLAN_LIMITS.autoActions || l.pp * blocks * blocks > MESH_PLAN_LIMITS.partitionSteps) continue;
    const tp = { t: l.tp ?? 1, sequenceParallel: req.sequenceParallel };
    const [ranges, s2r] = [planPartition(transformerProfile(req.model, { microBatch: l.b, recompute, tp, ep: epOf(req, l, 'auto') }, req.device), l.pp).ranges, stageToRankMap(l.pp, 1, 'loop')];
    const costs = candidateCosts(req, transformerProfile(req.model, { microBatch: l.b, recompute, tp }, req.device), ranges, s2r, l, { overlap: false, fullRecompute: recompute === 'full' });
    const capBytes = autoCap(req, ranges, s2r, l, costs, capacity);
    if (capBytes === null) continue;
    const schedule = autoSchedule(l.pp, l.m, costs, { bytes: capBytes }).schedule;
    evaluate(l, 'auto', 1, recompute, schedule);
  }
}

/**
 * What `auto` may fill with activations on a layout: the device's memory less the fullest device's state at
 * the cap's ZeRO stage, ZeRO-1 where the request allows it (it costs the all-reduce's time) or else the least
 * it allows, a higher stage only where that leaves no room for one micro-batch; null when none does.
 * planMesh and candidateSchedule both ask it, so an `auto` candidate is rebuilt as it was planned.
 */
function autoCap(req: PlanTarget & Pick<MeshPlanRequest, 'zero'>, ranges: [number, number][], s2r: readonly number[], l: Layout, costs: CostModel, capacity: number): number | null {
  const oneMicrobatch = Math.max(...(costs.heldBytes as number[]));
  const stages = zeroStagesToTry(req.zero, l.dp);
  for (const z of stages.slice(Math.max(0, stages.indexOf(1)))) {
    const cap = capacity - Math.max(...stateBytes(req, ranges, s2r, l.pp, z, l.dp, l.tp ?? 1, l.ep ?? 1));
    if (cap >= oneMicrobatch) return cap;
  }
  return null;
}

function noFit(req: MeshPlanRequest, scored: Scored[], skipped: string[]): ConfigError {
  if (scored.length === 0) {
    return new ConfigError('globalBatch', req.globalBatch, `leaves no layout to try on ${req.devices} devices: ${skipped.slice(0, 3).join('; ') || 'no dp × pp with pp ≤ layers divides the devices'}`);
  }
  const least = scored.reduce((a, x) => (x.cand.memoryBytes < a.cand.memoryBytes ? x : a)).cand;
  const gb = Math.ceil(least.memoryBytes / 1e8) / 10;
  const top = highestZero(req.zero);
  const tried = top === 0 ? 'no ZeRO' : req.zero === top ? `ZeRO-${top}` : `ZeRO up to ZeRO-${top}`;
  return new ConfigError(
    'device.memoryGB',
    req.device.memoryGB,
    `no layout of the ${req.devices} devices fits in it (every dp × tp × pp, schedule, micro-batch, ${tried}, recomputation ${recomputeModes(req).join(' → ')} tried); the smallest memory that would fit is ${gb} GB: dp × tp × pp = ${least.dp} × ${least.tp} × ${least.pp}, ${least.schedule}${least.virtual > 1 ? ` v=${least.virtual}` : ''}, micro-batch ${least.microBatch}${least.zero ? `, ZeRO-${least.zero}` : ''}${least.recompute !== 'none' ? `, ${least.recompute} recomputation` : ''}`,
  );
}

/**
 * The schedule of a candidate (auto rebuilt within the same cap), for drawing or export: one step's (for
 * PipeDream-2BW, one step's micro-batches of its stream), with the costs it was priced under; planStep
 * (plan-schedules.ts) gives its priced step from them.
 */
export function candidateSchedule(req: MeshPlanRequest, c: MeshCandidate): { schedule: Schedule; costs: CostModel } {
  const l = { dp: c.dp, pp: c.pp, tp: c.tp, ep: c.ep, b: c.microBatch, m: c.microbatches };
  const profile = transformerProfile(req.model, { microBatch: c.microBatch, recompute: c.recompute, tp: { t: c.tp, sequenceParallel: req.sequenceParallel } }, req.device);
  const at = planStages(c.schedule, c.pp, c.virtual, c.ranges);
  const s2r = at.stageToRank;
  const play = { overlap: overlapsAllToAll(c.schedule), fullRecompute: c.recompute === 'full' };
  const base = candidateCosts(req, profile, at.ranges, s2r, l, play);
  const costs = c.zero === 3 ? candidateCosts(req, profile, at.ranges, s2r, { ...l, zero: c.zero }, play) : base;
  if (c.schedule !== 'auto') return { schedule: generateSchedule(c.schedule, c.pp, c.microbatches, c.virtual), costs };
  const capBytes = autoCap(req, c.ranges, s2r, l, base, req.device.memoryGB * 1e9);
  if (capBytes === null) throw new ConfigError('candidate', c.schedule, 'is an auto schedule with no room for one micro-batch on its layout (not one planMesh returns)');
  return { schedule: autoSchedule(c.pp, c.microbatches, base, { bytes: capBytes }).schedule, costs };
}
