import { describe, expect, it } from 'vitest';
import { simulate } from '../schedule/index.ts';
import { decodeTimeline } from '../schedule/timeline-columns.ts';
import { firstReplicas, laneCount } from '../schedule/timeline.ts';
import { ConfigError } from '../util/errors.ts';
import { DEVICE_PRESETS } from './device.ts';
import { candidateSchedule, planMesh, type MeshPlanRequest } from './mesh-plan.ts';
import { MAX_DRAWN_LANES, planAndSimulate } from './mesh-plan-worker.ts';

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
    // 8 devices: every lane travels.
    expect(out.best.drawnReplicas).toBe(best.dp?.dp);
    expect(out.best.replicas).toBe(best.dp?.dp);
    const rest: Partial<typeof out.best> = { ...out.best };
    delete rest.drawnReplicas;
    delete rest.replicas;
    expect({ ...rest, timeline: decodeTimeline(out.best.timeline) }).toStrictEqual(best);
  });

  it('sends the page only the first replicas of a large mesh, every interval of theirs intact', () => {
    const big: MeshPlanRequest = { ...req, devices: 256, globalBatch: 256 };
    const out = planAndSimulate(big);
    if (!out.ok) throw new Error(`unexpected failure: ${out.rule}`);
    const { schedule, costs } = candidateSchedule(big, out.plan.candidates[0]);
    const best = simulate(schedule, costs);
    const dp = best.timeline.dp ?? 1;
    // One lane per pipeline worker: a stage's tp devices move together.
    expect(dp * best.timeline.ranks * out.plan.candidates[0].tp).toBe(256);
    expect(out.best.replicas).toBe(dp);
    const drawn = decodeTimeline(out.best.timeline);
    expect(laneCount(drawn)).toBeLessThanOrEqual(MAX_DRAWN_LANES);
    expect(drawn.dp).toBe(out.best.drawnReplicas);
    expect(out.best.drawnReplicas).toBe(Math.max(1, Math.floor(MAX_DRAWN_LANES / best.timeline.ranks)));
    // Exactly the whole timeline's intervals on those replicas' lanes, and the same step.
    expect(drawn.intervals).toStrictEqual(best.timeline.intervals.filter((iv) => (iv.replica ?? 0) < out.best.drawnReplicas));
    expect(drawn.intervals.length).toBeLessThan(best.timeline.intervals.length);
    expect(out.best.makespan).toBe(best.makespan);
  });

  it('firstReplicas keeps the whole timeline when it fits, and at least one replica', () => {
    const t = { source: 'simulated' as const, ranks: 4, dp: 3, stages: 4, microbatches: 1, unit: 'unit' as const, intervals: [0, 1, 2].map((d) => ({ rank: 0, replica: d, stage: 0, op: 'F' as const, mb: 0, start: d, end: d + 1 })) };
    expect(firstReplicas(t, 12)).toBe(t);
    expect(firstReplicas(t, 8).dp).toBe(2);
    expect(firstReplicas(t, 8).intervals.map((iv) => iv.replica)).toEqual([0, 1]);
    expect(firstReplicas(t, 1).dp).toBe(1);
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
