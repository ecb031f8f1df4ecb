/**
 * Checkpoints cross between the page and torchrun (issue 20): train.py
 * `--resume FILE` continues a run from a run-state file and `--save-every N`
 * (and the end of every run) writes one, in src/run-state/codec.ts's format.
 *
 * - The page's float64 single-device loop, k steps → its checkpoint →
 *   torchrun --resume continues to 2k: the same losses (steps k … 2k−1) and
 *   final weights as the page's 2k steps straight, ≤ 1e-4 relative.
 * - torchrun 2k steps with --save-every k → the page's loop loads the file of
 *   step k (decodeRunState against the run's configuration) and continues to
 *   2k: the same losses and weights as torchrun's 2k steps, ≤ 1e-4.
 * - The same on dp = 2 × 2 ranks with ZeRO-1 (each replica's shard of the
 *   optimizer state gathered into the file, and cut back out on resume):
 *   torchrun --resume of its own step-k file repeats its straight run's steps
 *   k … 2k−1, and the page continues that file to torchrun's 2k.
 *
 * - --resume refuses, before any process group starts and on every process, a
 *   damaged file, one of another model or configuration (naming the first
 *   difference), and one already at the run's last step.
 *
 * Needs Debian's python3-torch (scripts/install-deps.sh).
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { buildModelSpec } from '../nn/model-config.ts';
import { paramShapes } from '../nn/param-shapes.ts';
import { trainSingleDevice, type TrainResult } from '../nn/train.ts';
import { decodeRunState, encodeRunState } from '../run-state/codec.ts';
import { runStateOf, type RunState } from '../run-state/run-state.ts';
import { defaultRunConfig, toTrainConfig, withDataset, type RunConfig } from '../config/run-config.ts';
import { maxRelativeDiff, maxWeightDiff, readTrainedWeights, runPythonMany, runTorchrun, runTorchrunMany } from './testing/torchrun.ts';
import { writeTempBundle } from './testing/temp-bundle.ts';

const K = 2;
/** The character MLP on names, 2 ranks, AdamW with weight decay and the cosine schedule (the lr of step k comes from the file). */
const charMlp: RunConfig = {
  ...withDataset(defaultRunConfig(), 'names'), hidden: 16, embedDim: 4, layers: 3, batchSize: 16, microbatches: 2,
  steps: 2 * K, evalEvery: 0, ranks: 2, schedule: '1f1b', optimizer: 'adamw', weightDecay: 0.01, lrSchedule: 'cosine',
};
/** The spiral MLP on dp = 2 replicas of 2 ranks with ZeRO-1, SGD with momentum. */
const zeroMesh: RunConfig = {
  ...defaultRunConfig(), hidden: 8, layers: 3, batchSize: 16, microbatches: 2, steps: 2 * K, evalEvery: 0,
  ranks: 2, dp: 2, zero: 1, schedule: '1f1b', optimizer: 'sgd', lr: 0.1, momentum: 0.9, weightDecay: 0.01,
};

async function pageRun(cfg: RunConfig, opts: { stopAt?: number; from?: RunState } = {}): Promise<TrainResult> {
  let done = opts.from?.stepsDone ?? 0;
  const stop = opts.stopAt ?? cfg.steps;
  return trainSingleDevice(new CpuBackend(), toTrainConfig(cfg), { onStep: () => void done++, shouldStop: () => done >= stop }, { readProgress: true, from: opts.from });
}

/** Each checkpoint's save time (train.py prints `checkpoint PATH ms X`) beside the run's median step time. */
function saveTimes(output: string, stepMs: readonly number[]): string {
  const saves = [...output.matchAll(/checkpoint \S+ ms (\S+)/g)].map((m) => Number(m[1]));
  const sorted = stepMs.filter((x) => x !== undefined).sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  return `saves ${saves.map((x) => `${x.toFixed(1)} ms`).join(', ')} beside a median step of ${median.toFixed(1)} ms (${saves.map((x) => `${(x / median).toFixed(2)}×`).join(', ')})`;
}

function readCheckpoint(dir: string, step: number, cfg: RunConfig): RunState {
  return decodeRunState(new Uint8Array(readFileSync(join(dir, 'out', `checkpoint-step${step}.safetensors`))), { config: cfg });
}

