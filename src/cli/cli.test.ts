import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fromCsv, generateSchedule, generateWindow, RUN_SCHEDULE_NAMES, toCsv, validateSchedule } from '../schedule/index.ts';
import { readSafetensors } from '../util/safetensors.ts';
import { run, spawn } from './cli-test-support.ts';

const dir = mkdtempSync(join(tmpdir(), 'pipelab-cli-'));

describe('pipelab (spawned through bin/pipelab.mjs)', () => {
  it('prints a PyTorch CSV that loads back as the same schedule', () => {
    const r = spawn('schedule', '--schedule', '1f1b', '--ranks', '4', '--microbatches', '8', '--format', 'csv');
    expect(r.code).toBe(0);
    expect(r.out).toBe(toCsv(generateSchedule('1f1b', 4, 8)));
    expect(fromCsv(r.out, '1f1b')).toEqual(generateSchedule('1f1b', 4, 8));
  });

  it('simulates with --json', () => {
    const r = spawn('simulate', '--schedule', 'interleaved-1f1b', '--ranks', '4', '--microbatches', '8', '--virtual', '2', '--json');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.schedule).toEqual({ name: 'interleaved-1f1b', ranks: 4, virtual: 2, stages: 8, microbatches: 8 });
    expect(j.makespan).toBe(3 * (2 * 8 + 4 - 1));
    expect(j.bubble.simulated).toBeCloseTo(3 / 19, 12);
    expect(j.bubble.closedForm).toBeCloseTo(3 / 19, 12);
    expect(j.ranks).toHaveLength(4);
    expect(j.ranks[0]).toMatchObject({ rank: 0, busy: 48, peakActivations: 11 });
  });

  it('validates a file: 0 and a summary, or 1 and the reason', () => {
    const good = join(dir, 'good.csv');
    writeFileSync(good, toCsv(generateSchedule('zb-h1', 3, 4)));
    const ok = spawn('validate', good);
    expect(ok.code).toBe(0);
    expect(ok.out).toContain('ok: ');
    expect(ok.out).toContain('3 ranks, 3 stages, 4 micro-batches, 36 actions (F 12, B 0, I 12, W 12)');

    const bad = join(dir, 'bad.csv');
    writeFileSync(bad, '0F0,0B0,0F1,0B1\r\n1F0,1F1,1B0,1B1\r\n');
    const no = spawn('validate', bad);
    expect(no.code).toBe(1);
    expect(no.err).toContain('invalid: order[0][1] = "0B0": rank 0 deadlocks when receives block');
    expect(no.err).toContain('(CSV row 1, column 2)');
  });

  it('names a bad flag, its value and the accepted values; exit 2', () => {
    const r = spawn('schedule', '--schedule', 'pipedreams', '--ranks', '4');
    expect(r.code).toBe(2);
    expect(r.err).toContain('--schedule = "pipedreams": must be one of gpipe, 1f1b, interleaved-1f1b, zb-h1, interleaved-zb, zb-v, looped-bfs, dualpipe-v, dualpipe, hanayo, auto, pipedream, pipedream-2bw');
  });

  it('has --help', () => {
    const r = spawn('simulate', '--help');
    expect(r.code).toBe(0);
    expect(r.out).toContain('usage: pipelab simulate');
  });
});

