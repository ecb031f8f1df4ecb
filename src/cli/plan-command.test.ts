import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makePlan } from '../plan/plan.ts';
import { parseProfile, profileToJson } from '../plan/profile.ts';
import { fromCsv, simulate, validateSchedule } from '../schedule/index.ts';
import { fmt } from './format.ts';
import { run, spawn } from './cli-test-support.ts';

const dir = mkdtempSync(join(tmpdir(), 'pipelab-plan-'));

// A heavy head, as in the names models: six light blocks and one three times as heavy.
const profile = parseProfile({
  unit: 'ms',
  source: 'test',
  blocks: [1, 1, 1, 1, 1, 1, 3].map((k, i) => ({ name: `b${i}`, F: k, I: k, W: k, heldBytes: 1000 * k })),
  comm: [0.1, 0.1, 0.1, 0.1, 0.1, 0.1],
});
const file = join(dir, 'profile.json');
writeFileSync(file, profileToJson(profile));

describe('pipelab plan (spawned)', () => {
  it('prints the auto schedule as PyTorch CSV that loads back valid, within the cap', () => {
    const r = spawn('plan', '--profile', file, '--ranks', '3', '--microbatches', '6', '--mem-cap', '2', '--format', 'csv');
    expect(r.code, r.err).toBe(0);
    const s = fromCsv(r.out, 'auto');
    expect(validateSchedule(s)).toEqual({ ok: true });
    const plan = makePlan({ profile, ranks: 3, microbatches: 6, cap: { microbatches: 2 } });
    expect(s.order).toEqual(plan.auto.schedule.order);
    expect(Math.max(...simulate(s).memory.map((x) => x.peakMicrobatches))).toBeLessThanOrEqual(2);
  });

  it('names a missing flag and a cap nothing meets; exit 2', () => {
    const r = spawn('plan', '--profile', file, '--ranks', '3', '--microbatches', '6');
    expect(r.code).toBe(2);
    expect(r.err).toContain('--mem-cap = null: is required');
  });
});

