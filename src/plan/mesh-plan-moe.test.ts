/** The mesh planner on MoE transformers: ep in the search, its placement, its memory, its refusals. */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import type { DeviceSpec } from './device.ts';
import { candidateCosts, epLocal, stateBytes } from './mesh-costs.ts';
import { allToAllTime, simulate } from '../schedule/index.ts';
import { expertWorkerOf, mesh, workerOf } from '../schedule/mesh.ts';
import { candidateSchedule, planMesh, type MeshPlanRequest } from './mesh-plan.ts';
import { planStep } from './plan-schedules.ts';
import { modelParams, transformerProfile, type TransformerModel } from './transformer.ts';

const model: TransformerModel = { layers: 4, hidden: 64, heads: 4, seq: 32, vocab: 128, bytesPerElement: 2, moe: { experts: 8, topK: 2, expertHidden: 32, sharedExperts: 1 } };
const device: DeviceSpec = { name: 'toy', peakTflops: 1, peakTflopsFp32: 0.5, efficiency: 0.5, memoryGB: 80, devicesPerNode: 4, bwIntraGBps: 100, bwInterGBps: 10, latIntraUs: 5, latInterUs: 10 };

function refusal(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('the mesh planner with experts', () => {
  it('holds the experts’ state / ep, sharded by ZeRO-1 over the dp · tp / ep workers that hold each expert, the rest over dp', () => {
    const experts = 4 * 8 * 3 * 64 * 32; // 4 MoE layers × 8 experts × three 64 × 32 matrices
    const dense = modelParams(model) - experts;
    // dp = 4, ep = 4: each device holds 2 experts a layer, each expert held by 4 · 1 / 4 = 1 worker (ZeRO-1 shards nothing of it).
    const got = stateBytes({ model, device }, [[0, 6]], [0], 1, 1, 4, 1, 4)[0];
    expect(got).toBe(dense * (2 + 2 + 12 / 4) + (experts / 4) * (2 + 2 + 12));
    // ep = 2: 4 experts a layer on a device, each held by 2 workers.
    expect(stateBytes({ model, device }, [[0, 6]], [0], 1, 1, 4, 1, 2)[0]).toBe(dense * 7 + (experts / 2) * (4 + 6));
  });

  it('places tp innermost, then ep, then pp, dp outermost: an ep group is ep devices side by side, and pushes the pipeline’s ranks apart', () => {
    // The mesh's numbering (schedule/mesh.ts): dp 4, 2 ranks, ep 4 — rank 0 of the four replicas is workers 0–3, rank 1 is 4–7.
    expect([0, 1, 2, 3].map((d) => expertWorkerOf(mesh(4, 2), 4, d, 0))).toEqual([0, 1, 2, 3]);
    expect([0, 1, 2, 3].map((d) => expertWorkerOf(mesh(4, 2), 4, d, 1))).toEqual([4, 5, 6, 7]);
    // tp 2, ep 4: 2 replicas a group, ((⌊d/2⌋ · 2 + r) · 2 + d mod 2) · 2 + j.
    expect(expertWorkerOf(mesh(4, 2, 2), 4, 1, 0, 1)).toBe(3);
    expect(expertWorkerOf(mesh(4, 2, 2), 4, 2, 0, 0)).toBe(8);
    // ep = tp: the tp group is the ep group, workerOf's numbering: (3 · 2 + 1) · 2 + 1.
    expect(expertWorkerOf(mesh(4, 2, 2), 2, 3, 1, 1)).toBe(15);
    expect(workerOf(mesh(4, 2, 2), 3, 1, 1)).toBe(15);
    expect(() => expertWorkerOf(mesh(4, 2, 2), 3, 0, 0)).toThrow(/^ep = 3: must be a multiple of tp = 2/);
    expect(epLocal({ dp: 4, pp: 2, tp: 1, ep: 4 }, 4)).toBe(4);
    expect(epLocal({ dp: 4, pp: 2, tp: 1, ep: 4 }, 2)).toBe(2);
    expect(epLocal({ dp: 8, pp: 1, tp: 2, ep: 8 }, 4)).toBe(4);
    expect(epLocal({ dp: 4, pp: 2, tp: 1, ep: 1 }, 4)).toBe(1);
    const profile = transformerProfile(model, { microBatch: 1, recompute: 'none' }, device);
    const cut: [number, number][] = [[0, 3], [3, 6]];
    // Without ep, replica d's ranks 0 and 1 are devices 2d and 2d + 1: one node (4 a node). With ep = 4 the
    // four replicas' rank 0 are devices 0–3 and their rank 1 devices 4–7: the pipeline link crosses nodes.
    const plain = candidateCosts({ model, device }, profile, cut, [0, 1], { dp: 4, pp: 2, b: 1, m: 4 });
    const ep = candidateCosts({ model, device }, profile, cut, [0, 1], { dp: 4, pp: 2, ep: 4, b: 1, m: 4 });
    const lat = (c: typeof plain) => (typeof c.latency === 'function' ? c.latency(0, 1) : NaN);
    expect(lat(plain)).toBe(5e-3);
    expect(lat(ep)).toBe(10e-3);
  });

  it('searches ep: every candidate’s ep divides the experts and dp · tp and is a multiple of tp; some use ep > 1', () => {
    const plan = planMesh({ model, device, devices: 8, globalBatch: 16, schedules: ['1f1b', 'dualpipe'], maxMicroBatch: 2, tp: 1 });
    expect(plan.candidates.length).toBeGreaterThan(0);
    for (const c of plan.candidates) {
      expect(8 % c.ep).toBe(0);
      expect((c.dp * c.tp) % c.ep).toBe(0);
      expect(c.ep === 1 || c.ep % c.tp === 0).toBe(true);
      expect(c.dp * c.tp * c.pp).toBe(8);
    }
    expect(new Set(plan.candidates.map((c) => c.ep)).size).toBeGreaterThan(2);
    // Sharding the experts saves memory: the least state with ep = 8 is below the least with ep = 1 at dp = 8.
    const least = (ep: number) => Math.min(...plan.candidates.filter((c) => c.ep === ep && c.dp === 8 && c.zero === 0).map((c) => c.stateBytes));
    expect(least(8)).toBeLessThan(least(1));
  });

  it('refuses ep on a dense model, an ep not dividing the experts or over the devices, tp without sequence parallelism, by field, value and rule', () => {
    const dense = { ...model, moe: undefined };
    let e = refusal(() => planMesh({ model: dense, device, devices: 8, globalBatch: 16, ep: 2 }));
    expect(e.message).toMatch(/^ep = 2: needs a model with experts/);
    e = refusal(() => planMesh({ model, device, devices: 8, globalBatch: 16, ep: 3 }));
    expect(e.message).toMatch(/^ep = 3: must divide the experts \(8\)/);
    e = refusal(() => planMesh({ model, device, devices: 4, globalBatch: 16, ep: 8 }));
    expect(e.message).toMatch(/^ep = 8: must be at most the devices \(4\)/);
    e = refusal(() => planMesh({ model, device, devices: 8, globalBatch: 16, tp: 2 }));
    expect(e.message).toMatch(/^tp = 2: above 1 on a model with experts needs sequenceParallel/);
    e = refusal(() => planMesh({ model: { ...model, moe: { ...model.moe!, topK: 9 } }, device, devices: 8, globalBatch: 16 }));
    expect(e.message).toMatch(/^model\.moe\.topK = 9: must be at most experts = 8/);
    e = refusal(() => planMesh({ model: { ...model, moe: { ...model.moe!, capacityFactor: -0.5 } }, device, devices: 8, globalBatch: 16 }));
    expect(e.message).toMatch(/^model\.moe\.capacityFactor = -0.5: must be a number ≥ 0/);
  });

  it('hands each stage’s all-to-alls to the simulator (costs.ep): a candidate’s step is a fresh simulation of its schedule and costs, whose timeline draws them', () => {
    const req: MeshPlanRequest = { model, device, devices: 16, globalBatch: 32, schedules: ['1f1b', 'dualpipe'], maxMicroBatch: 1, tp: 1, ep: 8, zero: 0 };
    const plan = planMesh(req);
    expect(plan.candidates.length).toBeGreaterThan(1);
    expect(new Set(plan.candidates.map((c) => c.schedule))).toEqual(new Set(['1f1b', 'dualpipe']));
    for (const c of plan.candidates) {
      const { schedule, costs } = candidateSchedule(req, c);
      const ep = costs.ep!;
      expect([ep.n, ep.local, ep.overlap]).toEqual([8, 4, c.schedule === 'dualpipe']);
      // One dispatch of one sequence: 2 bytes × k = 2 rows a token × 32 tokens × 64 wide = 8192 bytes.
      const model0 = ep.messages.slice(0, c.pp * c.virtual);
      expect(model0.flatMap((x) => x.F)).toEqual(new Array(2 * 4).fill(8192));
      expect(model0.flatMap((x) => x.I)).toEqual(new Array((c.recompute === 'full' ? 4 : 2) * 4).fill(8192));
      expect(planStep(c.schedule, schedule, costs).makespan).toBeCloseTo(c.stepMs, 9);
      const drawn = simulate(schedule, costs).timeline.intervals.filter((iv) => iv.coll === 'ep-all-to-all');
      // 4 of a layer's all-to-alls (F's 2, B's 2) for each of 4 MoE layers × micro-batches, on every replica.
      if (c.recompute !== 'full') expect(drawn.length).toBe(c.dp * c.microbatches * 4 * 4);
    }
    // Half the group on each node: α across (10 µs) + the 4/8 sent to the other node at 10 GB/s (1e7 bytes a ms) — the slower half.
    expect(allToAllTime(8192, 8, 4, { latencyIntra: 5e-3, bandwidthIntra: 1e8, latencyInter: 1e-2, bandwidthInter: 1e7 })).toBeCloseTo(0.01 + 4096 / 1e7, 15);
  });
});
