import { describe, expect, it } from 'vitest';
import { simulate } from '../schedule/index.ts';
import { ConfigError } from '../util/errors.ts';
import { DEVICE_PRESETS } from './device.ts';
import { candidateSchedule, planMesh, type MeshPlanRequest } from './mesh-plan.ts';
import { planAndSimulate } from './mesh-plan-worker.ts';

const req: MeshPlanRequest = { model: { layers: 8, hidden: 1024, heads: 16, seq: 1024, vocab: 32000, bytesPerElement: 2 }, device: DEVICE_PRESETS.h100, devices: 8, globalBatch: 16 };

describe("the mesh planner's worker entry", () => {
  it('returns what planMesh and simulate return, and survives structured cloning unchanged (no class instances, no functions)', () => {
    const out = planAndSimulate(req);
    if (!out.ok) throw new Error(`unexpected failure: ${out.rule}`);
    const plan = planMesh(req);
    expect(out.plan).toEqual(plan);
    const { schedule, costs } = candidateSchedule(req, plan.candidates[0]);
    expect(out.best).toEqual(simulate(schedule, costs));
    // What postMessage hands the page: toStrictEqual also compares prototypes, so a class instance would fail here.
    expect(structuredClone(out)).toStrictEqual(out);
  });

  it("hands back a ConfigError's field, value and rule, which rebuild the planner's own message", () => {
    const bad: MeshPlanRequest = { ...req, model: { ...req.model, heads: 3 } };
    let thrown: unknown;
    try {
      planMesh(bad);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    const out = structuredClone(planAndSimulate(bad));
    if (out.ok) throw new Error('expected a failure');
    expect(new ConfigError(out.field, out.value, out.rule).message).toBe((thrown as ConfigError).message);
    expect(out.field).toBe('model.heads');
  });
});
