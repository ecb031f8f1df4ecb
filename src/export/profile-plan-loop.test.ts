/**
 * The cluster loop, on this machine (CPU processes sharing its cores, gloo):
 * export a run → `torchrun … train.py --profile` → `pipelab plan --profile`
 * → export the planned cut and schedule → `torchrun … train.py`, whose mean
 * step time (steps after the first) is set beside what the plan's
 * simulator predicts for the exported schedule under the measured costs in
 * the shared-device mode (the profile's lanes). Also: the profile is in
 * PipeLab's Profile format with the model it was measured on, and a truncated
 * profile or one of another model is refused naming what is missing. Again at
 * dp = 2 × pp = 2, planned with `--dp 2` from the profile's all-reduce fit,
 * and at tp = 2 × pp = 2, planned with `--tp 2` from the profile's tp part.
 * The error is printed: the tests check behaviour, not time.
 * Needs Debian's python3-torch.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { run as cli } from '../cli/cli-test-support.ts';
import { blockCosts } from '../nn/model-spec.ts';
import { makePlan } from '../plan/plan.ts';
import { profileFromJson, type Profile } from '../plan/profile.ts';
import { checkProfileModel } from '../plan/profile-model.ts';
import { cutOfRanges } from '../config/explicit-cut.ts';
import { defaultRunConfig, withDataset, type RunConfig } from '../config/run-config.ts';
import { planRun } from '../runtime/executor/run-plan.ts';
import { simulate } from '../schedule/index.ts';
import { runTorchrunMany, writeBundle, type TorchrunResult } from './testing/torchrun.ts';
import { writeTempBundle } from './testing/temp-bundle.ts';

/** Big enough that a block's compute outweighs Python's per-action overhead, small enough for a few seconds a launch. */
const base: RunConfig = {
  ...withDataset(defaultRunConfig(), 'names'),
  layers: 6,
  hidden: 256,
  context: 3,
  embedDim: 16,
  batchSize: 512,
  microbatches: 8,
  steps: 6,
  evalEvery: 0,
  ranks: 2,
  schedule: '1f1b',
};

interface Loop {
  cfg: RunConfig;
  world: number;
  /** The profiled bundle's folder, and the planned run's. */
  dir: string;
  runDir: string;
  profile: Profile;
  predicted: number;
  best: string;
  cut: number[];
  profiled: TorchrunResult;
  run: TorchrunResult;
}

const worldOf = (cfg: RunConfig) => (cfg.dp ?? 1) * (cfg.tp ?? 1) * cfg.ranks;

/**
 * Profile every `cfg` under torchrun, plan each with `pipelab plan --profile` (dp replicas, tp), export the plans, run
 * them. The profiles share a launch per world size, then the planned runs do (their processes import torch once, not
 * per run); the runs of one launch follow each other, never side by side, so each is timed alone as before.
 */
async function loops(cfgs: readonly RunConfig[]): Promise<Loop[]> {
  const dirs = cfgs.map((cfg) => writeTempBundle(cfg).dir);
  const profiled = await runTorchrunMany(cfgs.map((cfg, i) => ({ dir: dirs[i], world: worldOf(cfg), args: ['--profile', '--profile-repeats', '6'] })), 480_000);
  const planned = cfgs.map((cfg, i) => {
    expect(profiled[i].code, profiled[i].output).toBe(0);
    return planAndExport(cfg, dirs[i]);
  });
  const runs = await runTorchrunMany(planned.map((x, i) => ({ dir: x.runDir, world: worldOf(cfgs[i]) })), 480_000);
  return planned.map((x, i) => ({ ...x, cfg: cfgs[i], world: worldOf(cfgs[i]), dir: dirs[i], profiled: profiled[i], run: runs[i] }));
}