describe('pipelab plan (in process)', () => {
  it('prints the plan: the split (the heavy head alone), the schedule, and the baselines', () => {
    const r = run('plan', '--profile', file, '--ranks', '3', '--microbatches', '8', '--mem-cap', '3');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('split      stage 0: blocks 0–2; stage 1: blocks 3–5; stage 2: blocks 6–6');
    expect(r.out).toContain('cap        3 micro-batches per rank');
    expect(r.out).toMatch(/schedule\s+makespan\s+bubble\s+peak activations\s+peak bytes\s+fits the cap/);
    expect(r.out).toMatch(/\n1f1b\s+\S+\s+\S+\s+3\s+\S+\s+yes/);
    expect(r.out).toMatch(/\ngpipe\s+\S+\s+\S+\s+8\s+\S+\s+no/);
  });

  it('predicts this machine (shared lanes) beside independent GPUs when the profile has lanes', () => {
    const shared = join(dir, 'shared.json');
    writeFileSync(shared, profileToJson({ ...profile, lanes: 1 }));
    const r = run('plan', '--profile', shared, '--ranks', '3', '--microbatches', '4', '--mem-cap', '3');
    expect(r.code, r.err).toBe(0);
    const plan = makePlan({ profile: { ...profile, lanes: 1 }, ranks: 3, microbatches: 4, cap: { microbatches: 3 } });
    const p = plan.predictions;
    if (!p) throw new Error('no predictions');
    // One lane: the device does all the work one block at a time, plus whatever waits on the links.
    const work = profile.blocks.reduce((x, b) => x + b.F + b.I + b.W, 0) * 4;
    expect(p.thisMachine.makespan).toBeGreaterThanOrEqual(work - 1e-9);
    expect(p.independent.makespan).toBe(plan.auto.simulation.makespan);
    expect(r.out).toContain(`predicted  this machine (1 lanes shared by 3 ranks): makespan ${fmt(p.thisMachine.makespan)} ms`);
    expect(r.out).toContain(`3 independent GPUs: makespan ${fmt(plan.auto.simulation.makespan)} ms`);
    expect(run('plan', '--profile', file, '--ranks', '3', '--microbatches', '4', '--mem-cap', '3').out).not.toContain('predicted');
  });

  it('prints JSON and takes a cap in bytes', () => {
    const r = run('plan', '--profile', file, '--ranks', '3', '--microbatches', '4', '--mem-cap', '6KB', '--format', 'json');
    expect(r.code, r.err).toBe(0);
    const s = JSON.parse(r.out);
    expect(validateSchedule(s)).toEqual({ ok: true });
    const plan = makePlan({ profile, ranks: 3, microbatches: 4, cap: { bytes: 6000 } });
    for (const m of simulate(s, plan.costs).memory) expect(m.peakBytes).toBeLessThanOrEqual(6000);
  });

  it('refuses bad flags and bad profiles naming the field, the value and the rule', () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ blocks: [{ F: 1, I: 1, W: 1 }, { F: 1, I: -2, W: 1 }] }));
    const cases: [string[], number, string][] = [
      [['plan', '--profile', file, '--ranks', '8', '--microbatches', '4', '--mem-cap', '2'], 2, '--ranks = 8: must be at most the number of blocks, 7'],
      [['plan', '--profile', file, '--ranks', '3', '--microbatches', '4', '--mem-cap', '0'], 2, '--mem-cap = "0": must be at least 1 micro-batch'],
      [['plan', '--profile', file, '--ranks', '3', '--microbatches', '4', '--mem-cap', '2.5'], 2, '--mem-cap = "2.5": must be a number of micro-batches'],
      [['plan', '--profile', file, '--ranks', '3', '--microbatches', '4', '--mem-cap', '4 parsecs'], 2, '--mem-cap = "4 parsecs": must be a number of micro-batches'],
      [['plan', '--profile', file, '--ranks', '3', '--microbatches', '4', '--mem-cap', '2KB'], 2, '--mem-cap = "2KB": no split into 3 stages keeps every rank\'s activations within it; the smallest cap that works is 3000 bytes'],
      [['plan', '--profile', file, '--ranks', '0', '--microbatches', '4', '--mem-cap', '2'], 2, '--ranks = "0": must be an integer between 1 and 1024'],
      [['plan', '--profile', join(dir, 'nope.json'), '--ranks', '3', '--microbatches', '4', '--mem-cap', '2'], 2, 'cannot be read'],
      [['plan', '--profile', bad, '--ranks', '2', '--microbatches', '4', '--mem-cap', '2'], 1, 'profile.blocks[1].I = -2: must be at least 0'],
      [['plan', '--profile', file, '--ranks', '3', '--microbatches', '4', '--mem-cap', '2', '--format', 'yaml'], 2, '--format = "yaml": must be one of text, csv, json'],
    ];
    for (const [args, code, message] of cases) {
      const r = run(...args);
      expect(r.code, args.join(' ')).toBe(code);
      expect(r.err, args.join(' ')).toContain(message);
    }
  });

  it('has --help and is listed in the main help', () => {
    expect(run('plan', '--help').out).toContain('usage: pipelab plan --profile FILE --ranks P --microbatches M --mem-cap C');
    expect(run('--help').out).toContain('plan       from a profile');
  });
});

