import { describe, expect, it } from 'vitest';
import { simulate, validateSchedule } from '../schedule/index.ts';
import { DEVICE_PRESETS } from './device.ts';
import { candidateCosts, candidateSchedule, planMesh, type MeshPlanRequest } from './mesh-plan.ts';
import { zeroLinkMs } from './mesh-costs.ts';
import { transformerProfile, type TransformerModel } from './transformer.ts';
import { planPartition } from './partition.ts';
import { planStep } from './plan-schedules.ts';
import { stageToRankMap } from '../schedule/index.ts';

const small: TransformerModel = { layers: 8, hidden: 1024, heads: 16, seq: 1024, vocab: 32000, bytesPerElement: 2 };
const gpt7b: TransformerModel = { layers: 32, hidden: 4096, heads: 32, seq: 2048, vocab: 50257, bytesPerElement: 2 };

describe('the mesh planner', () => {
  it('plans a 64-device GPT: every candidate a dp × tp × pp = 64 that fits, fastest first, each agreeing with a fresh simulation', () => {
    const req: MeshPlanRequest = { model: gpt7b, device: DEVICE_PRESETS.h100, devices: 64, globalBatch: 512 };
    const t0 = performance.now();
    const plan = planMesh(req);
    // A smoke bound only (the CLI's run shows the speed; the machine is shared).
    expect(performance.now() - t0).toBeLessThan(20_000);
    expect(plan.candidates.length).toBeGreaterThan(5);
    const peak = DEVICE_PRESETS.h100.peakTflops * 1e12;
    // Megatron eq. 3 without recomputation: the model FLOPs of one step of 512 sequences.
    const { seq: s, layers: l, hidden: h, vocab: V } = gpt7b;
    const stepFlops = 72 * 512 * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    for (let i = 0; i < plan.candidates.length; i++) {
      const c = plan.candidates[i];
      expect(c.dp * c.tp * c.pp).toBe(64);
      expect(c.dp * c.microBatch * c.microbatches).toBe(512);
      expect(c.memoryBytes).toBeLessThanOrEqual(80e9);
      if (i > 0) expect(c.stepMs).toBeGreaterThanOrEqual(plan.candidates[i - 1].stepMs);
      expect(c.mfu).toBeCloseTo(stepFlops / ((c.stepMs / 1e3) * 64 * peak), 9);
    }
    for (const c of plan.candidates.slice(0, 4)) {
      const { schedule, costs } = candidateSchedule(req, c);
      expect(validateSchedule(schedule)).toEqual({ ok: true });
      // The simulator's step (a stream's steady state; DualPipe's copies summed in it: plan-schedules.ts).
      const sim = planStep(c.schedule, schedule, costs);
      if (c.schedule !== 'pipedream-2bw') expect(sim.makespan).toBeGreaterThanOrEqual(simulate(schedule, costs).makespan - 1e-9);
      // ZeRO-2 and 3 also hold the step to what the links carry (zero.ts); 0 below ZeRO-2.
      const l = { dp: c.dp, pp: c.pp, tp: c.tp, b: c.microBatch, m: c.microbatches, zero: c.zero };
      expect(Math.max(sim.makespan, zeroLinkMs(req, c.ranges, schedule.stageToRank, l))).toBeCloseTo(c.stepMs, 6);
      expect(sim.bubble).toBeCloseTo(c.bubble, 9);
    }
    // ZeRO only where the plain layout would not fit, and no more of it: dp × pp = 64 × 1 holds the whole
    // 6.7B model, 16 bytes a parameter without ZeRO (107 GB), 4.19 with ZeRO-1 (28 GB) beside b = 1's activations.
    const dpOnly = plan.candidates.find((c) => c.pp === 1 && c.tp === 1 && c.microBatch === 1);
    expect(dpOnly?.zero).toBe(1);
  });

  it('prices links by placement: NVLink inside a node, a ring across nodes on as many NICs as it has workers per node', () => {
    const model = { ...small, layers: 16 };
    const req: MeshPlanRequest = { model, device: DEVICE_PRESETS.h100, devices: 16, globalBatch: 16 };
    const profile = transformerProfile(model, { microBatch: 1, recompute: 'none' }, req.device);
    const costsOf = (dp: number, pp: number) => candidateCosts(req, profile, planPartition(profile, pp).ranges, stageToRankMap(pp, 1, 'loop'), { dp, pp, b: 1, m: 16 / dp });
    const nv = 450e6; // bytes per ms
    const ib = 50e6;
    expect(costsOf(8, 1).allReduce).toEqual({ latency: 0.005, bandwidth: nv });
    // 8 × 2 on nodes of 8: each stage group has 4 workers on each of two nodes, 4 NICs: 200 GB/s.
    expect(costsOf(8, 2).allReduce).toEqual({ latency: 0.01, bandwidth: 4 * ib });
    // 2 × 8: one worker of each group per node: one NIC.
    expect(costsOf(2, 8).allReduce).toEqual({ latency: 0.01, bandwidth: ib });
    const c = costsOf(2, 8);
    const lat = c.latency as (a: number, b: number) => number;
    const bw = c.bandwidth as (a: number, b: number) => number;
    expect([lat(0, 1), bw(0, 1)]).toEqual([0.005, nv]);
    expect([lat(6, 7), bw(6, 7)]).toEqual([0.005, nv]);
    // 1 × 16: ranks 7 → 8 cross from node 0 to node 1.
    const one = costsOf(1, 16);
    expect((one.bandwidth as (a: number, b: number) => number)(7, 8)).toBe(ib);
    expect((one.bandwidth as (a: number, b: number) => number)(8, 9)).toBe(nv);
  });

  it('says the smallest memory that fits when nothing does, and that memory then plans', () => {
    const req: MeshPlanRequest = { model: small, device: { ...DEVICE_PRESETS.h100, memoryGB: 0.2 }, devices: 4, globalBatch: 16 };
    let message = '';
    try {
      planMesh(req);
    } catch (e) {
      message = String(e);
    }
    expect(message).toContain('device.memoryGB = 0.2: no layout of the 4 devices fits in it');
    const gb = Number(/smallest memory that would fit is ([\d.]+) GB/.exec(message)?.[1]);
    expect(gb).toBeGreaterThan(0.2);
    const plan = planMesh({ ...req, device: { ...req.device, memoryGB: gb } });
    expect(plan.candidates[0].memoryBytes).toBeLessThanOrEqual(gb * 1e9);
  });

  it('bounds its work: a 4096-layer model skips the cuts too costly to search and says why', () => {
    const deep: TransformerModel = { layers: 4096, hidden: 64, heads: 1, seq: 16, vocab: 100, bytesPerElement: 2 };
    const t0 = performance.now();
    const plan = planMesh({ model: deep, device: DEVICE_PRESETS.h100, devices: 8, globalBatch: 8, maxMicroBatch: 1 });
    expect(performance.now() - t0).toBeLessThan(60_000);
    // 8 stages × 4098² blocks > 1e8 steps of the partitioner: pp = 8 is skipped, pp ≤ 4 with v = 1 planned.
    expect(plan.skipped.some((x) => x.includes('on pp = 8: cutting 4098 blocks into 8 stages takes more steps than the planner allows'))).toBe(true);
    expect(plan.candidates.every((c) => c.pp * c.virtual * 4098 * 4098 <= 1e8)).toBe(true);
    expect(plan.candidates.length).toBeGreaterThan(0);
  });

  it('refuses bad requests by field, value and rule', () => {
    const req: MeshPlanRequest = { model: small, device: DEVICE_PRESETS.h100, devices: 4, globalBatch: 16 };
    expect(() => planMesh({ ...req, devices: 0 })).toThrow('devices = 0');
    expect(() => planMesh({ ...req, globalBatch: 2.5 })).toThrow('globalBatch = 2.5');
    expect(() => planMesh({ ...req, devices: 3, globalBatch: 16, model: { ...small, layers: 2 } })).toThrow('globalBatch = 16: leaves no layout to try on 3 devices');
    expect(() => planMesh({ ...req, schedules: ['gpipe' as never] })).toThrow('schedules = "gpipe": must be among');
    expect(() => planMesh({ ...req, model: { ...small, heads: 5 } })).toThrow('model.heads = 5');
    expect(() => planMesh({ ...req, device: { ...req.device, peakTflops: -1 } })).toThrow('device.peakTflops = -1');
  });
});