/** What `pipelab plan` makes of the profile measured in dir, exported through the CLI to a new folder; the plan's prediction of it. */
function planAndExport(cfg: RunConfig, dir: string): { profile: Profile; runDir: string; predicted: number; best: string; cut: number[] } {
  const dp = cfg.dp ?? 1;
  const tp = cfg.tp ?? 1;
  const file = join(dir, 'profile.json');
  const profile: Profile = profileFromJson(readFileSync(file, 'utf8'));
  const spec = planRun(cfg).spec;
  expect(profile.blocks.length).toBe(spec.blocks.length);
  expect(() => checkProfileModel(profile, spec)).not.toThrow();
  // The processes' lanes on this CPU: never more than the cores they can run on, however loaded the machine was.
  expect(profile.lanes).toBeGreaterThan(0);
  expect(profile.lanes).toBeLessThanOrEqual(Math.min(availableParallelism(), worldOf(cfg)));

  // `pipelab plan` reads it unchanged.
  const flags = ['--ranks', String(cfg.ranks), '--microbatches', String(cfg.microbatches), '--mem-cap', String(cfg.microbatches), '--dp', String(dp), '--tp', String(tp)];
  const planned = cli('plan', '--profile', file, ...flags);
  expect(planned.code, planned.err).toBe(0);
  expect(planned.out).toContain('predicted  this machine');
  const plan = makePlan({ profile, ranks: cfg.ranks, microbatches: cfg.microbatches, cap: { microbatches: cfg.microbatches }, dp, tp });
  const cut = cutOfRanges(plan.partition.ranges);
  expect(planned.out).toContain(`split      ${plan.partition.ranges.map(([x, y], st) => `stage ${st}: blocks ${x}–${y - 1}`).join('; ')}`);
  if (dp > 1) expect(planned.out).toContain(`mesh       ${dp} replicas × ${cfg.ranks} ranks; all-reduce per stage`);
  // The fastest of the named schedules the plan sets beside its auto one (a run names its schedule).
  const best = [...plan.baselines].filter((b) => b.fits).sort((a, b) => a.makespan - b.makespan)[0];

  // Export the planned cut and schedule through the CLI.
  const fields = { dataset: 'names', layers: cfg.layers, hidden: cfg.hidden, context: cfg.context, embedDim: cfg.embedDim, batchSize: cfg.batchSize, microbatches: cfg.microbatches, steps: cfg.steps, evalEvery: 0, ranks: cfg.ranks, dp, tp, schedule: best.name, partition: 'cut', cut: cut.join(',') };
  const exported = cli('export-torch', ...Object.entries(fields).flatMap(([k, v]) => [`--${k}`, String(v)]), '--out', 'planned');
  expect(exported.code, exported.err).toBe(0);
  const runDir = mkdtempSync(join(tmpdir(), 'pipelab-torch-loop-'));
  writeBundle(runDir, [...exported.files].map(([path, data]) => ({ path: path.slice('planned/'.length), data })));
  const out = JSON.parse(readFileSync(join(runDir, 'config.json'), 'utf8')) as { stageBlocks: [number, number][]; run: RunConfig };
  expect(out.stageBlocks).toEqual(plan.partition.ranges);
  // A tp group's workers in lock step share the lanes like one worker with lanes / tp (plan.ts).
  const predicted = simulate(planRun(out.run).schedule, { ...plan.costs, lanes: profile.lanes! / tp }).makespan;
  return { profile, runDir, predicted, best: best.name, cut };
}

/** The planned run's mean step time (steps after the first) beside the prediction, and the line that prints both. */
function measuredOf(l: Loop): { profile: Profile; dir: string; predicted: number; measured: number; line: string } {
  const r = l.run;
  expect(r.code, r.output).toBe(0);
  const after = r.stepMs.slice(1);
  expect(after.length, r.output).toBe(l.cfg.steps - 1);
  const measured = after.reduce((a, b) => a + b, 0) / after.length;
  const line =
    `profile → plan → run, dp ${l.cfg.dp ?? 1} × tp ${l.cfg.tp ?? 1} × pp ${l.cfg.ranks}: cut ${l.cut.join(',')}, ${l.best}, lanes ${l.profile.lanes}; predicted ${l.predicted.toFixed(1)} ms per step, ` +
    `measured ${measured.toFixed(1)} ms (mean of ${after.length} steps: ${after.map((x) => x.toFixed(0)).join(', ')}): error ${(100 * (measured / l.predicted - 1)).toFixed(1)}%`;
  return { profile: l.profile, dir: l.dir, predicted: l.predicted, measured, line };
}

