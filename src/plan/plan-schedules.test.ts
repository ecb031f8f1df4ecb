import { describe, expect, it } from 'vitest';
import { generateSchedule, simulate, simulateStep, validateSchedule } from '../schedule/index.ts';
import { SCHEDULES } from '../schedule/registry.ts';
import { DEVICE_PRESETS } from './device.ts';
import { candidateSchedule, planMesh, type MeshCandidate, type MeshPlan, type MeshPlanRequest } from './mesh-plan.ts';
import { planStages, planStep, planVirtuals, PLAN_SCHEDULES } from './plan-schedules.ts';
import type { TransformerModel } from './transformer.ts';

const small: TransformerModel = { layers: 8, hidden: 1024, heads: 16, seq: 1024, vocab: 32000, bytesPerElement: 2 };
/** Four devices, one sequence per micro-batch, no tensor parallelism: dp × pp ∈ {4 × 1, 2 × 2, 1 × 4}. */
const four = (globalBatch: number, more: Partial<MeshPlanRequest> = {}): MeshPlanRequest => ({ model: small, device: DEVICE_PRESETS.h100, devices: 4, globalBatch, tp: 1, maxMicroBatch: 1, ...more });
const find = (plan: MeshPlan, schedule: string, dp: number, pp: number, v = 1): MeshCandidate | undefined =>
  plan.candidates.find((c) => c.schedule === schedule && c.dp === dp && c.pp === pp && c.virtual === v && c.recompute === 'none');

