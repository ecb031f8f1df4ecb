import { describe, expect, it } from 'vitest';
import { planRun } from '../runtime/executor/run-plan.ts';
import { defaultRunConfig } from '../config/run-config.ts';
import { autoSchedule, simulate, validateSchedule } from '../schedule/index.ts';
import { flopsProfile } from './flops-profile.ts';
import { costModelOf, makePlan } from './plan.ts';
import { parseProfile } from './profile.ts';

describe('plans', () => {
  it('a run named auto gets the auto schedule for its FLOPs stage costs and 1F1B’s memory', () => {
    const cfg = { ...defaultRunConfig(), schedule: 'auto' as const, ranks: 3, microbatches: 4, batchSize: 64, layers: 5 };
    const plan = planRun(cfg);
    expect(validateSchedule(plan.schedule)).toEqual({ ok: true });
    const costs = costModelOf(flopsProfile(plan.spec, 16), plan.stageBlocks);
    expect(plan.schedule).toEqual(autoSchedule(3, 4, costs, { microbatches: 3 }).schedule);
    for (const m of simulate(plan.schedule, costs).memory) expect(m.peakMicrobatches).toBeLessThanOrEqual(3);
  });

  it('a run cuts by FLOPs or by block count, and its auto schedule keeps within memCap', () => {
    // 5 blocks: the embedding block is light in FLOPs, so FLOPs give it a hidden block for company.
    const base = { ...defaultRunConfig(), dataset: 'names' as const, model: 'char-mlp' as const, ranks: 3, microbatches: 8, batchSize: 64, layers: 4 };
    expect(planRun(base).stageBlocks).toEqual([[0, 2], [2, 3], [3, 5]]);
    expect(planRun({ ...base, partition: 'blocks' }).stageBlocks).toEqual([[0, 1], [1, 3], [3, 5]]);
    const capped = planRun({ ...base, schedule: 'auto', memCap: 1 });
    expect(validateSchedule(capped.schedule)).toEqual({ ok: true });
    expect(Math.max(...simulate(capped.schedule).memory.map((m) => m.peakMicrobatches))).toBe(1);
    expect(Math.max(...simulate(planRun({ ...base, schedule: 'auto' }).schedule).memory.map((m) => m.peakMicrobatches))).toBeLessThanOrEqual(3);
    expect(() => planRun({ ...base, partition: 'time' as never })).toThrow('partition = "time": must be one of flops, blocks');
    expect(() => planRun({ ...base, memCap: -1 })).toThrow('memCap = -1: must be an integer between 0 and 1024');
  });

  it('puts the split, the auto schedule and the baselines together under one cost model', () => {
    const profile = parseProfile({ unit: 'ms', blocks: [1, 2, 1, 3].map((k) => ({ F: k, I: k, W: k / 2, heldBytes: 10 * k })), comm: [0.5, 0.5, 0.5] });
    const p = makePlan({ profile, ranks: 2, microbatches: 6, cap: { microbatches: 2 } });
    // F + B per block 2.5, 5, 2.5, 7.5; both 2+2 and 3+1 give 10.5 with the cut's 0.5: later stages take the extra block.
    expect(p.partition.ranges).toEqual([[0, 2], [2, 4]]);
    expect(p.costs).toMatchObject({ F: [3, 4], I: [3, 4], W: [1.5, 2], B: [4.5, 6], heldBytes: [30, 40], comm: [0.5, 0], unit: 'ms' });
    expect(p.auto.simulation.makespan).toBe(simulate(p.auto.schedule, p.costs).makespan);
    const zb = p.baselines.find((b) => b.name === 'zb-h1');
    expect(zb).toMatchObject({ peakMicrobatches: 2, fits: true });
    expect(p.auto.simulation.makespan).toBeLessThanOrEqual(zb?.makespan ?? -1);
    expect(p.baselines.find((b) => b.name === 'gpipe')).toMatchObject({ peakMicrobatches: 6, fits: false });
    expect(p.predictions).toBeNull();
    expect(makePlan({ profile: { ...profile, lanes: 1 }, ranks: 2, microbatches: 6, cap: { microbatches: 2 } }).predictions?.thisMachine.makespan).toBeGreaterThan(p.auto.simulation.makespan);
  });
});