describe('profile on the cluster, plan in the tab, run the plan', () => {
  // Each replica's micro-batches as at dp = 1: the batch doubles with the replicas.
  const CFGS: RunConfig[] = [base, { ...base, dp: 2, batchSize: 2 * base.batchSize }, { ...base, tp: 2 }];
  let done: Loop[] = [];
  beforeAll(async () => {
    done = await loops(CFGS);
  }, 1_200_000);

  it('the planned run’s measured step time is of the size the plan predicted (the error is printed)', () => {
    const { profile, dir, predicted, measured, line } = measuredOf(done[0]);
    console.log(line);
    const spec = planRun(base).spec;
    expect(profile.unit).toBe('ms');
    expect(profile.source).toMatch(/^train\.py --profile on CPU .*torch 1\.13/);
    expect(profile.comm.length).toBe(spec.blocks.length - 1);
    expect(profile.lanes).toBeGreaterThan(0);
    expect(profile.allReduce).toBeUndefined();
    // Every block's weight bytes, as the model has them (float32).
    expect(profile.blocks.map((b) => b.paramBytes)).toEqual(blockCosts(spec, 'params').map((n) => 4 * n));

    // Bad input: a truncated profile, a profile of another model, dp without the cluster's all-reduce.
    const text = readFileSync(join(dir, 'profile.json'), 'utf8');
    const json = JSON.parse(text) as { blocks: unknown[] };
    const truncated = join(dir, 'truncated.json');
    writeFileSync(truncated, JSON.stringify({ ...json, blocks: json.blocks.slice(0, 3) }));
    const t = cli('plan', '--profile', truncated, '--ranks', '2', '--microbatches', '8', '--mem-cap', '8');
    expect(t.code).not.toBe(0);
    expect(t.err).toContain(`blocks 3–${spec.blocks.length - 1} are missing`);
    const other = planRun({ ...base, hidden: 128 }).spec;
    expect(() => checkProfileModel(profile, other)).toThrow(/profile\.model = .*was measured on another model/);
    const noRing = cli('plan', '--profile', join(dir, 'profile.json'), '--ranks', '2', '--microbatches', '8', '--mem-cap', '8', '--dp', '2');
    expect(noRing.code).not.toBe(0);
    expect(noRing.err).toContain('profile.allReduce = undefined: is missing: planning dp = 2 replicas needs the all-reduce measured on the cluster');

    // Behaviour, not time (the project's rule for tests): the plan's prediction is of the right size (a wrong unit,
    // a lost lane or a missing stage is off by far more than 2×). How close it comes (goal: within 15% on a quiet
    // machine) is printed above and recorded in the closing notes; on a loaded CI machine the step times of one run
    // vary 2.7× and a tight bound would fail for reasons that are not the loop's.
    expect(measured / predicted).toBeGreaterThan(0.5);
    expect(measured / predicted).toBeLessThan(2);
  }, 600_000);

  it('at dp = 2 × pp = 2 the plan uses the cluster’s all-reduce and its prediction is of the right size (the error is printed)', () => {
    const { profile, predicted, measured, line } = measuredOf(done[1]);
    console.log(line);
    expect(profile.allReduce?.replicas).toBe(2);
    expect(profile.allReduce?.samples.length).toBeGreaterThanOrEqual(3);
    // Four processes on two cores while CI runs other test files beside them: +52% was seen there (+15…28% on a
    // quiet machine), so the bound is wider than at dp = 1; the plan's use of dp is checked above by its mesh line.
    expect(measured / predicted).toBeGreaterThan(0.5);
    expect(measured / predicted).toBeLessThan(3);
  }, 600_000);

  it('at tp = 2 × pp = 2 the plan uses one tp worker’s pieces and collectives and its prediction is of the right size (the error is printed)', () => {
    const { profile, predicted, measured, line } = measuredOf(done[2]);
    console.log(line);
    expect(profile.tp?.t).toBe(2);
    expect(profile.tpAllReduce?.replicas).toBe(2);
    // Four processes on two cores: the tp all-reduce's fitted latency moved from 0.15 to 1.0 ms per exchange between
    // quiet runs here (the run's step stayed at ~200 ms; errors −7%, +26%, +49%, and +73%, +92% in CI runs: tp peers
    // sharing two cores wait for each other to be scheduled at every collective, which the lock-step model does not
    // hold), so the bound is wide; the plan's use of the tp part is checked exactly in src/plan/profile-tp.test.ts.
    expect(measured / predicted).toBeGreaterThan(0.4);
    expect(measured / predicted).toBeLessThan(3);
  }, 600_000);
});
