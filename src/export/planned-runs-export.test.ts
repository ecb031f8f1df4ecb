/**
 * Runs planned by src/plan exported for PyTorch: a cut by block count keeps
 * each stage's parameters with its blocks, and dualpipe-v (B beside split I/W),
 * the interleaved zero bubble (split I/W on looped virtual stages, m not a
 * multiple of p) and auto train under torchrun exactly like the float64
 * single-device loop.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice } from '../nn/train.ts';
import { defaultRunConfig, toTrainConfig, type RunConfig } from '../config/run-config.ts';
import { planRun } from '../runtime/executor/run-plan.ts';
import { maxRelativeDiff, maxWeightDiff, readTrainedWeights, runTorchrunMany, writeBundle, type TorchrunResult } from './testing/torchrun.ts';
import { buildTorchBundle, type TorchBundleConfig } from './torch-bundle.ts';
import { readTorchProgram } from './torch-program-disk.ts';

const names: RunConfig = { ...defaultRunConfig(), dataset: 'names', model: 'char-mlp', context: 3, embedDim: 8, layers: 4, hidden: 16, batchSize: 32, microbatches: 4, steps: 4, evalEvery: 0 };

function configOf(cfg: RunConfig): TorchBundleConfig {
  const file = buildTorchBundle(cfg, readTorchProgram()).find((f) => f.path === 'config.json');
  if (!file || typeof file.data !== 'string') throw new Error('no config.json');
  return JSON.parse(file.data) as TorchBundleConfig;
}

describe('planned runs exported for PyTorch', () => {
  it('a cut by block count: each stage lists the parameters of its own blocks', () => {
    const cfg: RunConfig = { ...names, ranks: 3, partition: 'blocks' };
    const c = configOf(cfg);
    expect(c.stageBlocks).toEqual(planRun(cfg).stageBlocks);
    expect(c.stageBlocks).toEqual([[0, 1], [1, 3], [3, 5]]);
    const blockNames = planRun(cfg).spec.blocks.map((b) => b.name);
    c.stageParams.forEach((params, s) => {
      const [a, b] = c.stageBlocks[s];
      for (const [name] of params) expect(blockNames.slice(a, b), `${name} on stage ${s}`).toContain(name.split('.')[0]);
    });
  });

  const CASES = [
    // As torch-export.test.ts's zb-v case (GELU, 24 wide), whose float32 run it matches to 1e-4.
    { ...names, activation: 'gelu', hidden: 24, schedule: 'dualpipe-v', ranks: 2, virtual: 2, layers: 3, microbatches: 4 },
    { ...names, schedule: 'interleaved-zb', ranks: 2, virtual: 2, layers: 3, microbatches: 3, batchSize: 30, steps: 3 },
    { ...names, schedule: 'auto', ranks: 3, memCap: 2, partition: 'blocks' },
  ] as RunConfig[];
  // Every case's bundle, run in one torchrun launch per world size (its processes import torch once, not per case).
  let dirs: string[] = [];
  let runs: TorchrunResult[] = [];
  beforeAll(async () => {
    dirs = CASES.map((cfg) => {
      const dir = mkdtempSync(join(tmpdir(), 'pipelab-torch-plan-'));
      writeBundle(dir, buildTorchBundle(cfg, readTorchProgram()));
      return dir;
    });
    runs = await runTorchrunMany(CASES.map((cfg, i) => ({ dir: dirs[i], world: cfg.ranks })));
  }, 600_000);

  CASES.forEach((cfg, i) => {
    it(`${cfg.schedule} trains under torchrun like one device`, async () => {
      const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
      const r = runs[i];
      expect(r.code, r.output).toBe(0);
      expect(r.losses.length, r.output).toBe(cfg.steps);
      const lossDiff = maxRelativeDiff(r.losses, ref.losses);
      const weightDiff = maxWeightDiff(readTrainedWeights(dirs[i]), ref.params);
      console.log(`${cfg.schedule}: max relative loss difference ${lossDiff.toExponential(2)}, weights ${weightDiff.toExponential(2)}`);
      expect(lossDiff).toBeLessThan(1e-4);
      expect(weightDiff).toBeLessThan(1e-4);
    }, 240_000);
  });
});
