import { describe, expect, it } from 'vitest';
import { RUN_LIMITS } from '../config/run-limits.ts';
import { predict, stepSchedule } from './derived.ts';

describe('the prediction of a form draft is bounded like a run', () => {
  it('a draft asking for more actions than a run may have is not simulated', () => {
    expect(predict({ schedule: '1f1b', ranks: 16, virtual: 1, microbatches: 1_000_000 })).toBeNull();
    expect(predict({ schedule: '1f1b', ranks: 4, virtual: 1, microbatches: Number.NaN })).toBeNull();
    expect(() => stepSchedule({ schedule: 'pipedream', ranks: 4, virtual: 1, microbatches: 1_000_000 })).toThrow(
      'microbatches = 1000000: ranks · virtual · microbatches · ops = 8000000 actions per step; a step may have at most 32768',
    );
  });
  it('a draft within the limit still is', () => {
    const m = Math.floor(RUN_LIMITS.actionsPerStep / (2 * 4));
    const p = predict({ schedule: '1f1b', ranks: 4, virtual: 1, microbatches: m });
    expect(p?.schedule.microbatches).toBe(m);
    // 1F1B's closed-form bubble, (p − 1)/(m + p − 1).
    expect(p?.closed?.bubble).toBeCloseTo(3 / (m + 3), 12);
  });
});