describe('pipelab (in process)', () => {
  it('ends quietly when its reader stops early (`| head`): no EPIPE stack trace, exit 0', () => {
    // 64 ranks × 4096 micro-batches: a CSV far larger than a pipe's buffer, read for its first line only.
    const cmd = `set -o pipefail; "${process.execPath}" bin/pipelab.mjs schedule --ranks 64 --microbatches 4096 --format csv | head -n 1`;
    const r = spawnSync('bash', ['-c', cmd], { encoding: 'utf8', cwd: join(__dirname, '..', '..') });
    expect(r.stdout).toMatch(/^0F0,0F1,[^\n]*\n$/);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('has --help on each command and on the whole', () => {
    for (const cmd of ['schedule', 'simulate', 'validate']) {
      const r = run(cmd, '--help');
      expect(r.code).toBe(0);
      expect(r.out).toContain(`usage: pipelab ${cmd}`);
      expect(run('help', cmd).out).toBe(r.out);
    }
    const main = run('--help').out;
    expect(main).toContain('commands:');
    // The whole help names every schedule `schedule --schedule` takes, the streams on a line of their own.
    const listed = [...main.matchAll(/^(?:schedules|streams [^:]*): (.*)$/gm)].flatMap((l) => l[1].split(', '));
    expect([...listed].sort()).toEqual([...RUN_SCHEDULE_NAMES].sort());
    expect(main).toMatch(/^streams .*--steps S\): pipedream, pipedream-2bw$/m);
    expect(run().code).toBe(2);
    expect(run('schedule', '--format', 'yaml').err).toContain('--format = "yaml": must be one of csv, json, text');
  });

  it('prints text and json', () => {
    const t = run('schedule', '--schedule', 'gpipe', '--ranks', '2', '--microbatches', '2');
    expect(t.code).toBe(0);
    expect(t.out).toBe('gpipe: 2 ranks × 1 stage per rank = 2 stages, 2 micro-batches, 8 actions\nrank 0 (stage 0): 0F0 0F1 0B0 0B1\nrank 1 (stage 1): 1F0 1F1 1B0 1B1\n');
    const j = run('schedule', '--schedule', 'zb-v', '--ranks', '2', '--microbatches', '3', '--format', 'json');
    expect(j.code).toBe(0);
    const s = JSON.parse(j.out);
    expect(s).toEqual(generateSchedule('zb-v', 2, 3));
    expect(validateSchedule(s)).toEqual({ ok: true });
  });

  it('prints hanayo with W waves as --virtual 2W: the zig-zag placement and its slot order (worked by hand in hanayo.test.ts)', () => {
    const t = run('schedule', '--schedule', 'hanayo', '--ranks', '2', '--microbatches', '2', '--virtual', '2');
    expect(t.code).toBe(0);
    expect(t.out).toBe('hanayo: 2 ranks × 2 stages per rank = 4 stages, 2 micro-batches, 16 actions\nrank 0 (stages 0,3): 0F0 0F1 3F0 3B0 3F1 3B1 0B0 0B1\nrank 1 (stages 1,2): 1F0 2F0 1F1 2F1 2B0 1B0 2B1 1B1\n');
    // Two waves: 2 · 2 · 3 = 12 stages, zig-zagging down, up, down, up the three ranks.
    const j = JSON.parse(run('schedule', '--schedule', 'hanayo', '--ranks', '3', '--microbatches', '6', '--virtual', '4', '--format', 'json').out);
    expect(j.stageToRank).toEqual([0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0]);
    expect(validateSchedule(j)).toEqual({ ok: true });
    // Its default is one wave.
    expect(JSON.parse(run('schedule', '--schedule', 'hanayo', '--ranks', '3', '--format', 'json').out).stages).toBe(6);
  });

  it('pads CSV like PyTorch by default (time-aligned; --align says so), dense with --dense', () => {
    const aligned = '0F0,0F1,,0B0,,0B1\r\n,1F0,1B0,1F1,1B1\r\n';
    expect(run('schedule', '--schedule', '1f1b', '--ranks', '2', '--microbatches', '2', '--format', 'csv').out).toBe(aligned);
    expect(run('schedule', '--schedule', '1f1b', '--ranks', '2', '--microbatches', '2', '--format', 'csv', '--align').out).toBe(aligned);
    const dense = run('schedule', '--schedule', '1f1b', '--ranks', '2', '--microbatches', '2', '--format', 'csv', '--dense');
    expect(dense.out).toBe('0F0,0F1,0B0,0B1\r\n1F0,1B0,1F1,1B1\r\n');
    expect(run('schedule', '--align').code).toBe(2);
    expect(run('schedule', '--dense').code).toBe(2);
    expect(run('schedule', '--format', 'csv', '--align', '--dense').code).toBe(2);
  });

  it('simulates as text with the closed form beside, and custom costs', () => {
    const r = run('simulate', '--schedule', 'gpipe', '--ranks', '4', '--microbatches', '8');
    expect(r.code).toBe(0);
    expect(r.out).toContain('makespan   33\n');
    expect(r.out).toContain('bubble     0.2727 simulated; 0.2727 closed form (p−1)/(m+p−1)');
    expect(r.out).toMatch(/rank\s+busy\s+idle\s+peak activations\s+peak bytes/);
    const c = run('simulate', '--schedule', 'gpipe', '--ranks', '2', '--microbatches', '1', '--costs', 'F=2,B=3', '--json');
    const j = JSON.parse(c.out);
    expect(j.makespan).toBe(2 * (2 + 3));
    expect(j.bubble.closedForm).toBeNull();
  });

  it('plays a stream (PipeDream, 2BW) of --steps steps as one order, 1F1B over steps × m micro-batches, with its closed form', () => {
    const j = JSON.parse(run('simulate', '--schedule', 'pipedream-2bw', '--ranks', '4', '--microbatches', '8', '--steps', '10', '--json').out);
    expect(j.schedule).toEqual({ name: 'pipedream-2bw', ranks: 4, virtual: 1, stages: 4, microbatches: 80, stream: { steps: 10, microbatchesPerStep: 8 } });
    // No flush between the steps: one fill and one drain for all 80 micro-batches, where 10 flushed 1F1B steps pay ten.
    expect(j.makespan).toBe(3 * (80 + 3));
    expect(JSON.parse(run('simulate', '--schedule', '1f1b', '--ranks', '4', '--microbatches', '8', '--json').out).makespan).toBe(3 * (8 + 3));
    expect(j.bubble.closedForm).toBeCloseTo(3 / 83, 12);
    expect(j.bubble.simulated).toBeCloseTo(3 / 83, 12);
    const t = run('simulate', '--schedule', 'pipedream', '--ranks', '2', '--microbatches', '2', '--steps', '3');
    expect(t.out).toContain('6 micro-batches (one stream: 3 steps × 2, no flush between them)');
    const order = run('schedule', '--schedule', 'pipedream', '--ranks', '2', '--microbatches', '2', '--steps', '2');
    expect(order.out).toBe('pipedream: 2 ranks × 1 stage per rank = 2 stages, 4 micro-batches, 16 actions\nrank 0 (stage 0): 0F0 0F1 0B0 0F2 0B1 0F3 0B2 0B3\nrank 1 (stage 1): 1F0 1B0 1F1 1B1 1F2 1B2 1F3 1B3\n');
  });

  it('simulate --file --steps S reads a PipeDream-2BW CSV as its stream: with --dp, an all-reduce per block, as the generated one', () => {
    const file = join(dir, '2bw-stream.csv');
    writeFileSync(file, toCsv(generateWindow('pipedream-2bw', 2, 2, 3)));
    const mesh = ['--dp', '2', '--grad-bytes', '100', '--allreduce-bandwidth', '10'];
    const fromFile = JSON.parse(run('simulate', '--file', file, '--steps', '3', ...mesh, '--json').out);
    const generated = JSON.parse(run('simulate', '--schedule', 'pipedream-2bw', '--ranks', '2', '--microbatches', '2', '--steps', '3', ...mesh, '--json').out);
    expect(fromFile.makespan).toBe(generated.makespan);
    expect(fromFile.dataParallel).toEqual(generated.dataParallel);
    expect(fromFile.bubble).toEqual(generated.bubble);
    expect(fromFile.schedule.stream).toEqual({ steps: 3, microbatchesPerStep: 2 });
    // 3(S·m + p − 1) + S·A with A = 2 · (50 / 10) = 10: 3 · 7 + 30 = 51.
    expect(run('simulate', '--file', file, '--steps', '3', ...mesh).out).toContain('closed form stream 51 = 3(S·m+p−1) + S·A, S = 3 (A = 10 per stage and block)');
    // Without --steps the file is one step of 6 micro-batches: one all-reduce at its flush.
    const oneStep = JSON.parse(run('simulate', '--file', file, ...mesh, '--json').out);
    expect(oneStep.makespan).toBe(31);
    expect(oneStep.schedule.stream).toBeUndefined();
    // Another order read as a stream: played, with no closed form claimed for it.
    const gpipe = join(dir, 'gpipe-6.csv');
    writeFileSync(gpipe, toCsv(generateSchedule('gpipe', 2, 6)));
    expect(run('simulate', '--file', gpipe, '--steps', '3', ...mesh).out).toContain("closed form none known for this order (PipeDream-2BW's stream is 1F1B's order over all its micro-batches)");
    const zbv = join(dir, 'zbv.csv');
    writeFileSync(zbv, toCsv(generateSchedule('zb-v', 2, 4, 2)));
    const cases: [string[], string][] = [
      [['--file', file, '--steps', '4'], "--steps = 4: must divide the file's 6 micro-batches"],
      [['--file', zbv, '--steps', '2'], "--steps = 2: reads the file as PipeDream-2BW's stream, one stage per rank and one model copy; this file holds 4 stages on 2 ranks"],
      [['--file', file, '--steps', '3', '--dp', '2', '--zero', '1'], '--zero = "1": pipedream-2bw sums each block\'s gradients over the replicas with a plain all-reduce'],
    ];
    for (const [args, err] of cases) {
      const r = run('simulate', ...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err, args.join(' ')).toContain(err);
    }
  });

  it('refuses --steps where it means nothing, a stream past the limits, a step past 2BW\'s rule, and the replicas a stream cannot take', () => {
    const cases: [string[], string][] = [
      [['--schedule', '1f1b', '--steps', '3'], '--steps = 3: applies to pipedream and pipedream-2bw only, whose steps run as one stream; 1f1b flushes every step'],
      [['--schedule', 'pipedream-2bw', '--microbatches', '8', '--steps', '10000'], '--steps = 10000: a stream of 10000 steps × 8 micro-batches holds 80000; at most 65536 (--steps ≤ 8192)'],
      [['--schedule', 'pipedream-2bw', '--ranks', '1024', '--microbatches', '1024', '--steps', '60'], '--steps = 60: ranks · virtual · microbatches · 2 = 125829120 actions exceeds the limit'],
      [['--schedule', 'pipedream-2bw', '--ranks', '4', '--microbatches', '2', '--steps', '4'], '--microbatches = 2: PipeDream-2BW needs m ≥ p = 4'],
      [['--schedule', 'pipedream', '--steps', '4', '--dp', '2'], '--dp = "2": pipedream updates each stage\'s weights after every backward, with no point at which replicas could sum their gradients; data parallelism needs a synchronous schedule or PipeDream-2BW (simulate it without --dp)'],
      [['--schedule', 'pipedream-2bw', '--steps', '4', '--dp', '2', '--zero', '1'], '--zero = "1": pipedream-2bw sums each block\'s gradients over the replicas with a plain all-reduce before its update'],
      [['--schedule', 'pipedream-2bw', '--steps', '4', '--dp', '2', '--no-overlap'], '--no-overlap = true: pipedream-2bw has no flush to hold the all-reduce back to'],
      [['--file', 'x.csv', '--ranks', '2'], '--file = "x.csv": replaces --ranks'],
    ];
    for (const [args, err] of cases) {
      const r = run('simulate', ...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err, args.join(' ')).toContain(err);
    }
  });

  it('plays PipeDream-2BW on replicas: each stage\'s all-reduce after its block of m backwards, the worker waiting (worked by hand)', () => {
    // One rank, m = 2, 2 steps, F = 1, B = 2; 4 gradient bytes over 2 replicas on a link of 1 byte a unit: the
    // reduce-scatter and the all-gather are one exchange of 2 bytes each. F0 0–1, B0 1–3, F1 3–4, B1 4–6, the
    // all-reduce 6–10, F2 10–11, B2 11–13, F3 13–14, B3 14–16, the all-reduce 16–20.
    const flags = ['--schedule', 'pipedream-2bw', '--ranks', '1', '--microbatches', '2', '--steps', '2', '--dp', '2', '--grad-bytes', '4', '--allreduce-bandwidth', '1'];
    const j = JSON.parse(run('simulate', ...flags, '--json').out);
    expect(j.makespan).toBe(20);
    expect(j.dataParallel).toMatchObject({ dp: 2, computeMakespan: 16, exposedAllReduce: 4, allReduceTime: [8], allReduceEvery: 2 });
    expect(j.bubble.simulated).toBe(0.25); // 12 busy of the compute's 16
    const t = run('simulate', ...flags);
    expect(t.out).toContain('makespan   20 (the stream: compute 16 + exposed all-reduce 4)');
    expect(t.out).toContain("each stage's all-reduce after its last backward of each block of 2 micro-batches (a step), before the block's update; the worker waits for it");
    expect(t.out).toContain("all-reduce per stage 8 (its 2 blocks); exposed 4, 20% of the stream");
    // Its own closed form (theory.ts streamMeshClosedForm): 3(S·m + p − 1) + S·A = 12 + 8; the bubble over its compute, 1 − 12/16.
    expect(t.out).toContain('closed form stream 20 = 3(S·m+p−1) + S·A, S = 2 (A = 4 per stage and block)');
    expect(t.out).toContain('bubble     0.25 simulated; 0.25 closed form 1 − 3S·m/(3(S·m+p−1) + (S−1)·A)');
    expect(JSON.parse(run('simulate', ...flags, '--json').out).bubble.closedForm).toBe(0.25);
    // Other costs: none claimed.
    const b3 = run('simulate', ...flags, '--costs', 'B=3').out;
    expect(b3).toContain('closed form assumes default costs, free links and equal gradient bytes on every stage');
    expect(b3).toContain('closed form assumes default costs, equal gradient bytes on every stage and free links');
    // With tp too: no tp closed form claims the stream's compute while its all-reduces hold it back.
    const tp = run('simulate', ...flags, '--tp', '2');
    expect(tp.out).toContain('tp         t = 2 workers per stage');
    expect(tp.out).not.toContain('tp closed form');
    expect(run('simulate', '--schedule', 'pipedream-2bw', '--ranks', '1', '--microbatches', '2', '--steps', '2', '--dp', '2', '--tp', '2').out).toContain('tp closed form');
    // A free all-reduce leaves the stream as one pipeline plays it, closed form and all.
    const free = run('simulate', '--schedule', 'pipedream-2bw', '--ranks', '4', '--microbatches', '4', '--steps', '3', '--dp', '2');
    const one = run('simulate', '--schedule', 'pipedream-2bw', '--ranks', '4', '--microbatches', '4', '--steps', '3');
    expect(free.out).toContain('makespan   45 (the stream: compute 45 + exposed all-reduce 0)');
    expect(one.out).toContain('makespan   45\n');
    expect(free.out).toContain('bubble     0.2 simulated; 0.2 closed form 1 − 3S·m/(3(S·m+p−1) + (S−1)·A)'); // (p−1)/(S·m+p−1) at A = 0
    expect(one.out).toContain('bubble     0.2 simulated; 0.2 closed form (p−1)/(m+p−1)');
  });

  it('simulates a shared device with --lanes: 1F1B, p = 2, m = 2 on one lane takes all 12 units of work', () => {
    const j = JSON.parse(run('simulate', '--schedule', '1f1b', '--ranks', '2', '--microbatches', '2', '--lanes', '1', '--json').out);
    expect(j.makespan).toBe(12);
    expect(j.costs.lanes).toBe(1);
    expect(j.bubble.closedForm).toBeNull();
    expect(JSON.parse(run('simulate', '--schedule', '1f1b', '--ranks', '2', '--microbatches', '2', '--lanes', '2', '--json').out).makespan).toBe(9);
    expect(run('simulate', '--lanes', '0').err).toContain('--lanes = "0": must be a number at least');
  });

  it('simulates a file and writes a Chrome trace', () => {
    const file = join(dir, 'sched.csv');
    writeFileSync(file, toCsv(generateSchedule('zb-h1', 4, 8)));
    const r = run('simulate', '--file', file, '--trace', 'out.json', '--latency', '0.5');
    expect(r.code).toBe(0);
    const trace = JSON.parse(r.files.get('out.json') as string);
    expect(trace.traceEvents.some((e: { name: string }) => e.name === '3W7')).toBe(true);
    expect(run('simulate', '--file', file, '--ranks', '4').code).toBe(2);
  });

  it('rejects bad values with the flag named', () => {
    const cases: [string[], string][] = [
      [['schedule', '--ranks', 'four'], '--ranks = "four": must be an integer between 1 and 1024'],
      [['schedule', '--ranks', '0'], '--ranks = "0": must be an integer between 1 and 1024'],
      [['schedule', '--schedule', 'interleaved-1f1b', '--ranks', '4', '--microbatches', '6', '--virtual', '0'], '--virtual = "0": must be an integer between 1 and 64'],
      [['schedule', '--schedule', '1f1b', '--virtual', '2'], '--virtual = 2: 1f1b holds one stage per rank'],
      [['schedule', '--schedule', 'hanayo', '--virtual', '3'], '--virtual = 3: hanayo holds 2 stages per rank in each of its W waves (down the ranks and back up), so virtual = 2W must be even (2, 4, …) (with --schedule hanayo)'],
      [['schedule', '--bogus', '1'], 'flag = "--bogus": is not a flag of `pipelab schedule`; it accepts --schedule, --ranks'],
      [['schedule', '--ranks'], '--ranks = null: needs a value (P)'],
      [['simulate', '--costs', 'F=1,X=2'], '--costs = "F=1,X=2": must be a comma-separated list of op=time with ops F, B, I, W'],
      [['simulate', '--bandwidth', '-1'], '--bandwidth = "-1": must be a number'],
      [['validate'], 'FILE = null: give exactly one schedule file'],
      [['validate', join(dir, 'missing.csv')], 'cannot be read'],
      [['frobnicate'], 'command = "frobnicate": must be one of schedule, simulate, validate'],
    ];
    for (const [args, message] of cases) {
      const r = run(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err, args.join(' ')).toContain(message);
    }
  });

  it('reports a malformed CSV with its row and column; exit 1', () => {
    const file = join(dir, 'malformed.csv');
    writeFileSync(file, '0F0,0B0\n1F0,1Z0\n');
    const r = run('validate', file);
    expect(r.code).toBe(1);
    expect(r.err).toContain('malformed CSV: csv row 2 column 2 = "1Z0"');
  });

  it('validates with --json', () => {
    const file = join(dir, 'v.csv');
    writeFileSync(file, toCsv(generateSchedule('looped-bfs', 2, 3, 2)));
    const r = run('validate', file, '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ ok: true, ranks: 2, stages: 4, microbatches: 3, stagesPerRank: [[0, 2], [1, 3]] });
  });

  it('export-torch writes the bundle of the run its flags name (spawned)', () => {
    const out = join(dir, 'bundle');
    const r = spawn('export-torch', '--schedule', 'zb-h1', '--ranks', '2', '--microbatches', '4', '--batchSize', '32', '--steps', '3', '--dataset', 'names', '--out', out);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('torchrun --redirects 1 --tee 1 --nproc_per_node=2 train.py');
    for (const f of ['train.py', 'config.json', 'schedule.csv', 'init.safetensors', 'batches.safetensors', 'heldout.safetensors', 'README.md']) {
      expect(existsSync(join(out, f)), f).toBe(true);
    }
    const cfg = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    // The flags land in the run configuration; names implies the char-MLP, the rest are the page's defaults.
    expect(cfg.run).toMatchObject({ schedule: 'zb-h1', ranks: 2, microbatches: 4, batchSize: 32, steps: 3, dataset: 'names', model: 'char-mlp' });
    expect(cfg.stageToRank).toEqual([0, 1]);
    expect(fromCsv(readFileSync(join(out, 'schedule.csv'), 'utf8'))).toMatchObject({ order: generateSchedule('zb-h1', 2, 4).order });
    const batches = readSafetensors(new Uint8Array(readFileSync(join(out, 'batches.safetensors'))));
    expect(batches.tensors.inputs.shape).toEqual([3, 32, cfg.run.context]);
  });

  it('export-torch names the bad flag, its value and the rule; exports PipeDream as one stream and DualPipe with its copies', () => {
    const bad = run('export-torch', '--microbatches', '5', '--out', join(dir, 'never'));
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--microbatches = 5: must divide batchSize = 64 evenly');
    expect(run('export-torch', '--ranks', '2').err).toContain('--out = null: is required');
    // PipeDream has no flush: schedule.csv holds the whole run's stream, steps × m micro-batches (stream.py).
    const pd = run('export-torch', '--schedule', 'pipedream', '--ranks', '2', '--microbatches', '4', '--steps', '3', '--out', join(dir, 'pd'));
    expect(pd.code, pd.err).toBe(0);
    const pdCfg = JSON.parse(pd.files.get(join(dir, 'pd', 'config.json')) as string);
    expect({ update: pdCfg.update, window: pdCfg.windowMicrobatches, lossOver: pdCfg.lossOver }).toEqual({ update: 'stash-and-update-after-backward', window: 12, lossOver: 'microbatch' });
    expect(pd.files.get(join(dir, 'pd', 'README.md'))).toContain('one stream of steps × 4 = 12 micro-batches');
    // DualPipe's two model copies flush every step: train.py holds a stage of each copy per rank (copies.py).
    const dual = run('export-torch', '--schedule', 'dualpipe', '--ranks', '2', '--microbatches', '4', '--out', join(dir, 'dual'));
    expect(dual.code, dual.err).toBe(0);
    const dualCfg = JSON.parse(dual.files.get(join(dir, 'dual', 'config.json')) as string);
    expect({ copies: dualCfg.copies, stages: dualCfg.stages, stageToRank: dualCfg.stageToRank }).toEqual({ copies: 2, stages: 4, stageToRank: [0, 1, 1, 0] });
    expect(dual.files.get(join(dir, 'dual', 'README.md'))).not.toContain('one stream');
  });
});
