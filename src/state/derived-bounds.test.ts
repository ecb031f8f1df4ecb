import { describe, expect, it } from 'vitest';
import { RUN_LIMITS } from '../config/run-limits.ts';
import { predict, windowSchedule } from './derived.ts';

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
