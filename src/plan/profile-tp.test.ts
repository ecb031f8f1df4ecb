import { describe, expect, it } from 'vitest';
import { simulate } from '../schedule/index.ts';
import { makePlan } from './plan.ts';
import { parseProfile, profileFromJson, profileToJson } from './profile.ts';
import { tpCollectiveTime, tpWorkerProfile } from './profile-tp.ts';

// Three blocks: an embedding + GPT block, a GPT block, a head; whole times F = k, I = k, W = k / 2; the tp pieces
// cost 0.6 of them (the split matmuls halved, the rest whole), weights and activations likewise smaller.
const whole = [2, 2, 1];
const fit = { replicas: 2, latency: 0.25, bandwidth: 1000, samples: [{ bytes: 1000, time: 1.5 }] };
const ar = (bytes: number) => ({ coll: 'tp-all-reduce' as const, bytes });
const raw = {
  unit: 'ms',
  source: 'test',
  blocks: whole.map((k, i) => ({ name: `b${i}`, F: k, I: k, W: k / 2, heldBytes: 100 * k, paramBytes: 1000 * k })),
  comm: [0.5, 0.5],
  lanes: 2,
  tpAllReduce: fit,
  tp: {
    t: 2,
    blocks: whole.map((k, i) => ({
      F: 0.6 * k,
      I: 0.6 * k,
      W: 0.3 * k,
      heldBytes: 60 * k,
      paramBytes: 600 * k,
      forward: i < 2 ? [ar(2000), ar(2000)] : [],
      backward: i < 2 ? [ar(2000), ar(2000)] : [],
    })),
  },
};

