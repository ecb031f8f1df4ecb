/**
 * A configured fault must name an action the run has, or it would never fire:
 * refused before any worker starts, naming the field, the value and the actions
 * that exist (the cases: `1F9` with 4 micro-batches, `9F9` on 4 ranks).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import { defaultRunConfig, validateRunConfig, type RunConfig } from './run-config.ts';

function refusal(over: Partial<RunConfig>): ConfigError | null {
  try {
    validateRunConfig({ ...defaultRunConfig(), ranks: 4, microbatches: 4, batchSize: 16, steps: 3, ...over });
    return null;
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
}

describe('a fault names an action of the run', () => {
  it('refuses an action outside the schedule, naming the actions that exist', () => {
    const e1 = refusal({ fault: { kind: 'throw', action: '1F9' } });
    expect(e1?.field).toBe('fault.action');
    expect(e1?.message).toBe(
      'fault.action = "1F9": names no action of this run\'s 1f1b schedule, so it would never fire; this run\'s actions are <stage><F|B><micro-batch> with stage 0…3 and micro-batch 0…3 (e.g. "0F0", "3B3") (AR<stage> needs dp ≥ 2: one replica has no all-reduce)',
    );
    expect(refusal({ fault: { kind: 'throw', action: '9F9' } })?.message).toMatch(/^fault\.action = "9F9": names no action .* stage 0…3 and micro-batch 0…3/);
    // 1F1B has no split backward: no I or W to fire at.
    expect(refusal({ fault: { kind: 'throw', action: '2I0' } })?.message).toMatch(/<F\|B>/);
    expect(refusal({ fault: { kind: 'throw', action: 'F1' } })?.field).toBe('fault.action');
  });

  it('accepts every action the schedule runs, and a split schedule\'s I and W', () => {
    for (const a of ['0F0', '3F3', '1B2', '3B0']) expect(refusal({ fault: { kind: 'throw', action: a } })).toBeNull();
    expect(refusal({ schedule: 'zb-h1', fault: { kind: 'throw', action: '2I1' } })).toBeNull();
    expect(refusal({ schedule: 'zb-h1', fault: { kind: 'throw', action: '2W3' } })).toBeNull();
    expect(refusal({ schedule: 'interleaved-1f1b', virtual: 2, layers: 7, fault: { kind: 'throw', action: '7F3' } })).toBeNull();
    expect(refusal({ schedule: 'interleaved-1f1b', virtual: 2, layers: 7, fault: { kind: 'throw', action: '8F0' } })?.message).toMatch(/stage 0…7/);
  });

  it('PipeDream streams the whole run as one window: micro-batches of every step count', () => {
    expect(refusal({ schedule: 'pipedream', fault: { kind: 'throw', action: '0F11' } })).toBeNull();
    expect(refusal({ schedule: 'pipedream', fault: { kind: 'throw', action: '0F12' } })?.message).toMatch(/micro-batch 0…11/);
  });

  it('AR<stage> needs a data-parallel run and a stage that exists', () => {
    expect(refusal({ fault: { kind: 'throw', action: 'AR1' } })?.message).toMatch(/^fault\.action = "AR1": names no collective of this run; .*AR<stage> needs dp ≥ 2/);
    const dp2 = { dp: 2, ranks: 2, microbatches: 2, batchSize: 16 };
    expect(refusal({ ...dp2, fault: { kind: 'throw', action: 'AR1' } })).toBeNull();
    expect(refusal({ ...dp2, fault: { kind: 'throw', action: 'AR2' } })?.message).toMatch(/or AR0…AR1 for a stage's all-reduce$/);
  });
});