describe('the planner searches PipeDream-2BW, DualPipe and the interleaved zero bubble', () => {
  it('declares each one’s virtual stages and placement from the registry', () => {
    expect(PLAN_SCHEDULES).toEqual(expect.arrayContaining(['pipedream-2bw', 'dualpipe', 'interleaved-zb']));
    expect(Object.fromEntries(PLAN_SCHEDULES.map((n) => [n, planVirtuals(n)]))).toEqual({
      '1f1b': [1], 'interleaved-1f1b': [2, 4], 'zb-h1': [1], 'interleaved-zb': [2, 4], 'zb-v': [2], 'dualpipe-v': [2], dualpipe: [1], hanayo: [2, 4], 'pipedream-2bw': [1], auto: [1],
    });
    // DualPipe: rank r holds stage r of copy 0 and p − 1 − r of copy 1, as its generator places them.
    expect(planStages('dualpipe', 4, 1, [[0, 1], [1, 2], [2, 3], [3, 4]]).stageToRank).toEqual(generateSchedule('dualpipe', 4, 8).stageToRank);
  });

  it('picks PipeDream-2BW where the flush bubble dominates and memory allows its second weight version; drops it where that does not fit', () => {
    const plan = planMesh(four(4));
    const bw = plan.candidates[0];
    expect([bw.schedule, bw.dp, bw.pp, bw.microbatches]).toEqual(['pipedream-2bw', 1, 4, 4]);
    const ofb = find(plan, '1f1b', 1, 4);
    const zb = find(plan, 'zb-h1', 1, 4);
    if (!ofb || !zb) throw new Error('1F1B and ZB-H1 on 1 × 4 were planned');
    // No flush: the step is the stream's steady state, the simulator's 2m micro-batches less its m.
    const { schedule, costs } = candidateSchedule(four(4), bw);
    expect(schedule.order).toEqual(generateSchedule('1f1b', 4, 4).order);
    const steady = simulateStep(generateSchedule('pipedream-2bw', 4, 8), costs).makespan - simulateStep(schedule, costs).makespan;
    expect(bw.stepMs).toBeCloseTo(steady, 9);
    expect(bw.stepMs).toBeLessThan(zb.stepMs);
    expect(bw.bubble).toBeLessThan(zb.bubble);
    // Memory: 1F1B's activations, and one more copy of the weights (2 of the 16 bytes a parameter's state takes).
    expect(bw.activationBytes).toBe(ofb.activationBytes);
    expect(bw.stateBytes).toBeCloseTo((ofb.stateBytes * 18) / 16, 0);
    // A device between the two: 1F1B fits, 2BW's second version does not.
    const gb = (ofb.memoryBytes + bw.memoryBytes) / 2 / 1e9;
    const tight = planMesh(four(4, { device: { ...DEVICE_PRESETS.h100, memoryGB: gb } }));
    expect(tight.candidates.some((c) => c.schedule === 'pipedream-2bw' && c.recompute === 'none' && c.pp === 4)).toBe(false);
    // Selective recomputation (each layer's attention core again) makes room for 2BW's second version for a few
    // per cent of its step; with full recomputation as the only saving, a flushed schedule wins.
    const t0 = tight.candidates[0];
    expect([t0.schedule, t0.recompute]).toEqual(['pipedream-2bw', 'selective']);
    expect(t0.stepMs).toBeGreaterThan(bw.stepMs);
    expect(t0.activationBytes).toBeLessThan(bw.activationBytes);
    expect(planMesh(four(4, { device: { ...DEVICE_PRESETS.h100, memoryGB: gb }, recompute: ['none', 'full'] })).candidates[0].schedule).not.toBe('pipedream-2bw');
  });

  it('refuses PipeDream-2BW by name with m < p', () => {
    const plan = planMesh(four(2, { schedules: ['1f1b', 'pipedream-2bw'] }));
    expect(plan.skipped).toContain('pipedream-2bw on dp × tp × pp = 1 × 1 × 4, b = 1, m = 2: microbatches = 2: PipeDream-2BW needs m ≥ p = 4: a stage makes a new weight version every m micro-batches and keeps at most two, so a block of m micro-batches must cover the p − 1 forwards the first stage runs ahead');
    expect(plan.candidates.every((c) => c.schedule !== 'pipedream-2bw')).toBe(true);
  });

  it('plans PipeDream-2BW on replicas at ZeRO-0 with one all-reduce per stage and block in its steady state, and skips it where ZeRO is asked for', () => {
    const req = four(4, { schedules: ['1f1b', 'pipedream-2bw'] });
    const replicas = planMesh(req);
    const bw = find(replicas, 'pipedream-2bw', 2, 2);
    if (!bw) throw new Error('2BW on 2 × 2 was planned');
    expect(bw.zero).toBe(0);
    // The steady state of the stream with each block's all-reduce played where the runtime runs it (simulate-blocks.ts).
    const { schedule, costs } = candidateSchedule(req, bw);
    const blocks = { ...costs, allReduce: { ...costs.allReduce!, every: schedule.microbatches } };
    const steady = simulateStep(generateSchedule('pipedream-2bw', 2, 2 * schedule.microbatches), blocks).makespan - simulateStep(schedule, blocks).makespan;
    expect(bw.stepMs).toBeCloseTo(steady, 9);
    // The block's all-reduce costs the step what a free link would not.
    const free = { ...costs, allReduce: { ...costs.allReduce!, latency: 0, bandwidth: Infinity, every: schedule.microbatches } };
    const freeSteady = simulateStep(generateSchedule('pipedream-2bw', 2, 2 * schedule.microbatches), free).makespan - simulateStep(schedule, free).makespan;
    expect(bw.stepMs).toBeGreaterThan(freeSteady);
    const sharded = planMesh({ ...req, zero: 2 });
    expect(sharded.skipped).toContain('pipedream-2bw on dp × tp × pp = 2 × 1 × 2, b = 1, m = 2: its replicas all-reduce each block\'s gradients without ZeRO (as the tab runs it), and the plan asks for ZeRO-2');
    expect(sharded.candidates.filter((c) => c.schedule === 'pipedream-2bw').map((c) => c.dp)).toEqual([1]);
  });

  it('picks DualPipe over 1F1B and ZB-H1 where its smaller bubble pays for twice the parameters and the copies’ gradient sum', () => {
    const req = four(8, { schedules: ['1f1b', 'zb-h1', 'dualpipe'] });
    const plan = planMesh(req);
    const dual = plan.candidates[0];
    expect([dual.schedule, dual.dp, dual.pp, dual.microbatches]).toEqual(['dualpipe', 1, 4, 8]);
    const zb = find(plan, 'zb-h1', 1, 4);
    if (!zb) throw new Error('ZB-H1 on 1 × 4 was planned');
    expect(dual.bubble).toBeLessThan(zb.bubble);
    expect(dual.stateBytes).toBeGreaterThan(1.4 * zb.stateBytes);
    const { schedule, costs } = candidateSchedule(req, dual);
    expect(validateSchedule(schedule)).toEqual({ ok: true });
    expect(schedule.copies).toBe(2);
    // The step: the simulator's, the copies' gradients summed between ranks r and p − 1 − r after each rank's compute
    // (dp = 1: nothing else after it), over the pipeline link's α–β (simulate-copies.ts).
    const sim = simulate(schedule, costs);
    expect(sim.copySum).toBeDefined();
    const cs = sim.copySum!;
    expect(cs.time.every((t) => t > 0)).toBe(true);
    expect(sim.makespan).toBeGreaterThan(cs.before);
    expect(dual.stepMs).toBeCloseTo(sim.makespan, 9);
    expect(dual.exposedAllReduceMs).toBeCloseTo(sim.makespan - cs.before, 9);
    expect(planStep('dualpipe', schedule, costs).makespan).toBeCloseTo(dual.stepMs, 9);
  });

  it('refuses DualPipe by name on an odd pp and with m < 2p', () => {
    const odd = planMesh({ ...four(6, { schedules: ['1f1b', 'dualpipe'] }), devices: 3 });
    expect(odd.skipped).toContain('dualpipe on dp × tp × pp = 1 × 1 × 3, b = 1, m = 6: ranks = 3: DualPipe needs an even number of ranks: its two copies meet in the middle, rank r pairing with rank p − 1 − r');
    const few = planMesh(four(4, { schedules: ['1f1b', 'dualpipe'] }));
    expect(few.skipped.some((x) => x.startsWith('dualpipe on dp × tp × pp = 1 × 1 × 4, b = 1, m = 4: microbatches = 4: DualPipe needs an even m ≥ 2p = 8'))).toBe(true);
    expect([...odd.candidates, ...few.candidates].every((c) => c.schedule !== 'dualpipe')).toBe(true);
  });

  it('prices the interleaved zero bubble below interleaved 1F1B on every layout both run, v = 2 and 4', () => {
    const plan = planMesh(four(8));
    let pairs = 0;
    for (const zb of plan.candidates.filter((c) => c.schedule === 'interleaved-zb')) {
      const il = plan.candidates.find((c) => c.schedule === 'interleaved-1f1b' && c.dp === zb.dp && c.pp === zb.pp && c.virtual === zb.virtual && c.microBatch === zb.microBatch && c.recompute === zb.recompute);
      if (!il) continue;
      pairs++;
      expect(zb.stepMs).toBeLessThan(il.stepMs);
      expect(zb.bubble).toBeLessThan(il.bubble);
    }
    expect(pairs).toBeGreaterThanOrEqual(2);
  });

  it('plans hanayo with one and two waves on its zig-zag, its own order priced, two waves refused by name where the stages outnumber the blocks', () => {
    // Rank r holds stages r and 2p − 1 − r of every wave, as its generator places them.
    expect(planStages('hanayo', 4, 4, []).stageToRank).toEqual(generateSchedule('hanayo', 4, 8, 4).stageToRank);
    const req = four(8, { schedules: ['interleaved-1f1b', 'hanayo'] });
    const plan = planMesh(req);
    const waves = plan.candidates.filter((c) => c.schedule === 'hanayo' && c.pp > 1);
    expect(new Set(waves.map((c) => c.virtual))).toEqual(new Set([2, 4]));
    for (const h of waves) {
      const { schedule } = candidateSchedule(req, h);
      expect(schedule.order).toEqual(generateSchedule('hanayo', h.pp, h.microbatches, h.virtual).order);
    }
    expect(plan.skipped).toContain('hanayo v=4 on pp = 4: 16 stages, more than the model\'s 10 blocks');
  });
});