describe('checkpoints cross between the page and torchrun', () => {
  it('char-MLP, p = 2: page k steps → torchrun --resume to 2k = page 2k straight; torchrun 2k (--save-every k) = page continuing its step-k file', async () => {
    const straight = await pageRun(charMlp);
    const half = await pageRun(charMlp, { stopAt: K });
    const { dir } = writeTempBundle(charMlp);
    const pageFile = join(dir, 'page-checkpoint.safetensors');
    writeFileSync(pageFile, encodeRunState(runStateOf(charMlp, half.progress!)));
    // Both torchrun runs, each in its own folder, in one launch (its processes import torch once).
    const other = writeTempBundle(charMlp).dir;
    const [resumed, torchStraight] = await runTorchrunMany([
      { dir, world: charMlp.ranks, args: ['--resume', pageFile] },
      { dir: other, world: charMlp.ranks, args: ['--save-every', String(K)] },
    ]);
    expect(resumed.code, resumed.output).toBe(0);
    expect(resumed.output).toContain(`resumed from ${pageFile} at step ${K}`);
    expect(resumed.losses.slice(0, K).every((x) => x === undefined), resumed.output).toBe(true);
    const lossA = maxRelativeDiff(resumed.losses.slice(K), straight.losses.slice(K));
    const weightA = maxWeightDiff(readTrainedWeights(dir), straight.params);
    // The end-of-run checkpoint holds the page's first k losses and torchrun's next k, and the trained weights.
    const end = readCheckpoint(dir, 2 * K, charMlp);
    expect(end.stepsDone).toBe(2 * K);
    expect(end.losses.slice(0, K)).toEqual(half.losses);
    expect(maxRelativeDiff(end.losses.slice(K), resumed.losses.slice(K))).toBeLessThan(1e-8);
    expect(maxWeightDiff(end.params, readTrainedWeights(dir))).toBe(0);

    expect(torchStraight.code, torchStraight.output).toBe(0);
    const fromTorch = readCheckpoint(other, K, charMlp);
    expect(fromTorch.producer).toBe('PipeLab train.py');
    expect(fromTorch.stepsDone).toBe(K);
    expect(maxRelativeDiff(fromTorch.losses, torchStraight.losses.slice(0, K))).toBeLessThan(1e-8);
    const continued = await pageRun(charMlp, { from: fromTorch });
    const lossB = maxRelativeDiff(continued.losses.slice(K), torchStraight.losses.slice(K));
    const weightB = maxWeightDiff(continued.params, readTrainedWeights(other));
    console.log(`char-MLP: page k → torchrun 2k: losses ${lossA.toExponential(2)}, weights ${weightA.toExponential(2)}; torchrun k → page 2k: losses ${lossB.toExponential(2)}, weights ${weightB.toExponential(2)}`);
    console.log(`char-MLP p = 2: ${saveTimes(torchStraight.output, torchStraight.stepMs)}`);
    for (const d of [lossA, weightA, lossB, weightB]) expect(d).toBeLessThan(1e-4);
  }, 400_000);

  it('dp = 2 × 2 ranks, ZeRO-1, SGD: torchrun --resume of its step-k file repeats its straight steps; the page continues that file to torchrun 2k', async () => {
    const { dir } = writeTempBundle(zeroMesh);
    const again = writeTempBundle(zeroMesh);
    const world = zeroMesh.dp * zeroMesh.ranks;
    // The straight run, then in the same launch (its own copy of the bundle) the run resumed from its step-k file: each
    // run ends at a barrier after rank 0 wrote its files, so the file is whole before any process reads it.
    const file = join(dir, 'out', `checkpoint-step${K}.safetensors`);
    const [straight, resumed] = await runTorchrunMany([
      { dir, world, args: ['--save-every', String(K)] },
      { dir: again.dir, world, args: ['--resume', file] },
    ]);
    expect(straight.code, straight.output).toBe(0);
    const trained = readTrainedWeights(dir);
    const fromTorch = decodeRunState(new Uint8Array(readFileSync(file)), { config: zeroMesh });
    // SGD's momentum after k steps is no zero vector: the shards really were gathered.
    expect(Object.values(fromTorch.optimizer.slots).every((s) => s.momentum_buffer.some((x) => x !== 0))).toBe(true);

    expect(resumed.code, resumed.output).toBe(0);
    expect(resumed.output, resumed.output).toContain(`resumed from ${file} at step ${K}`);
    const lossA = maxRelativeDiff(resumed.losses.slice(K), straight.losses.slice(K));
    const weightA = maxWeightDiff(readTrainedWeights(again.dir), trained);
    const continued = await pageRun(zeroMesh, { from: fromTorch });
    const lossB = maxRelativeDiff(continued.losses.slice(K), straight.losses.slice(K));
    const weightB = maxWeightDiff(continued.params, trained);
    console.log(`dp 2 × 2 ZeRO-1: torchrun resumed vs straight: losses ${lossA.toExponential(2)}, weights ${weightA.toExponential(2)}; page from torchrun's k vs torchrun 2k: losses ${lossB.toExponential(2)}, weights ${weightB.toExponential(2)}`);
    console.log(`dp 2 × 2 ZeRO-1: ${saveTimes(straight.output, straight.stepMs)}`);
    expect(lossA).toBeLessThan(1e-6);
    expect(weightA).toBeLessThan(1e-6);
    expect(lossB).toBeLessThan(1e-4);
    expect(weightB).toBeLessThan(1e-4);
  }, 400_000);

  it('--resume refuses a damaged file, another model, another configuration and a finished run, on every process, before training', async () => {
    const { dir } = writeTempBundle(charMlp);
    const own = runStateOf(charMlp, (await pageRun(charMlp, { stopAt: K })).progress!);
    const files: [string, Uint8Array, string][] = [];
    const damaged = encodeRunState(own);
    damaged[damaged.length - 1] ^= 0x01;
    files.push(['damaged', damaged, 'corrupted checkpoint: its checksum is']);
    const otherModel = runStateOf({ ...charMlp, hidden: 12 }, (await pageRun({ ...charMlp, hidden: 12 }, { stopAt: 1 })).progress!);
    const shapesOf = (cfg: RunConfig) => paramShapes(buildModelSpec(toTrainConfig(cfg)));
    const ours = shapesOf(charMlp);
    const [firstName, theirShape] = [...shapesOf({ ...charMlp, hidden: 12 })].find(([n, shape]) => String(ours.get(n)) !== String(shape))!;
    files.push(['other-model', encodeRunState(otherModel), `a checkpoint of another model: parameter ${firstName} is [${theirShape.join(', ')}] in the checkpoint, [${ours.get(firstName)!.join(', ')}] in this run's model`]);
    const otherLr = runStateOf({ ...charMlp, lr: charMlp.lr * 2 }, (await pageRun({ ...charMlp, lr: charMlp.lr * 2 }, { stopAt: 1 })).progress!);
    files.push(['other-lr', encodeRunState(otherLr), `a checkpoint of another configuration: config.lr = ${charMlp.lr * 2} in the checkpoint, ${charMlp.lr} in this run`]);
    files.push(['finished', encodeRunState(runStateOf(charMlp, (await pageRun(charMlp)).progress!)), `the checkpoint is at step ${2 * K}; this run ends at step ${2 * K}: nothing to do`]);
    const checks = files.flatMap(([name, bytes, message]) => {
      const path = join(dir, `${name}.safetensors`);
      writeFileSync(path, bytes);
      return (name === 'damaged' ? [0, 1] : [1]).map((rank) => ({ name, path, message, rank }));
    });
    // All in one Python process (torch imported once).
    const results = runPythonMany(checks.map(({ path, rank }) => ({ dir, env: { RANK: String(rank), WORLD_SIZE: '2' }, args: ['--resume', path] })));
    expect(results).toHaveLength(5);
    checks.forEach(({ name, path, message, rank }, i) => {
      const r = results[i];
      expect(r.code, `${name} rank ${rank}: ${r.output}`).not.toBe(0);
      expect(r.output, name).toContain(`train.py: --resume ${path}: `);
      expect(r.output, name).toContain(message);
    });
    // A checkpoint of the same run on another mesh resumes: the mesh and schedule are not part of what must match.
    const otherMesh = encodeRunState({ ...own, config: { ...own.config, ranks: 1, schedule: 'gpipe' } });
    writeFileSync(join(dir, 'other-mesh.safetensors'), otherMesh);
    const r = await runTorchrun(dir, charMlp.ranks, ['--resume', join(dir, 'other-mesh.safetensors'), '--steps', String(K + 1)]);
    expect(r.code, r.output).toBe(0);
    expect(r.losses[K], r.output).toBeCloseTo((await pageRun(charMlp, { stopAt: K + 1 })).losses[K], 5);
  }, 300_000);
});