describe('pipelab plan --dp (a profile taken on a data-parallel cluster)', () => {
  const meshProfile = parseProfile({
    ...JSON.parse(profileToJson(profile)),
    blocks: profile.blocks.map((b, i) => ({ ...b, paramBytes: 1000 * (i + 1) })),
    lanes: 4,
    allReduce: { replicas: 2, latency: 0.05, bandwidth: 1e5, samples: [{ bytes: 1000, time: 0.11 }, { bytes: 100000, time: 1.1 }] },
  });
  const meshFile = join(dir, 'mesh-profile.json');
  writeFileSync(meshFile, profileToJson(meshProfile));
  const flags = ['--ranks', '3', '--microbatches', '8', '--mem-cap', '3'];

  it('adds each stage’s ring all-reduce of its blocks’ weight bytes, with the profile’s α–β', () => {
    const r = run('plan', '--profile', meshFile, ...flags, '--dp', '2');
    expect(r.code, r.err).toBe(0);
    const plan = makePlan({ profile: meshProfile, ranks: 3, microbatches: 8, cap: { microbatches: 3 }, dp: 2 });
    // Stages of blocks 0–2, 3–5 and 6: 1000 + 2000 + 3000 bytes, 4000 + 5000 + 6000, 7000.
    expect(plan.costs.gradBytes).toEqual([6000, 15000, 7000]);
    expect(plan.costs.allReduce).toEqual({ latency: 0.05, bandwidth: 1e5, overlap: true, zero: 0 });
    const sim = plan.auto.simulation;
    // A ring over 2 replicas: 2(n − 1) · α + 2(n − 1)/n · bytes / β.
    expect(sim.dp?.allReduceTime.map((t) => Number(t.toFixed(9)))).toEqual([6000, 15000, 7000].map((b) => Number((2 * 0.05 + b / 1e5).toFixed(9))));
    expect(r.out).toContain(`mesh       2 replicas × 3 ranks; all-reduce per stage ${sim.dp!.allReduceTime.map((t) => fmt(t)).join(', ')} ms`);
    expect(r.out).toContain('ring fitted over 2 replicas');
    // On the shared device the mesh's 6 workers share the 4 lanes: slower than one pipeline alone.
    expect(r.out).toContain('4 lanes shared by 6 workers');
    const one = makePlan({ profile: meshProfile, ranks: 3, microbatches: 8, cap: { microbatches: 3 } });
    expect(plan.predictions!.thisMachine.makespan).toBeGreaterThan(one.predictions!.thisMachine.makespan);
    expect(sim.makespan).toBeGreaterThan(one.auto.simulation.makespan);
  });

  it('refuses dp without the cluster’s all-reduce or a block’s weight bytes, and a dp that is not a whole number ≥ 1', () => {
    const r = run('plan', '--profile', file, ...flags, '--dp', '2');
    expect(r.code).toBe(1);
    expect(r.err).toContain('profile.allReduce = undefined: is missing: planning dp = 2 replicas needs the all-reduce measured on the cluster');
    const partial = JSON.parse(profileToJson(meshProfile)) as { blocks: Record<string, unknown>[] };
    delete partial.blocks[4].paramBytes;
    const partialFile = join(dir, 'partial-profile.json');
    writeFileSync(partialFile, JSON.stringify(partial));
    const p = run('plan', '--profile', partialFile, ...flags, '--dp', '2');
    expect(p.err).toContain("profile.blocks[4].paramBytes = undefined: is missing: planning dp = 2 replicas needs each block's weight bytes");
    const z = run('plan', '--profile', meshFile, ...flags, '--dp', '0');
    expect(z.code).toBe(2);
    expect(z.err).toContain('--dp = "0": must be an');
    // dp = 1 (the default) needs neither.
    expect(run('plan', '--profile', file, ...flags, '--dp', '1').code).toBe(0);
  });
});

