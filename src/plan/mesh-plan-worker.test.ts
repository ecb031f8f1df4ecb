import { describe, expect, it } from 'vitest';
import { simulate } from '../schedule/index.ts';
import { decodeTimeline } from '../schedule/timeline-columns.ts';
import { ConfigError } from '../util/errors.ts';
import { DEVICE_PRESETS } from './device.ts';
import { candidateSchedule, planMesh, type MeshPlanRequest } from './mesh-plan.ts';
import { planAndSimulate } from './mesh-plan-worker.ts';

const req: MeshPlanRequest = { model: { layers: 8, hidden: 1024, heads: 16, seq: 1024, vocab: 32000, bytesPerElement: 2 }, device: DEVICE_PRESETS.h100, devices: 8, globalBatch: 16 };

describe("the mesh planner's worker entry", () => {
  it('hands the page, through structured cloning and the timeline columns, exactly what planMesh and simulate return', () => {
    const sent = planAndSimulate(req);
    // What postMessage does; toStrictEqual also compares prototypes and absent against undefined fields.
    const out = structuredClone(sent);
    if (!out.ok) throw new Error(`unexpected failure: ${out.rule}`);
    const plan = planMesh(req);
    expect(out.plan).toStrictEqual(plan);
    const { schedule, costs } = candidateSchedule(req, plan.candidates[0]);
    const best = simulate(schedule, costs);
    expect(best.dp?.dp).toBeGreaterThan(1);
    expect(best.timeline.intervals.some((iv) => iv.op === 'collective')).toBe(true);
    expect({ ...out.best, timeline: decodeTimeline(out.best.timeline) }).toStrictEqual(best);
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
