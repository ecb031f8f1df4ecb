/**
 * What the exported PyTorch program refuses, and how it fails: a bad
 * configuration names the field, the value and the rule; a
 * wrong world size, a missing weight, a lost message or a CSV that is not
 * time-aligned ends the torchrun run with a message, never a hang. (That it
 * trains like the float64 loop: ./torch-export.test.ts; a stream's refused
 * flags: ./torch-export-stream.test.ts.) Needs Debian's
 * python3-torch (scripts/install-deps.sh).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultRunConfig, type RunConfig } from '../config/run-config.ts';
import { generateSchedule, toCsv } from '../schedule/index.ts';
import { readSafetensors, writeSafetensors } from '../util/safetensors.ts';
import { runPythonMany, runTorchrun } from './testing/torchrun.ts';
import { writeTempBundle } from './testing/temp-bundle.ts';
import { buildTorchBundle } from './torch-bundle.ts';

const small: RunConfig = { ...defaultRunConfig(), layers: 3, hidden: 16, batchSize: 32, microbatches: 4, steps: 5, evalEvery: 0 };

describe('what the exported program refuses', () => {
  it('refuses a bad configuration with the field, the value and the rule', () => {
    expect(() => buildTorchBundle({ ...small, microbatches: 5 }, {})).toThrow('microbatches = 5: must divide batchSize = 32 evenly');
    // The tab runs DualPipe with ep; train.py's expert parallelism runs one model copy: refused at the export.
    const moeDualPipe: RunConfig = { ...small, dataset: 'names', model: 'gpt', layers: 2, heads: 2, width: 8, blockSize: 16, batchSize: 8, microbatches: 4, ranks: 2, steps: 1, experts: 4, ep: 2, schedule: 'dualpipe' };
    expect(() => buildTorchBundle(moeDualPipe, {})).toThrow('schedule = "dualpipe": with ep = 2 the export runs schedules of one model copy; dualpipe holds 2 (export it with ep = 1, or another schedule)');
    expect(writeTempBundle({ ...moeDualPipe, schedule: '1f1b' }).files.find((f) => f.path === 'config.json')?.data).toContain('"ep": 2');
  });

  it('stops every process of a launch whose world size is not dp × ranks, naming both', async () => {
    const { dir } = writeTempBundle({ ...small, schedule: '1f1b', ranks: 2, dp: 2, steps: 1 });
    const message = (rank: number) => `rank ${rank}: world size = 3, but this run was exported for dp x ranks = 2 x 2 = 4 processes: start it with torchrun --nproc_per_node=4`;
    // Under torchrun the launch ends (no hang) with the refusal: the first process to refuse makes torchrun stop the
    // others, so a sibling may be stopped before it prints its own line.
    const r = await runTorchrun(dir, 3, [], 120_000);
    expect(r.code).not.toBe(0);
    expect([0, 1, 2].some((rank) => r.output.includes(message(rank))), r.output).toBe(true);
    expect(r.losses).toEqual([]);
    // Each process refuses on its own, before any process group starts: every rank of the three, alone.
    const alone = runPythonMany([0, 1, 2].map((rank) => ({ dir, env: { RANK: String(rank), WORLD_SIZE: '3' } })));
    alone.forEach((a, rank) => {
      expect(a.code).not.toBe(0);
      expect(a.output).toContain(message(rank));
    });
  }, 180_000);

  it('refuses a bundle whose schedule.csv has another pipeline width than config.json, naming both process counts; and an ep it cannot run, naming the field, the value and the rule', () => {
    const { dir } = writeTempBundle({ ...small, schedule: '1f1b', ranks: 2, dp: 2, steps: 1 });
    writeFileSync(join(dir, 'schedule.csv'), toCsv(generateSchedule('1f1b', 3, small.microbatches)));
    // Another bundle of the run whose config.json says world = 6.
    const { dir: world6 } = writeTempBundle({ ...small, schedule: '1f1b', ranks: 2, dp: 2, steps: 1 });
    const cfg = JSON.parse(readFileSync(join(world6, 'config.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(world6, 'config.json'), JSON.stringify({ ...cfg, world: 6 }));
    // Expert parallelism (config.json's ep, edited here past what the tab allows): what train.py cannot run is refused before any group starts.
    const moe: RunConfig = { ...small, dataset: 'names', model: 'gpt', layers: 2, heads: 2, width: 8, blockSize: 16, batchSize: 8, microbatches: 2, ranks: 1, dp: 2, steps: 1, experts: 6, schedule: '1f1b' };
    const epBundle = (cfg: RunConfig, ep: number) => {
      const { dir: d } = writeTempBundle(cfg);
      writeFileSync(join(d, 'config.json'), JSON.stringify({ ...(JSON.parse(readFileSync(join(d, 'config.json'), 'utf8')) as Record<string, unknown>), ep, world: cfg.dp * cfg.ranks * ep }));
      return { dir: d, env: { RANK: '0', WORLD_SIZE: '2' } };
    };
    const EP_REFUSALS: [RunConfig, number, string][] = [
      [{ ...small, schedule: '1f1b', ranks: 1, dp: 2, steps: 1 }, 2, 'config.json: ep = 2: needs a mixture-of-experts model (experts > 0)'],
      [moe, 4, 'config.json: ep = 4: must divide the experts ([6])'],
      [{ ...moe, experts: 4 }, 4, "config.json: ep = 4: must divide each micro-batch's 2 sequences (each ep process takes its slice of them)"],
      [{ ...moe, zero: 1 }, 2, 'config.json: zero = 1: must be 0 with ep > 1 in this train.py'],
    ];
    // All in one Python process (torch imported once).
    const [rank0, rank3, six, ...epRuns] = runPythonMany([
      { dir, env: { RANK: '0', WORLD_SIZE: '4' } },
      { dir, env: { RANK: '3', WORLD_SIZE: '4' } },
      { dir: world6, env: { RANK: '0', WORLD_SIZE: '6' } },
      ...EP_REFUSALS.map(([cfg, ep]) => epBundle(cfg, ep)),
    ]);
    EP_REFUSALS.forEach(([, , message], i) => {
      expect(epRuns[i].code).not.toBe(0);
      expect(epRuns[i].output).toContain(message);
    });
    for (const r of [rank0, rank3]) {
      expect(r.code).not.toBe(0);
      expect(r.output).toContain('schedule.csv holds 3 rows (one per pipeline rank), so dp x rows = 2 x 3 = 6 processes, but config.json is for dp x ranks = 2 x 2 = 4 processes');
    }
    expect(six.output).toContain('config.json: world = 6, but its dp x ranks = 2 x 2 = 4 processes');
  }, 60_000);

  it('stops when a stage weight is missing from init.safetensors, naming the rank and the weight', async () => {
    const { dir } = writeTempBundle({ ...small, schedule: '1f1b', ranks: 2, steps: 1 });
    const init = readSafetensors(new Uint8Array(readFileSync(join(dir, 'init.safetensors'))));
    const { 'head.linear.W': _dropped, ...rest } = init.tensors;
    writeFileSync(join(dir, 'init.safetensors'), writeSafetensors(Object.fromEntries(Object.entries(rest).map(([k, t]) => [k, { data: t.data, shape: t.shape }]))));
    const r = await runTorchrun(dir, 2, [], 120_000);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain('rank 1: stage 1 weight head.linear.W');
    expect(r.output).toContain('did not load from init.safetensors: missing');
  }, 180_000);

  it('ends a run whose peer stops answering with a timeout naming the rank, the step and the column, never a hang', async () => {
    const { dir } = writeTempBundle({ ...small, schedule: 'gpipe', ranks: 2, steps: 1 });
    const r = await runTorchrun(dir, 2, ['--timeout', '5', '--test-stall-rank', '1'], 120_000);
    expect(r.code).not.toBe(0);
    expect(r.output).toMatch(/train\.py: rank 0: step 0 column \d+: (no grad of micro-batch \d+ for stage 0 from rank 1|act of micro-batch \d+ for stage 1 not taken by rank 1) within 5\.0 s/);
  }, 180_000);

  it('refuses a CSV that is not time-aligned, naming the action and the input it lacks', async () => {
    const cfg: RunConfig = { ...small, schedule: 'zb-h1', ranks: 2, steps: 1 };
    const { dir } = writeTempBundle(cfg);
    writeFileSync(join(dir, 'schedule.csv'), toCsv(generateSchedule('zb-h1', 2, cfg.microbatches), { align: false }));
    const r = await runTorchrun(dir, 2, ['--timeout', '20'], 120_000);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain('rank 1: step 0 column 1: 1F0 needs the act of micro-batch 0 for stage 1, which no earlier column of schedule.csv sends: the file is not time-aligned');
  }, 180_000);
});