describe('pipelab plan --tp (one tp worker per rank, from the profile’s tp part)', () => {
  // Seven blocks as above, each piece costing 0.6 of the whole, two all-reduces of 4 KB each way in each (the head none).
  const tpProfile = parseProfile({
    ...JSON.parse(profileToJson(profile)),
    lanes: 4,
    tpAllReduce: { replicas: 2, latency: 0.05, bandwidth: 1e5, samples: [{ bytes: 1000, time: 0.11 }, { bytes: 100000, time: 1.1 }] },
    tp: {
      t: 2,
      blocks: profile.blocks.map((b, i) => {
        const colls = i < 6 ? [{ coll: 'tp-all-reduce', bytes: 4000 }, { coll: 'tp-all-reduce', bytes: 4000 }] : [];
        return { F: 0.6 * b.F, I: 0.6 * b.I, W: 0.6 * b.W, heldBytes: 0.6 * b.heldBytes, forward: colls, backward: colls };
      }),
    },
  });
  const tpFile = join(dir, 'tp-profile.json');
  writeFileSync(tpFile, profileToJson(tpProfile));
  const flags = ['--ranks', '3', '--microbatches', '8', '--mem-cap', '3'];

  it('plans from the pieces’ times with their collectives on the fitted ring, and says what each stage waits for', () => {
    const r = run('plan', '--profile', tpFile, ...flags, '--tp', '2');
    expect(r.code, r.err).toBe(0);
    const plan = makePlan({ profile: tpProfile, ranks: 3, microbatches: 8, cap: { microbatches: 3 }, tp: 2 });
    // One all-reduce of 4000 bytes over 2: 2 · (0.05 + 0.5 · 4000 / 1e5) = 0.14 ms; two per block each way.
    const perBlock = 2 * 0.14;
    const blocks = plan.partition.ranges.map(([a, b]) => Math.min(b, 6) - Math.min(a, 6));
    expect(plan.tp!.forward.map((x) => Number(x.toFixed(9)))).toEqual(blocks.map((n) => Number((n * perBlock).toFixed(9))));
    expect(r.out).toContain(`tp         2 workers per stage (6 in all), planned as one of them computes; collectives per micro-batch and stage: F ${plan.tp!.forward.map((x) => fmt(x)).join(', ')} ms`);
    expect(r.out).toContain(`schedule   auto (${plan.auto.candidate}): makespan ${fmt(plan.auto.simulation.makespan)} ms`);
    expect(r.out).toContain('4 lanes shared by 6 workers');
    expect(r.out).toContain('6 independent GPUs');
  });

  it('refuses a tp the profile was not measured with, and tp on a profile without a tp part, naming the flag or field', () => {
    const other = run('plan', '--profile', tpFile, ...flags, '--tp', '4');
    expect(other.code).toBe(2);
    expect(other.err).toContain('--tp = 4: must be the tp the profile was measured with (profile.tp.t = 2)');
    const none = run('plan', '--profile', file, ...flags, '--tp', '2');
    expect(none.code).toBe(1);
    expect(none.err).toContain('profile.tp = undefined: is missing: planning tp = 2 needs each block measured as one tp worker computes it');
    expect(run('plan', '--profile', tpFile, ...flags, '--tp', '0').err).toContain('--tp = "0": must be an integer between 1 and 64');
  });
});

