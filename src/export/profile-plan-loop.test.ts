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
import { describe, expect, it } from 'vitest';
import { run as cli } from '../cli/cli-test-support.ts';
import { blockCosts } from '../nn/model-spec.ts';
import { makePlan } from '../plan/plan.ts';
import { profileFromJson, type Profile } from '../plan/profile.ts';
import { checkProfileModel } from '../plan/profile-model.ts';
import { cutOfRanges } from '../config/explicit-cut.ts';
import { defaultRunConfig, withDataset, type RunConfig } from '../config/run-config.ts';
import { planRun } from '../runtime/executor/run-plan.ts';
import { simulate } from '../schedule/index.ts';
import { runTorchrun, writeBundle } from './testing/torchrun.ts';
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

/** Profile `cfg` under torchrun, plan it with `pipelab plan --profile` (dp replicas), export the plan, run it: predicted and measured ms per step. */
async function loop(cfg: RunConfig): Promise<{ profile: Profile; dir: string; predicted: number; measured: number; line: string }> {
  const dp = cfg.dp ?? 1;
  const tp = cfg.tp ?? 1;
  const world = dp * tp * cfg.ranks;
  const { dir } = writeTempBundle(cfg);
  const p = await runTorchrun(dir, world, ['--profile', '--profile-repeats', '6'], 240_000);
  expect(p.code, p.output).toBe(0);
  const file = join(dir, 'profile.json');
  const profile: Profile = profileFromJson(readFileSync(file, 'utf8'));
  const spec = planRun(cfg).spec;
  expect(profile.blocks.length).toBe(spec.blocks.length);
  expect(() => checkProfileModel(profile, spec)).not.toThrow();
  // The processes' lanes on this CPU: never more than the cores they can run on, however loaded the machine was.
  expect(profile.lanes).toBeGreaterThan(0);
  expect(profile.lanes).toBeLessThanOrEqual(Math.min(availableParallelism(), world));

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

  // Export the planned cut and schedule through the CLI, run it.
  const fields = { dataset: 'names', layers: cfg.layers, hidden: cfg.hidden, context: cfg.context, embedDim: cfg.embedDim, batchSize: cfg.batchSize, microbatches: cfg.microbatches, steps: cfg.steps, evalEvery: 0, ranks: cfg.ranks, dp, tp, schedule: best.name, partition: 'cut', cut: cut.join(',') };
  const exported = cli('export-torch', ...Object.entries(fields).flatMap(([k, v]) => [`--${k}`, String(v)]), '--out', 'planned');
  expect(exported.code, exported.err).toBe(0);
  const runDir = mkdtempSync(join(tmpdir(), 'pipelab-torch-loop-'));
  writeBundle(runDir, [...exported.files].map(([path, data]) => ({ path: path.slice('planned/'.length), data })));
  const out = JSON.parse(readFileSync(join(runDir, 'config.json'), 'utf8')) as { stageBlocks: [number, number][]; run: RunConfig };
  expect(out.stageBlocks).toEqual(plan.partition.ranges);
  // A tp group's workers in lock step share the lanes like one worker with lanes / tp (plan.ts).
  const predicted = simulate(planRun(out.run).schedule, { ...plan.costs, lanes: profile.lanes! / tp }).makespan;

  const r = await runTorchrun(runDir, world, [], 240_000);
  expect(r.code, r.output).toBe(0);
  const after = r.stepMs.slice(1);
  const measured = after.reduce((a, b) => a + b, 0) / after.length;
  const line =
    `profile → plan → run, dp ${dp} × tp ${tp} × pp ${cfg.ranks}: cut ${cut.join(',')}, ${best.name}, lanes ${profile.lanes}; predicted ${predicted.toFixed(1)} ms per step, ` +
    `measured ${measured.toFixed(1)} ms (mean of ${after.length} steps: ${after.map((x) => x.toFixed(0)).join(', ')}): error ${(100 * (measured / predicted - 1)).toFixed(1)}%`;
  return { profile, dir, predicted, measured, line };
}

describe('profile on the cluster, plan in the tab, run the plan', () => {
  it('the planned run’s measured step time is of the size the plan predicted (the error is printed)', async () => {
    const { profile, dir, predicted, measured, line } = await loop(base);
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

  it('at dp = 2 × pp = 2 the plan uses the cluster’s all-reduce and its prediction is of the right size (the error is printed)', async () => {
    // Each replica's micro-batches as above: the batch doubles with the replicas.
    const { profile, predicted, measured, line } = await loop({ ...base, dp: 2, batchSize: 2 * base.batchSize });
    console.log(line);
    expect(profile.allReduce?.replicas).toBe(2);
    expect(profile.allReduce?.samples.length).toBeGreaterThanOrEqual(3);
    // Four processes on two cores while CI runs other test files beside them: +52% was seen there (+15…28% on a
    // quiet machine), so the bound is wider than at dp = 1; the plan's use of dp is checked above by its mesh line.
    expect(measured / predicted).toBeGreaterThan(0.5);
    expect(measured / predicted).toBeLessThan(3);
  }, 600_000);

  it('at tp = 2 × pp = 2 the plan uses one tp worker’s pieces and collectives and its prediction is of the right size (the error is printed)', async () => {
    const { profile, predicted, measured, line } = await loop({ ...base, tp: 2 });
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