describe('planning tp from a cluster profile (profile.tp, profile-tp.ts)', () => {
  it('prices a collective on the ring fitted over the tp group: an all-reduce 2(t−1)α + 2(t−1)/t·n/β, an all-gather half', () => {
    // t = 2, α 0.25, β 1000 bytes/ms, n 2000 bytes: ring half = 0.25 + 0.5 · 2 = 1.25.
    expect(tpCollectiveTime(ar(2000), fit)).toBeCloseTo(2.5, 12);
    expect(tpCollectiveTime({ coll: 'tp-all-gather', bytes: 2000 }, fit)).toBeCloseTo(1.25, 12);
    const four = { ...fit, replicas: 4 };
    expect(tpCollectiveTime(ar(4000), four)).toBeCloseTo(2 * (3 * 0.25 + 0.75 * 4), 12);
  });

  it('gives one tp worker: the pieces’ times with the forward’s collectives in F and the backward’s in I and B, the pieces’ bytes', () => {
    const p = tpWorkerProfile(parseProfile(raw), 2);
    // Blocks 0 and 1: two all-reduces of 2000 bytes each way, 5 ms; the head none.
    expect(p.blocks.map((b) => [b.F, b.I, b.W, b.B])).toEqual([
      [1.2 + 5, 1.2 + 5, 0.6, 1.2 + 0.6 + 5],
      [1.2 + 5, 1.2 + 5, 0.6, 1.2 + 0.6 + 5],
      [0.6, 0.6, 0.3, 0.6 + 0.3],
    ].map((r) => r.map((x) => expect.closeTo(x, 12))));
    expect(p.blocks.map((b) => [b.heldBytes, b.paramBytes])).toEqual([[120, 1200], [120, 1200], [60, 600]]);
    expect(p.blocks.map((b) => b.name)).toEqual(['b0', 'b1', 'b2']);
    expect({ comm: p.comm, lanes: p.lanes }).toEqual({ comm: [0.5, 0.5], lanes: 2 });
    expect(tpWorkerProfile(parseProfile(raw), 1)).toEqual(parseProfile(raw));
  });

  it('plans one tp worker per rank: stage costs from the worker profile, its collectives reported, lanes shared by t× the workers', () => {
    const profile = parseProfile(raw);
    const plan = makePlan({ profile, ranks: 2, microbatches: 4, cap: { microbatches: 4 }, tp: 2 });
    const worker = tpWorkerProfile(profile, 2);
    expect(plan.costs).toMatchObject(makePlan({ profile: { ...worker, lanes: undefined }, ranks: 2, microbatches: 4, cap: { microbatches: 4 } }).costs);
    const perStage = plan.partition.ranges.map(([a, b]) => profile.tp!.blocks.slice(a, b).reduce((s, blk) => s + (blk.forward.length > 0 ? 5 : 0), 0));
    expect(plan.tp).toEqual({ t: 2, forward: perStage, backward: perStage });
    // Two lanes shared by 2 ranks × 2 tp workers: each tp group plays like one worker on one lane.
    expect(plan.predictions!.thisMachine.makespan).toBeCloseTo(simulate(plan.auto.schedule, { ...plan.costs, lanes: 1 }).makespan, 9);
    expect(plan.predictions!.independent.makespan).toBeCloseTo(plan.auto.simulation.makespan, 9);
    // dp rings move the pieces' weight bytes.
    const dp = makePlan({ profile: parseProfile({ ...raw, allReduce: fit }), ranks: 2, microbatches: 4, cap: { microbatches: 4 }, tp: 2, dp: 2 });
    expect(dp.costs.gradBytes).toEqual(dp.partition.ranges.map(([a, b]) => raw.tp.blocks.slice(a, b).reduce((s, blk) => s + blk.paramBytes, 0)));
  });

  it('with sequence parallelism: reduce-scatters priced as half a ring, the boundaries at a worker\'s block of the rows', () => {
    // t = 2, α 0.25, β 1000 bytes/ms: a gather or scatter of 2000 bytes 1.25, an all-reduce of the LayerNorms' 32 bytes
    // 2 · (0.25 + 0.5 · 0.032) = 0.532. A block: 4 forward (5 ms); backward 2 + 2 (5 ms) and 6 sums (3.192 ms).
    const gs = (coll: 'tp-all-gather' | 'tp-reduce-scatter') => ({ coll, bytes: 2000 });
    expect(tpCollectiveTime(gs('tp-reduce-scatter'), fit)).toBeCloseTo(1.25, 12);
    const forward = [gs('tp-all-gather'), gs('tp-reduce-scatter'), gs('tp-all-gather'), gs('tp-reduce-scatter')];
    const backward = [...forward, ...Array.from({ length: 6 }, () => ar(32))];
    const sp = { ...raw, tp: { ...raw.tp, sequenceParallel: true, comm: [0.2, 0.3], blocks: raw.tp.blocks.map((b, i) => (i < 2 ? { ...b, forward, backward } : b)) } };
    const profile = parseProfile(sp);
    expect(profileFromJson(profileToJson(profile))).toEqual(profile);
    const p = tpWorkerProfile(profile, 2);
    expect(p.blocks[1].F).toBeCloseTo(1.2 + 5, 12);
    expect(p.blocks[1].I).toBeCloseTo(1.2 + 5 + 6 * 0.532, 12);
    expect(p.comm).toEqual([0.2, 0.3]);
    expect(p.source).toBe('test; one worker of a tp group of 2 with sequence parallelism');
    // tp = 1 from the same profile keeps the whole boundaries.
    expect(tpWorkerProfile(profile, 1).comm).toEqual([0.5, 0.5]);
    const plan = makePlan({ profile, ranks: 2, microbatches: 4, cap: { microbatches: 4 }, tp: 2 });
    expect(plan.costs.comm).toEqual([plan.partition.ranges[0][1] === 1 ? 0.2 : 0.3, 0]);
  });

  it('refuses a tp it has no measurements for, naming the field, the value and how to measure it', () => {
    const profile = parseProfile(raw);
    expect(() => tpWorkerProfile(profile, 4)).toThrow('tp = 4: must be the tp the profile was measured with (profile.tp.t = 2); for tp = 4, profile with train.py --profile on a bundle exported with --tp 4');
    expect(() => tpWorkerProfile(parseProfile({ ...raw, tp: undefined }), 2)).toThrow('profile.tp = undefined: is missing: planning tp = 2 needs each block measured as one tp worker computes it');
    expect(() => tpWorkerProfile(parseProfile({ ...raw, tpAllReduce: undefined }), 2)).toThrow("profile.tpAllReduce = undefined: is missing: planning tp = 2 needs the tp group's all-reduce");
    expect(() => makePlan({ profile, ranks: 2, microbatches: 4, cap: { microbatches: 4 }, tp: 0 })).toThrow('tp = 0: must be a whole number ≥ 1');
  });

  it('reads and writes the tp part, refusing a bad one by field', () => {
    const profile = parseProfile(raw);
    expect(profileFromJson(profileToJson(profile))).toEqual(profile);
    expect(profile.tp!.blocks[2]).toMatchObject({ name: 'b2', B: 0.3 * 1 + 0.6 * 1, forward: [], backward: [] });
    const bad: [unknown, string][] = [
      [{ ...raw.tp, t: 1 }, 'profile.tp.t = 1: must be a whole number ≥ 2'],
      [{ ...raw.tp, t: 4 }, 'profile.tp.t = 4: must be the tp group tpAllReduce was measured over (replicas = 2)'],
      [{ ...raw.tp, blocks: raw.tp.blocks.slice(1) }, 'profile.tp.blocks.length = 2: must list one entry per block of the profile, 3'],
      [{ ...raw.tp, blocks: [{ ...raw.tp.blocks[0], forward: [{ coll: 'broadcast', bytes: 1 }] }, ...raw.tp.blocks.slice(1)] }, 'profile.tp.blocks[0].forward[0].coll = "broadcast": must be one of tp-all-reduce, tp-all-gather, tp-reduce-scatter'],
      [{ ...raw.tp, blocks: [{ ...raw.tp.blocks[0], backward: undefined }, ...raw.tp.blocks.slice(1)] }, 'profile.tp.blocks[0].backward = undefined: must be a list of {coll, bytes}'],
      [{ ...raw.tp, blocks: [{ ...raw.tp.blocks[0], F: -1 }, ...raw.tp.blocks.slice(1)] }, 'profile.tp.blocks[0].F = -1: must be at least 0'],
      [{ ...raw.tp, extra: 1 }, "profile.tp.extra = 1: is not a field of a profile's tp part"],
      [{ ...raw.tp, sequenceParallel: 'yes' }, 'profile.tp.sequenceParallel = "yes": must be true or false'],
      [{ ...raw.tp, comm: [0.1, 0.1] }, 'profile.tp.comm = [0.1, 0.1]: is for sequence parallelism (a tp worker sends its block of the rows): it needs sequenceParallel: true'],
      [{ ...raw.tp, sequenceParallel: true, comm: [0.1] }, 'profile.tp.comm.length = 1: must list one time per boundary between blocks, 2 for 3 blocks'],
      [{ ...raw.tp, sequenceParallel: true, comm: [0.1, -1] }, 'profile.tp.comm[1] = -1: must be at least 0'],
    ];
    for (const [tp, message] of bad) expect(() => parseProfile({ ...raw, tp }), message).toThrow(message);
  });
});