describe('pipelab plan --dp D --zero Z (ZeRO on the cluster’s ring)', () => {
  // The seven blocks above with weights, on a slow ring, so that ZeRO-2/3's collectives between the actions show.
  const zeroProfile = parseProfile({
    ...JSON.parse(profileToJson(profile)),
    blocks: profile.blocks.map((b, i) => ({ ...b, paramBytes: 1000 * (i + 1) })),
    lanes: 4,
    allReduce: { replicas: 2, latency: 0.05, bandwidth: 2e3, samples: [{ bytes: 1000, time: 0.6 }, { bytes: 100000, time: 50 }] },
  });
  const zeroFile = join(dir, 'zero-profile.json');
  writeFileSync(zeroFile, profileToJson(zeroProfile));
  const flags = ['--ranks', '3', '--microbatches', '8', '--mem-cap', '3', '--dp', '2'];
  const plan = (zero: 0 | 1 | 2 | 3, reshard: 'step' | 'microbatch' = 'step') => makePlan({ profile: zeroProfile, ranks: 3, microbatches: 8, cap: { microbatches: 3 }, dp: 2, zero, reshard });

  it('plays each stage on the fitted ring: ZeRO-1 as the all-reduce, 2 and 3 between the actions; auto the fastest that fits under them', () => {
    const [z0, z1, z2, z3, z3a] = [plan(0), plan(1), plan(2), plan(3), plan(3, 'microbatch')];
    expect(z1.auto.simulation.makespan).toBeCloseTo(z0.auto.simulation.makespan, 9);
    expect(z2.costs.allReduce).toMatchObject({ latency: 0.05, bandwidth: 2e3, zero: 2 });
    expect(z3a.costs.allReduce).toMatchObject({ zero: 3, reshard: 'microbatch' });
    for (const p of [z2, z3, z3a]) {
      // The auto schedule's makespan is its own simulation under the ZeRO costs, no slower than any named one that fits.
      expect(p.auto.simulation.makespan).toBeCloseTo(simulate(p.auto.schedule, p.costs).makespan, 9);
      for (const b of p.baselines.filter((x) => x.fits)) expect(p.auto.simulation.makespan).toBeLessThanOrEqual(b.makespan + 1e-9);
      expect(validateSchedule(p.auto.schedule)).toEqual({ ok: true });
    }
    // Gathering before every action moves the most: the slowest step.
    expect(z3a.auto.simulation.makespan).toBeGreaterThan(z3.auto.simulation.makespan);
    // One worker's model states per stage (fp32: weights, gradients, AdamW's m and v = 4 × the weight bytes unsharded).
    const G = [6000, 15000, 7000];
    expect(z0.modelStateBytes).toEqual(G.map((g) => 4 * g));
    expect(z1.modelStateBytes).toEqual(G.map((g) => 2 * g + g));
    expect(z2.modelStateBytes).toEqual(G.map((g) => g + 1.5 * g));
    expect(z3.modelStateBytes).toEqual(G.map((g) => 2 * g));
  });

  it('prints the stage, the states and why this machine is not predicted at ZeRO-2/3 (lanes shared)', () => {
    const r = run('plan', '--profile', zeroFile, ...flags, '--zero', '3', '--reshard', 'microbatch');
    expect(r.code, r.err).toBe(0);
    const p = plan(3, 'microbatch');
    expect(r.out).toContain(`schedule   auto (${p.auto.candidate}): makespan ${fmt(p.auto.simulation.makespan)} ms`);
    expect(r.out).toContain("zero       ZeRO-3 over the 2 replicas on the same ring: each stage's gradients reduce-scattered after every B and W, its weights all-gathered before the actions that read them (reshard microbatch)");
    expect(r.out).toContain("states     one worker's weights, gradients and AdamW state (fp32) per stage: 12000, 30000, 14000 bytes at ZeRO-3");
    expect(r.out).toContain('reduce-scatters and all-gathers per stage');
    expect(r.out).toContain("predicted  this machine: not simulated: ZeRO-3's collectives between the actions are simulated on independent devices only; this machine's 4 lanes are shared by 6 workers");
    const one = run('plan', '--profile', zeroFile, ...flags, '--zero', '1');
    expect(one.out).toContain('predicted  this machine (4 lanes shared by 6 workers)');
  });

  it('refuses ZeRO without replicas and --reshard without ZeRO-3, naming the flag, the value and the rule', () => {
    const none = run('plan', '--profile', zeroFile, '--ranks', '3', '--microbatches', '8', '--mem-cap', '3', '--zero', '2');
    expect(none.code).toBe(2);
    expect(none.err).toContain('--zero = "2": ZeRO-2 shards over the data-parallel replicas: it needs --dp 2 or more (got --dp 1)');
    const reshard = run('plan', '--profile', zeroFile, ...flags, '--zero', '2', '--reshard', 'microbatch');
    expect(reshard.err).toContain('--reshard = "microbatch": applies to ZeRO-3 only: it needs --zero 3 (got --zero 2)');
    // One word for one thing: the run configuration's (export-torch, the URL); the old word is refused.
    const old = run('plan', '--profile', zeroFile, ...flags, '--zero', '3', '--reshard', 'action');
    expect(old.err).toContain('--reshard = "action": must be one of step, microbatch');
    expect(() => makePlan({ profile: zeroProfile, ranks: 3, microbatches: 8, cap: { microbatches: 3 }, dp: 1, zero: 1 })).toThrow('zero = 1: ZeRO-1 shards over the data-parallel replicas: it needs dp ≥ 2 (got dp = 1)');
    expect(() => makePlan({ profile: zeroProfile, ranks: 3, microbatches: 8, cap: { microbatches: 3 }, dp: 2, zero: 4 as never })).toThrow('zero = 4: must be 0, 1, 2 or 3 (the ZeRO stage)');
  });
});
