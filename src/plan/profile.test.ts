import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildModelSpec } from '../nn/model-config.ts';
import { blockCosts } from '../nn/model-spec.ts';
import { flopsProfile } from './flops-profile.ts';
import { parseProfile, profileFromJson, profileToJson, stageCosts, uniformProfile } from './profile.ts';

const good = {
  version: 1,
  unit: 'ms',
  source: 'hand',
  blocks: [
    { name: 'a', F: 1, I: 2, W: 0.5, heldBytes: 100, heldBytesRecompute: 10 },
    { name: 'b', F: 2, I: 2, W: 2, B: 3.5, heldBytes: 50 },
    { F: 3, I: 1, W: 1 },
  ],
  comm: [0.25, 0.5],
};

describe('profile', () => {
  it('fills defaults: B = I + W, names, heldBytesRecompute = heldBytes, comm 0', () => {
    const p = parseProfile(good);
    expect(p.blocks[0]).toEqual({ name: 'a', F: 1, I: 2, W: 0.5, B: 2.5, heldBytes: 100, heldBytesRecompute: 10 });
    expect(p.blocks[1].B).toBe(3.5);
    expect(p.blocks[1].heldBytesRecompute).toBe(50);
    expect(p.blocks[2]).toMatchObject({ name: 'block2', B: 2, heldBytes: 0 });
    expect(parseProfile({ blocks: [{ F: 1, I: 1, W: 1 }, { F: 1, I: 1, W: 1 }] })).toMatchObject({ unit: 'ms', comm: [0], version: 1 });
  });

  it('round-trips through JSON (random profiles)', () => {
    const block = fc.record({
      name: fc.string({ maxLength: 8 }),
      F: fc.double({ min: 0, max: 1e6, noNaN: true }),
      I: fc.double({ min: 0, max: 1e6, noNaN: true }),
      W: fc.double({ min: 0, max: 1e6, noNaN: true }),
      heldBytes: fc.integer({ min: 0, max: 1e9 }),
    });
    fc.assert(
      fc.property(fc.array(block, { minLength: 1, maxLength: 8 }), fc.array(fc.double({ min: 0, max: 10, noNaN: true }), { minLength: 7, maxLength: 7 }), (blocks, comm) => {
        const p = parseProfile({ unit: 'unit', blocks, comm: comm.slice(0, blocks.length - 1) });
        expect(profileFromJson(profileToJson(p))).toEqual(p);
      }),
      { numRuns: 100 },
    );
  });

  it('refuses bad input naming the field, the value and the rule', () => {
    const bad = (x: unknown) => {
      try {
        parseProfile(x);
      } catch (e) {
        return (e as Error).message;
      }
      return 'accepted';
    };
    const withBlock = (b: unknown) => ({ ...good, blocks: [good.blocks[0], b, good.blocks[2]] });
    expect(bad(withBlock({ F: 1, I: 1 }))).toBe('profile.blocks[1].W = undefined: is missing: every block needs F, I and W times');
    expect(bad(withBlock({ F: -1, I: 1, W: 1 }))).toBe('profile.blocks[1].F = -1: must be at least 0 (a time or a size cannot be negative)');
    expect(bad(withBlock({ F: 1, I: 'x', W: 1 }))).toBe('profile.blocks[1].I = "x": must be a finite number');
    expect(bad(withBlock({ F: 1, I: 1, W: 1, heldBytes: 1, heldBytesRecompute: 2 }))).toContain('profile.blocks[1].heldBytesRecompute = 2: must be at most heldBytes (1)');
    expect(bad(withBlock({ F: 1, I: 1, W: 1, Fwd: 2 }))).toContain('profile.blocks[1].Fwd = 2: is not a field of a block profile');
    expect(bad(withBlock(7))).toContain('profile.blocks[1] = 7: must be an object');
    expect(bad({ ...good, comm: [1] })).toBe('profile.comm.length = 1: must list one time per boundary between blocks, 2 for 3 blocks');
    expect(bad({ ...good, comm: [1, -2] })).toContain('profile.comm[1] = -2: must be at least 0');
    expect(bad({ ...good, blocks: [] })).toContain('profile.blocks = []: must be a non-empty list');
    expect(bad({ ...good, unit: 's' })).toBe('profile.unit = "s": must be one of ms, unit');
    expect(bad({ ...good, version: 2 })).toBe('profile.version = 2: must be 1');
    expect(bad({ ...good, extra: 1 })).toContain('profile.extra = 1: is not a field of a profile');
    expect(bad(null)).toContain('profile = null: must be an object');
    expect(bad({ ...good, lanes: 0 })).toContain('profile.lanes = 0: must be a finite number greater than 0');
    expect(parseProfile({ ...good, lanes: 1.6 }).lanes).toBe(1.6);
    expect(profileFromJson(profileToJson(parseProfile({ ...good, lanes: 1.6 })))).toEqual(parseProfile({ ...good, lanes: 1.6 }));
    expect(() => profileFromJson('{"blocks": [')).toThrow(/^profile = .*: is not valid JSON/);
  });

  it('reads and writes a tp group\'s all-reduce (tpAllReduce) as it does the data-parallel one, refusing a bad one by field', () => {
    const tpAllReduce = { replicas: 2, latency: 0.1, bandwidth: 5e5, samples: [{ bytes: 1024, time: 0.2 }, { bytes: 1 << 20, time: 2 }] };
    const p = parseProfile({ ...good, tpAllReduce });
    expect(p.tpAllReduce).toEqual(tpAllReduce);
    expect(profileFromJson(profileToJson(p))).toEqual(p);
    expect(() => parseProfile({ ...good, tpAllReduce: { ...tpAllReduce, replicas: 1 } })).toThrow('profile.tpAllReduce.replicas = 1: must be a whole number ≥ 2');
  });

  it('sums blocks into stages, with the communication at each cut', () => {
    const p = parseProfile(good);
    expect(stageCosts(p, [[0, 2], [2, 3]])).toEqual({ F: [3, 3], I: [4, 1], W: [2.5, 1], B: [6, 2], heldBytes: [150, 0], comm: [0.5] });
    expect(stageCosts(p, [[0, 1], [1, 3]], true).heldBytes).toEqual([10, 50]);
    expect(() => stageCosts(p, [[0, 1], [2, 3]])).toThrow('ranges[1] = [2, 3]: must be a non-empty block range starting at 1');
    expect(() => stageCosts(p, [[0, 2]])).toThrow('must cover all 3 blocks');
    expect(stageCosts(uniformProfile(4), [[0, 1], [1, 4]]).F).toEqual([1, 3]);
  });

  it('estimates from FLOPs: forward ordered like blockCosts, W only where there are weights', () => {
    const spec = buildModelSpec({ model: 'char-mlp', dataset: 'names', hidden: 64, layers: 3, activation: 'gelu', context: 4, embedDim: 8 });
    const p = flopsProfile(spec, 16);
    expect(p.blocks.map((b) => b.F)).toEqual(blockCosts(spec).map((c) => c * 16));
    for (const b of p.blocks) {
      expect(b.W).toBeGreaterThan(0);
      expect(b.B).toBe(b.I + b.W);
      expect(b.heldBytesRecompute).toBeLessThanOrEqual(b.heldBytes);
    }
    // The first block starts with the embedding: no input gradient for indices.
    expect(p.blocks[0].I).toBeLessThan(p.blocks[0].F);
    expect(parseProfile(JSON.parse(profileToJson(p)))).toEqual(p);
  });
});
