/** The mesh planner's ZeRO stages: the least sharding that fits, its memory, its collectives' time, its refusals. */
import { describe, expect, it } from 'vitest';
import { simulate, stageToRankMap } from '../schedule/index.ts';
import { ringAllReduceTime } from '../schedule/allreduce-cost.ts';
import { DEVICE_PRESETS } from './device.ts';
import { candidateCosts, stateBytes, zeroLinkMs } from './mesh-costs.ts';
import { candidateSchedule, makeEvaluator, planMesh, type MeshPlanRequest, type ZeroChoice } from './mesh-plan.ts';
import { planPartition } from './partition.ts';
import { layerParams, modelParams, transformerProfile, type TransformerModel } from './transformer.ts';

// Two wide layers and one head: pp ≤ 2 and tp = 1, so on 32 devices only dp shards most of the state.
const model: TransformerModel = { layers: 2, hidden: 4096, heads: 1, seq: 256, vocab: 32000, bytesPerElement: 2 };
const req = (memoryGB: number, zero?: ZeroChoice): MeshPlanRequest => ({ model, device: { ...DEVICE_PRESETS.h100, memoryGB }, devices: 32, globalBatch: 256, zero });

function refusal(r: MeshPlanRequest): string {
  try {
    planMesh(r);
  } catch (e) {
    return String(e);
  }
  return '';
}
/** The smallest memory the refusal names, GB. */
const smallest = (message: string) => Number(/smallest memory that would fit is ([\d.]+) GB/.exec(message)?.[1]);

