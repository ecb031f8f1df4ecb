/**
 * The second axis in the run configuration: dp, zero and overlap validated by
 * field, value and rule, the same from an object and from a URL, and written
 * into links only when they differ from one pipeline.
 */
import { describe, expect, it } from 'vitest';
import { configFromQuery, configToQuery, defaultRunConfig, validateRunConfig, type RunConfig } from './run-config.ts';

const refuse = (patch: Partial<RunConfig>) => () => validateRunConfig({ ...defaultRunConfig(), ...patch } as RunConfig);

describe('dp, zero and overlap', () => {
  it('accepts a mesh whose batch splits into dp × microbatches', () => {
    expect(refuse({ dp: 2, ranks: 2 })).not.toThrow();
    expect(refuse({ dp: 4, ranks: 1, zero: 1, overlap: false })).not.toThrow();
  });

  it('refuses each bad value naming the field, the value and the rule', () => {
    expect(refuse({ dp: 0 })).toThrow('dp = 0: must be an integer between 1 and 16');
    expect(refuse({ dp: 2.5 })).toThrow('dp = 2.5: must be an integer');
    expect(refuse({ dp: 5 })).toThrow('dp = 5: dp × ranks = 5 × 4 = 20 workers; at most 16 workers run in one tab');
    expect(refuse({ dp: 3, ranks: 2 })).toThrow('batchSize = 64: must be divisible by dp × microbatches = 3 × 8 = 24');
    expect(refuse({ zero: 1 })).toThrow('zero = 1: ZeRO-1 shards across data-parallel replicas; it needs dp ≥ 2 (dp = 1)');
    expect(refuse({ zero: 3 })).toThrow('zero = 3: ZeRO-3 shards across data-parallel replicas; it needs dp ≥ 2 (dp = 1)');
    expect(refuse({ dp: 2, zero: 4 as never })).toThrow('zero = 4: must be 0 (off), 1 (optimizer state sharded across the dp replicas), 2 (and gradients) or 3 (and weights: FSDP)');
    expect(refuse({ dp: 2, zero: 2, reshard: 'microbatch' })).toThrow(`reshard = "microbatch": re-gathering weights for every action is ZeRO-3's (zero = 2); leave reshard = step`);
    expect(refuse({ dp: 2, zero: 3, reshard: 'layer' as never })).toThrow('reshard = "layer": must be one of step, microbatch');
    expect(refuse({ dp: 2, zero: 3, prefetch: 'no' as never })).toThrow('prefetch = "no": must be true or false');
    expect(refuse({ dp: 2, zero: 3, reshard: 'microbatch', prefetch: false })).not.toThrow();
    expect(refuse({ dp: 2, overlap: 'yes' as never })).toThrow('overlap = "yes": must be true or false');
    expect(refuse({ dp: 2, ranks: 2, schedule: 'pipedream' })).toThrow(/^dp = 2: pipedream updates each stage's weights after every backward/);
    expect(refuse({ dp: 2, fault: { kind: 'throw', action: 'AR0', replica: 2 } })).toThrow('fault.replica = 2: must be an integer between 0 and 1');
  });

  it('reads from a link and writes back only what differs from one pipeline', () => {
    const z3 = configFromQuery('?dp=2&ranks=2&zero=3&reshard=microbatch&prefetch=false');
    expect(z3.errors).toEqual([]);
    expect([z3.config.zero, z3.config.reshard, z3.config.prefetch]).toEqual([3, 'microbatch', false]);
    expect(configToQuery(z3.config)).toContain('zero=3&reshard=microbatch&prefetch=false');
    const { config, errors } = configFromQuery('?dp=2&ranks=2&zero=1&overlap=false');
    expect(errors).toEqual([]);
    expect([config.dp, config.ranks, config.zero, config.overlap]).toEqual([2, 2, 1, false]);
    const q = new URLSearchParams(configToQuery(config));
    expect([q.get('dp'), q.get('zero'), q.get('overlap')]).toEqual(['2', '1', 'false']);
    expect(configFromQuery(configToQuery(config)).config).toEqual(config);
    const plain = new URLSearchParams(configToQuery(defaultRunConfig()));
    expect([plain.has('dp'), plain.has('zero'), plain.has('overlap')]).toEqual([false, false, false]);
  });

  it('a bad value in a link is named and the rest kept', () => {
    const { config, errors } = configFromQuery('?dp=20&ranks=2');
    expect(errors.map((e) => e.message)).toEqual(['dp = 20: must be an integer between 1 and 16']);
    expect([config.dp, config.ranks]).toEqual([1, 2]);
  });
});
