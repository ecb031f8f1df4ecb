/** `pipelab plan --model gpt ...`: a transformer planned on N devices from the command line, and its bad input. */
import { describe, expect, it } from 'vitest';
import { DEVICE_PRESETS } from '../plan/device.ts';
import { planMesh } from '../plan/mesh-plan.ts';
import { run, spawn } from './cli-test-support.ts';

const gpt = ['--model', 'gpt', '--layers', '32', '--hidden', '4096', '--heads', '32', '--seq', '2048', '--vocab', '50257'];
const small = ['--model', 'gpt', '--layers', '8', '--hidden', '1024', '--heads', '16', '--seq', '1024', '--vocab', '32000'];

describe('pipelab plan --model gpt', () => {
  it('plans the 64-device GPT of the issue (spawned, a generous smoke bound on the time) with the planner’s own ranking', () => {
    const t0 = performance.now();
    const r = spawn('plan', ...gpt, '--devices', '64', '--devices-per-node', '8', '--global-batch', '512', '--device', 'h100', '--top', '5', '--format', 'json');
    expect(r.code, r.err).toBe(0);
    expect(performance.now() - t0).toBeLessThan(30_000);
    const j = JSON.parse(r.out);
    const model = { layers: 32, hidden: 4096, heads: 32, seq: 2048, vocab: 50257, bytesPerElement: 2 };
    const plan = planMesh({ model: model as never, device: DEVICE_PRESETS.h100, devices: 64, globalBatch: 512 });
    expect(j.candidates).toEqual(JSON.parse(JSON.stringify(plan.candidates.slice(0, 5))));
  });

  it('prints the table: mesh, schedule, step, bubble, all-reduce share, memory per device, MFU', () => {
    const r = run('plan', ...small, '--devices', '8', '--global-batch', '32', '--device', 'a100', '--top', '3');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('8 × a100 (312 TFLOP/s peak at 0.5 efficiency, 80 GB), 8 per node');
    expect(r.out).toMatch(/#\s+dp × tp × pp\s+schedule\s+b × m\s+memory saving\s+step ms\s+bubble\s+all-reduce share\s+GB \/ device\s+MFU/);
    expect(r.out.trim().split('\n').filter((l) => /^\d+\s/.test(l))).toHaveLength(3);
    // An explicit device: a slower network makes the planner prefer fewer replicas than on the preset.
    const custom = run('plan', ...small, '--devices', '16', '--global-batch', '32', '--peak-tflops', '100', '--memory-gb', '16', '--bw-intra', '100', '--bw-inter', '1', '--devices-per-node', '4', '--format', 'json');
    expect(custom.code, custom.err).toBe(0);
    expect(JSON.parse(custom.out).device).toMatchObject({ name: 'custom', peakTflops: 100, memoryGB: 16, bwInterGBps: 1, devicesPerNode: 4 });
  });

  it('names no schedule where pp = 1 (one stage, its micro-batches in turn): "no pipeline", in the table and the best line', () => {
    const r = run('plan', ...small, '--devices', '8', '--global-batch', '32', '--device', 'a100', '--top', '200');
    expect(r.code, r.err).toBe(0);
    const rows = r.out.trim().split('\n').filter((l) => /^\d+\s/.test(l));
    const single = rows.filter((l) => /^\d+\s+\d+ × \d+ × 1\s/.test(l));
    expect(single.length).toBeGreaterThan(0);
    for (const l of single) expect(l).toMatch(/ × 1\s+no pipeline\s/);
    for (const l of rows.filter((x) => !single.includes(x))) expect(l).not.toContain('no pipeline');
    const best = run('plan', ...small, '--devices', '8', '--global-batch', '32', '--device', 'a100', '--schedules', '1f1b', '--tp', '8');
    expect(best.out).toMatch(/best {7}dp × tp × pp = 1 × 8 × 1, no pipeline, micro-batch/);
  });

  it('--zero: the least ZeRO stage that fits (auto), or a fixed one; ZeRO-2 and ZeRO-3 in the table', () => {
    // Two wide layers with one head: pp ≤ 2, tp = 1, so at 0.9 GB only ZeRO-3 fits, on 32 × 1 × 1 or 16 × 1 × 2 (docs/planner.md).
    const wide = ['--model', 'gpt', '--layers', '2', '--hidden', '4096', '--heads', '1', '--seq', '256', '--vocab', '32000', '--devices', '32', '--global-batch', '256'];
    const tight = run('plan', ...wide, '--memory-gb', '0.9', '--top', '3');
    expect(tight.code, tight.err).toBe(0);
    const rows = tight.out.trim().split('\n').filter((l) => /^\d+\s/.test(l));
    expect(rows).toHaveLength(3);
    for (const r of rows) expect(r).toContain('ZeRO-3');
    const all = JSON.parse(run('plan', ...wide, '--memory-gb', '0.9', '--top', '1000', '--format', 'json').out) as { candidates: { dp: number; tp: number; pp: number; zero: number }[] };
    expect(all.candidates.every((c) => c.zero === 3)).toBe(true);
    expect(new Set(all.candidates.map((c) => `${c.dp} × ${c.tp} × ${c.pp}`))).toEqual(new Set(['32 × 1 × 1', '16 × 1 × 2']));
    const two = run('plan', ...wide, '--memory-gb', '80', '--zero', '2', '--format', 'json');
    expect(two.code, two.err).toBe(0);
    expect(JSON.parse(two.out).candidates.every((c: { dp: number; zero: number }) => c.zero === (c.dp > 1 ? 2 : 0))).toBe(true);
    expect(run('plan', ...wide, '--memory-gb', '80', '--zero', '2', '--top', '1').out).toMatch(/^1\s.*ZeRO-2/m);
    const none = run('plan', ...wide, '--memory-gb', '0.9', '--zero', '1');
    expect(none.code).toBe(2);
    expect(none.err).toContain('--memory-gb = 0.9: no layout of the 32 devices fits in it (every dp × tp × pp, schedule, micro-batch, ZeRO-1, recomputation none → selective → full tried)');
    expect(run('plan', ...wide, '--memory-gb', '0.01').err).toContain('ZeRO up to ZeRO-3, recomputation none → selective → full tried');
    const bad = run('plan', ...wide, '--zero', '4');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--zero = "4": must be one of auto, 0, 1, 2, 3');
    expect(run('plan', '--model', 'gpt', '--help').out).toContain('--zero Z');
  });

  it('--recompute: selective recomputation where nothing fits without it, before full; a list limits the modes tried', () => {
    // A 4096-token sequence on 16 heads: the attention's core (5·a·s² bytes a layer) is most of what a layer keeps.
    const long = ['--model', 'gpt', '--layers', '4', '--hidden', '1024', '--heads', '16', '--seq', '4096', '--vocab', '32000', '--devices', '4', '--global-batch', '4', '--memory-gb', '4', '--tp', '1'];
    const free = run('plan', ...long, '--format', 'json');
    expect(free.code, free.err).toBe(0);
    const best = JSON.parse(free.out).candidates[0];
    expect(best.recompute).toBe('selective');
    expect(run('plan', ...long, '--top', '1').out).toMatch(/^1\s.*selective recompute/m);
    const none = run('plan', ...long, '--recompute', 'none');
    expect(none.code).toBe(2);
    expect(none.err).toContain('recomputation none tried');
    const full = run('plan', ...long, '--recompute', 'none,full', '--format', 'json');
    expect(full.code, full.err).toBe(0);
    const fullBest = JSON.parse(full.out).candidates[0];
    expect(fullBest.recompute).toBe('full');
    expect(fullBest.stepMs).toBeGreaterThan(best.stepMs);
    const bad = run('plan', ...long, '--recompute', 'none,some');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--recompute = "none,some": names "some"; each must be one of none, selective, full');
  });

  it('refuses bad values naming the flag, the value and the rule', () => {
    const base = ['plan', ...small, '--devices', '8', '--global-batch', '32'];
    const cases: [string[], string][] = [
      [[...base.slice(0, 1), ...small.map((x) => (x === '16' ? '3' : x)), '--devices', '8', '--global-batch', '32'], '--heads = 3: must divide hidden = 1024 evenly'],
      [[...base, '--device', 'tpu'], '--device = "tpu": must be one of h100, h200, a100'],
      [[...base, '--memory-gb', '0'], '--memory-gb = "0": must be a number greater than 0'],
      [[...base, '--efficiency', '2'], '--efficiency = 2: must be at most 1'],
      [[...base, '--memory-gb', '0.01'], '--memory-gb = 0.01: no layout of the 8 devices fits in it'],
      [[...base, '--memory-gb', '0.01'], 'the smallest memory that would fit is'],
      [[...base, '--schedules', '1f1b,gpipe'], '--schedules = "1f1b,gpipe": names "gpipe"'],
      [['plan', '--model', 'gpt', '--layers', '8', '--devices', '8', '--global-batch', '32'], '--hidden = null: is required: the hidden size'],
      [['plan', ...small, '--devices', '0', '--global-batch', '32'], '--devices = "0": must be an integer between 1 and 65536'],
      [['plan', ...small.map((x) => (x === 'gpt' ? 'bert' : x)), '--devices', '8', '--global-batch', '32'], '--model = "bert": must be one of gpt'],
    ];
    for (const [args, message] of cases) {
      const r = run(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err, args.join(' ')).toContain(message);
    }
    expect(run('plan', '--model', 'gpt', '--help').out).toContain('usage: pipelab plan --model gpt --layers L');
    expect(run('plan', '--help').out).toContain('pipelab plan --model gpt --help');
  });

  it('--experts: plans a mixture-of-experts GPT with ep in the search, the planner’s own ranking, ep in the table; bad MoE input refused by flag, value and rule', () => {
    const moe = ['--model', 'gpt', '--layers', '4', '--hidden', '256', '--heads', '4', '--seq', '128', '--vocab', '1000', '--experts', '8', '--top-k', '2', '--expert-hidden', '128', '--shared-experts', '1'];
    const args = [...moe, '--devices', '8', '--global-batch', '16', '--devices-per-node', '4', '--schedules', '1f1b,dualpipe', '--max-micro-batch', '2', '--tp', '1'];
    const j = run('plan', ...args, '--top', '500', '--format', 'json');
    expect(j.code, j.err).toBe(0);
    const model = { layers: 4, hidden: 256, heads: 4, seq: 128, vocab: 1000, bytesPerElement: 2, moe: { experts: 8, topK: 2, expertHidden: 128, sharedExperts: 1 } } as const;
    const plan = planMesh({ model, device: { ...DEVICE_PRESETS.h100, devicesPerNode: 4 }, devices: 8, globalBatch: 16, schedules: ['1f1b', 'dualpipe'], maxMicroBatch: 2, tp: 1 });
    expect(JSON.parse(j.out).candidates).toEqual(JSON.parse(JSON.stringify(plan.candidates.slice(0, 500))));
    expect(JSON.parse(j.out).model.moe).toEqual(model.moe);
    const text = run('plan', ...args, '--ep', '4', '--top', '3');
    expect(text.code, text.err).toBe(0);
    expect(text.out).toContain('8 experts top-2 of width 128 + 1 shared');
    const rows = text.out.trim().split('\n').filter((l) => /^\d+\s/.test(l));
    expect(rows.length).toBe(3);
    for (const r of rows) expect(r).toMatch(/^\d+\s+\d+ × 1 × \d+, ep 4\s/);
    const cases: [string[], string][] = [
      [[...args, '--ep', '3'], '--ep = 3: must divide the experts (8)'],
      [[...args.map((x, i) => (args[i - 1] === '--experts' ? '16' : x)), '--ep', '16'], '--ep = 16: must be at most the devices (8)'],
      [[...small, '--devices', '8', '--global-batch', '32', '--top-k', '2'], '--top-k = "2": describes the experts: it needs --experts'],
      [[...args, '--capacity-factor', '-1'], '--capacity-factor = -1: must be a number ≥ 0'],
      [[...args.map((x) => (x === '2' ? '9' : x))], '--top-k = 9: must be at most experts = 8'],
      [[...args, '--dense-layers', '4'], '--dense-layers = 4: must be less than layers = 4'],
      [[...args.slice(0, -2), '--tp', '2'], '--tp = 2: above 1 on a model with experts needs sequenceParallel'],
    ];
    for (const [c, message] of cases) {
      const r = run('plan', ...c);
      expect(r.code, c.join(' ')).toBe(2);
      expect(r.err, c.join(' ')).toContain(message);
    }
    // ep on a dense model.
    const dense = run('plan', ...small, '--devices', '8', '--global-batch', '32', '--ep', '2');
    expect(dense.code).toBe(2);
    expect(dense.err).toContain('--ep = 2: needs a model with experts');
  });
});
