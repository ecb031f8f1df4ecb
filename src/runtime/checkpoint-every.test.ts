/** The checkpointEvery field: validated by field, value and rule; in a link only when not the default; not part of a checkpoint's identity. */
import { describe, expect, it } from 'vitest';
import { checkpointKey } from '../run-state/checkpoint-store.ts';
import { stateConfig } from '../run-state/run-state.ts';
import { ConfigError } from '../util/errors.ts';
import { checkpointEveryOf, configFromQuery, configToQuery, defaultRunConfig, validateRunConfig, type RunConfig } from '../config/run-config.ts';

describe('checkpointEvery', () => {
  it('defaults to 50 when absent; 0 turns saving off', () => {
    expect(checkpointEveryOf(defaultRunConfig())).toBe(50);
    expect(checkpointEveryOf({ checkpointEvery: 0 })).toBe(0);
  });

  it('refuses a value that is not a whole number ≥ 0, naming the field, the value and the rule', () => {
    for (const bad of [-1, 2.5, NaN, '10' as unknown as number]) {
      const cfg: RunConfig = { ...defaultRunConfig(), checkpointEvery: bad };
      expect(() => validateRunConfig(cfg)).toThrow(ConfigError);
      expect(() => validateRunConfig(cfg)).toThrow(/^checkpointEvery = .*: must be an integer/);
    }
    expect(() => validateRunConfig({ ...defaultRunConfig(), checkpointEvery: 0 })).not.toThrow();
  });

  it('travels in a link only when not the default, and reads back', () => {
    expect(configToQuery(defaultRunConfig())).not.toContain('checkpointEvery');
    expect(configToQuery({ ...defaultRunConfig(), checkpointEvery: 50 })).not.toContain('checkpointEvery');
    const q = configToQuery({ ...defaultRunConfig(), checkpointEvery: 7 });
    expect(q).toContain('checkpointEvery=7');
    const back = configFromQuery(q);
    expect(back.errors).toEqual([]);
    expect(back.config.checkpointEvery).toBe(7);
  });

  it('a bad value in a link is reported and left at its default (absent)', () => {
    const { config, errors } = configFromQuery('checkpointEvery=-3');
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/^checkpointEvery = -3: must be an integer/)]);
    expect('checkpointEvery' in config).toBe(false);
  });

  it('is not kept in a checkpoint, nor part of the key its checkpoints are stored under', () => {
    const cfg = { ...defaultRunConfig(), checkpointEvery: 7 };
    expect('checkpointEvery' in stateConfig(cfg)).toBe(false);
    expect(checkpointKey(cfg)).toBe(checkpointKey(defaultRunConfig()));
  });
});
