import { describe, expect, it } from 'vitest';
import { RUN_LIMITS } from '../../config/run-limits.ts';
import { predict, runWindowSchedule, windowSchedule } from './derived.ts';
import { planRun } from '../../runtime/executor/run-plan.ts';
import { defaultRunConfig } from '../../config/run-config.ts';
import { simulateAll } from '../compare/compare.ts';

describe('the prediction of a form draft is bounded like a run', () => {
  it('a draft asking for more actions than a run may have is not simulated', () => {
    expect(predict({ schedule: '1f1b', ranks: 16, virtual: 1, microbatches: 1_000_000 })).toBeNull();
    expect(predict({ schedule: '1f1b', ranks: 4, virtual: 1, microbatches: Number.NaN })).toBeNull();
    expect(() => windowSchedule({ schedule: 'gpipe', ranks: 4, virtual: 1, microbatches: 1_000_000 })).toThrow(
      'microbatches = 1000000: ranks · virtual · microbatches · ops = 8000000 actions per step; a step may have at most 32768',
    );
    // A stream's window is its whole run: bounded as the run is, by its steps.
    expect(() => windowSchedule({ schedule: 'pipedream', ranks: 4, virtual: 1, microbatches: 8, steps: 3000 })).toThrow(
      'steps = 3000: PipeDream runs steps × microbatches as one stream: ranks · steps · microbatches · 2 = 192000 actions; a run may ask for at most 65536',
    );
    expect(predict({ schedule: 'pipedream-2bw', ranks: 4, virtual: 1, microbatches: 8, steps: 3000 })).toBeNull();
  });
  it('a draft within the limit still is', () => {
    const m = Math.floor(RUN_LIMITS.actionsPerStep / (2 * 4));
    const p = predict({ schedule: '1f1b', ranks: 4, virtual: 1, microbatches: m });
    expect(p?.schedule.microbatches).toBe(m);
    // 1F1B's closed-form bubble, (p − 1)/(m + p − 1).
    expect(p?.closed?.bubble).toBeCloseTo(3 / (m + 3), 12);
  });

  it('a stream is predicted over its whole run, the window the run plays: 1F1B over steps × m micro-batches, one fill and one drain', () => {
    const p = predict({ schedule: 'pipedream-2bw', ranks: 4, virtual: 1, microbatches: 4, steps: 30 })!;
    expect(p.schedule.microbatches).toBe(120);
    expect(p.schedule.order[0].length).toBe(240);
    // Unit costs and free links: the simulation is the closed form, (p − 1)/(W + p − 1) for a window of W = 120.
    expect(p.closed?.bubble).toBeCloseTo(3 / 123, 12);
    expect(p.result.bubble).toBeCloseTo(3 / 123, 12);
    expect(p.result.makespan).toBeCloseTo(3 * 123, 9);
    // Without steps, a stream's window is one step's; a flush schedule's window is a step whatever the steps.
    expect(predict({ schedule: 'pipedream', ranks: 4, virtual: 1, microbatches: 4 })!.schedule.microbatches).toBe(4);
    expect(predict({ schedule: '1f1b', ranks: 4, virtual: 1, microbatches: 4, steps: 30 })!.schedule.microbatches).toBe(4);
  });
});

describe('the page predicts the schedule a run plays', () => {
  it('auto: planned from the model’s FLOPs within memCap, as planRun plans it (not the registry door’s 1F1B memory)', () => {
    for (const memCap of [0, 2, 3]) {
      const cfg = { ...defaultRunConfig(), schedule: 'auto' as const, memCap };
      const s = runWindowSchedule(cfg);
      expect(s, `memCap ${memCap}`).toEqual(planRun(cfg).schedule);
      const peak = Math.max(...predict(cfg, s)!.result.memory.map((r) => r.peakMicrobatches));
      expect(peak).toBeLessThanOrEqual(memCap || cfg.ranks);
    }
    // The cap changes the order: at 2 micro-batches it is not the 4-micro-batch one.
    const base = { ...defaultRunConfig(), schedule: 'auto' as const };
    expect(runWindowSchedule({ ...base, memCap: 2 }).order).not.toEqual(runWindowSchedule(base).order);
    // Every other schedule: its window, as before (a stream's over the steps asked for).
    expect(runWindowSchedule({ ...defaultRunConfig(), schedule: 'pipedream-2bw', steps: 3 }).microbatches).toBe(3 * defaultRunConfig().microbatches);
  });

  it('Compare simulates each entry as its run plans it: auto within the Train memCap', () => {
    const base = { ...defaultRunConfig(), memCap: 2 };
    const [auto] = simulateAll(base, ['auto'], 1);
    expect(auto.problem).toBeNull();
    expect(auto.prediction?.schedule).toEqual(planRun({ ...auto.config }).schedule);
    expect(Math.max(...auto.prediction!.result.memory.map((r) => r.peakMicrobatches))).toBeLessThanOrEqual(2);
  });
});