describe('ZeRO-2 and ZeRO-3 in the mesh planner', () => {
  const least = ([0, 1, 2, 3] as const).map((z) => smallest(refusal(req(0.01, z))));

  it('each stage fits a smaller device than the one before it; the refusal names the highest stage tried', () => {
    expect(least[0]).toBeGreaterThan(least[1]);
    expect(least[1]).toBeGreaterThan(least[2]);
    expect(least[2]).toBeGreaterThan(least[3]);
    const auto = refusal(req(0.01));
    expect(auto).toContain('micro-batch, ZeRO up to ZeRO-3, recomputation none → selective → full tried');
    expect(auto).toMatch(/ZeRO-3, (selective|full) recomputation$|ZeRO-3$/);
    expect(smallest(auto)).toBe(least[3]);
    expect(refusal(req(0.01, 2))).toContain('micro-batch, ZeRO-2, recomputation none → selective → full tried');
    expect(refusal(req(0.01, 0))).toContain('micro-batch, no ZeRO, recomputation none → selective → full tried');
    expect(refusal(req(0.01, false))).toContain('micro-batch, no ZeRO, recomputation none → selective → full tried');
    expect(refusal(req(0.01, true))).toContain('micro-batch, ZeRO up to ZeRO-1, recomputation none → selective → full tried');
  });

  it('plans a model that fits only with ZeRO-3 with ZeRO-3, and with less sharding where less fits', () => {
    const only3 = planMesh(req((least[3] + least[2]) / 2));
    expect(only3.candidates.length).toBeGreaterThan(0);
    expect(only3.candidates.every((c) => c.zero === 3 && c.dp > 1)).toBe(true);
    const roomy = planMesh(req(1000));
    expect(roomy.candidates.every((c) => c.zero === 0)).toBe(true);
    // Between: each candidate takes the least stage that fits it; the stage below it does not fit the same candidate.
    const mid = req((least[2] + least[1]) / 2);
    const plan = planMesh(mid);
    expect(plan.candidates.some((c) => c.zero === 2)).toBe(true);
    for (const c of plan.candidates) {
      if (c.schedule === 'auto' || c.zero === 0) continue;
      const below = makeEvaluator({ ...mid, zero: (c.zero - 1) as ZeroChoice }).evaluate({ dp: c.dp, pp: c.pp, tp: c.tp, b: c.microBatch, m: c.microbatches }, c.schedule, c.virtual, c.recompute);
      expect(below?.fits, JSON.stringify(c)).toBe(false);
    }
  });

  it('a fixed stage holds wherever dp > 1', () => {
    const plan = planMesh(req(1000, 2));
    expect(plan.candidates.every((c) => c.zero === (c.dp > 1 ? 2 : 0))).toBe(true);
    expect(() => planMesh(req(80, 5 as never))).toThrow('zero = 5: must be 0, 1, 2, 3 (the ZeRO stage) or auto');
  });

  it('ZeRO-3 holds (2e + K)/dp bytes a parameter and one gathered layer', () => {
    const r = req(80);
    const st = stateBytes(r, [[0, 4]], [0], 1, 3, 32)[0];
    expect(st).toBeCloseTo((modelParams(model) * 16) / 32 + layerParams(model) * 2, 3);
    expect(stateBytes(r, [[0, 4]], [0], 1, 2, 32)[0]).toBeCloseTo(modelParams(model) * (2 + 14 / 32), 3);
  });

  it('prices the collectives: ZeRO-3 waits for a gather longer than the compute, ZeRO-2 and 3 are held to their links, the step agrees with a fresh simulation', () => {
    const r = req(80);
    const l = { dp: 16, pp: 2, tp: 1, b: 2, m: 8 };
    const profile = transformerProfile(model, { microBatch: l.b, recompute: 'none' }, r.device);
    const ranges = planPartition(profile, 2).ranges;
    const s2r = stageToRankMap(2, 1, 'loop');
    const plain = candidateCosts(r, profile, ranges, s2r, l);
    const z3 = candidateCosts(r, profile, ranges, s2r, { ...l, zero: 3 });
    const ar = plain.allReduce!;
    const half = (plain.gradBytes as number[]).map((g) => ringAllReduceTime(g, l.dp, ar.latency, ar.bandwidth) / 2);
    for (const op of ['F', 'I', 'B'] as const) {
      expect(z3[op]).toEqual((plain[op] as number[]).map((x, s) => Math.max(x, half[s])));
    }
    expect(z3.W).toEqual(plain.W);
    expect(z3.gradBytes).toEqual(plain.gradBytes);
    // Per rank (one stage each here): (m + 1) halves at ZeRO-2, 3m at ZeRO-3; nothing at ZeRO-1.
    expect(zeroLinkMs(r, ranges, s2r, { ...l, zero: 2 })).toBeCloseTo(Math.max(...half) * 9, 9);
    expect(zeroLinkMs(r, ranges, s2r, { ...l, zero: 3 })).toBeCloseTo(Math.max(...half) * 24, 9);
    expect(zeroLinkMs(r, ranges, s2r, { ...l, zero: 1 })).toBe(0);

    const { evaluate } = makeEvaluator(r);
    const at = (zero: ZeroChoice) => makeEvaluator({ ...r, zero }).evaluate(l, '1f1b', 1, 'none')!.cand;
    expect(evaluate(l, '1f1b', 1, 'none')!.cand.zero).toBe(0);
    const [z0, z1, z2, z3c] = [at(0), at(1), at(2), at(3)];
    expect(z1.stepMs).toBe(z0.stepMs);
    expect(z2.stepMs).toBeGreaterThanOrEqual(z1.stepMs);
    expect(z3c.stepMs).toBeGreaterThanOrEqual(z2.stepMs);
    expect(z3c.memoryBytes).toBeLessThan(z2.memoryBytes);
    for (const c of [z2, z3c]) {
      const { schedule, costs } = candidateSchedule({ ...r, zero: c.zero }, c);
      const sim = simulate(schedule, costs);
      expect(c.stepMs).toBeCloseTo(Math.max(sim.makespan, zeroLinkMs(r, ranges, s2r, { ...l, zero: c.zero })), 9);
      expect(c.exposedAllReduceMs).toBeCloseTo(c.stepMs - c.computeMs, 9);
    }
  });
});
