/**
 * Tensor parallelism under torchrun: the exported program with tp = 2 (Megatron's
 * split, tensor_parallel.py: GPT blocks by heads with two all-reduces forward and
 * two backward, the MLPs' hidden linears column-parallel with their outputs
 * all-gathered) against the float64 single-device loop (tp computes what one
 * device computes, so the page's reference for a tp run is the same run with
 * tp = 1): every step's loss within 1e-4 relative and the same final weights,
 * on dp 1 × tp 2 × pp 2 and dp 2 × tp 2 × pp 1, the GPT and the char-MLP (the
 * zero-bubble I/W split and ZeRO-1 each met once). The GPT's tp run saves a
 * checkpoint every step, whole tensors by name, and a tp = 1 bundle of the same
 * run resumes its step-1 file to the same losses and weights; `train.py
 * --profile` fits the tp group's all-reduce and measures one tp worker's blocks
 * with their collectives, which `pipelab plan --tp 2` plans from, with sequence
 * parallelism too (reduce-scatters, row blocks across the boundaries). Then the CLI's
 * --tp and what it refuses, and a launch of the wrong world size. Needs Debian's
 * python3-torch.
 */
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice } from '../nn/train.ts';
import { defaultRunConfig, toTrainConfig, withDataset, type RunConfig } from '../config/run-config.ts';
import { run } from '../cli/cli-test-support.ts';
import { parseProfile } from '../plan/profile.ts';
import { maxRelativeDiff, maxWeightDiff, readTrainedWeights, runPython, runTorchrun, runTorchrunMany, withoutKeyBias, type TorchrunResult } from './testing/torchrun.ts';
import { writeTempBundle } from './testing/temp-bundle.ts';
import type { TorchBundleConfig } from './torch-bundle.ts';

const names = withDataset(defaultRunConfig(), 'names');
const charMlp: RunConfig = { ...names, layers: 3, hidden: 16, context: 3, embedDim: 8, batchSize: 32, microbatches: 4, steps: 3, evalEvery: 0, tp: 2 };
const gpt: RunConfig = { ...names, model: 'gpt', layers: 3, heads: 2, width: 8, blockSize: 16, batchSize: 16, microbatches: 4, steps: 3, evalEvery: 0, lr: 0.01, weightDecay: 0.01, tp: 2 };

/** `resume`: the launch also saves every step, and a tp = 1 bundle of the run resumes its step-1 file. */
const CASES: { title: string; cfg: RunConfig; resume?: boolean }[] = [
  { title: 'GPT, 1f1b, dp 1 × tp 2 × pp 2, checkpoint every step, resumed on tp 1', cfg: { ...gpt, schedule: '1f1b', dp: 1, ranks: 2 }, resume: true },
  { title: 'char-MLP, zb-h1 (I and W split), dp 1 × tp 2 × pp 2', cfg: { ...charMlp, schedule: 'zb-h1', dp: 1, ranks: 2 } },
  { title: 'GPT, gpipe, dp 2 × tp 2 × pp 1, ZeRO-1', cfg: { ...gpt, schedule: 'gpipe', dp: 2, ranks: 1, zero: 1 } },
  { title: 'char-MLP, 1f1b, dp 2 × tp 2 × pp 1', cfg: { ...charMlp, schedule: '1f1b', dp: 2, ranks: 1 } },
  { title: 'GPT, 1f1b, dp 1 × tp 2 × pp 2, full recomputation (the forward’s all-reduces run again in the backward)', cfg: { ...gpt, schedule: '1f1b', dp: 1, ranks: 2, recompute: true } },
  // Sequence parallelism: token rows split between layers and stages, the LayerNorms' gradients summed over the group.
  { title: 'GPT, zb-h1, dp 1 × tp 2 × pp 2, sequence parallelism (I and W split)', cfg: { ...gpt, schedule: 'zb-h1', dp: 1, ranks: 2, sequenceParallel: true } },
  { title: 'GPT, 1f1b, dp 2 × tp 2 × pp 1, ZeRO-3, sequence parallelism, full recomputation', cfg: { ...gpt, schedule: '1f1b', dp: 2, ranks: 1, zero: 3, sequenceParallel: true, recompute: true } },
];

/** The bundle `train.py --profile` measures (dp 1 × tp 2 × pp 2, one step), and its flags. */
const profiled: RunConfig = { ...gpt, schedule: '1f1b', dp: 1, ranks: 2, steps: 1 };
const PROFILE_FLAGS = ['--profile', '--profile-repeats', '1'];

// Every 4-process run of this file (the cases' training, then the two profiles) in one torchrun launch: its
// processes import torch once, not per run. The profiles are the last two.
const JOBS: { cfg: RunConfig; args: string[] }[] = [
  ...CASES.map(({ cfg, resume }) => ({ cfg, args: resume ? ['--save-every', '1'] : [] })),
  { cfg: profiled, args: PROFILE_FLAGS },
  { cfg: { ...profiled, sequenceParallel: true }, args: PROFILE_FLAGS },
];
let bundles: ReturnType<typeof writeTempBundle>[] = [];
let runs: TorchrunResult[] = [];
beforeAll(async () => {
  bundles = JOBS.map(({ cfg }) => writeTempBundle(cfg));
  runs = await runTorchrunMany(JOBS.map(({ args }, i) => ({ dir: bundles[i].dir, world: 4, args })));
}, 900_000);

describe('tp under torchrun equals the float64 single-device loop', () => {
  CASES.forEach(({ title, cfg, resume }, i) => {
    it(title, async () => {
      const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig({ ...cfg, tp: 1 }));
      const { dir, files } = bundles[i];
      const bundle = JSON.parse(files.find((f) => f.path === 'config.json')!.data as string) as TorchBundleConfig;
      expect({ dp: bundle.dp, tp: bundle.tp, ranks: bundle.ranks, world: bundle.world }).toEqual({ dp: cfg.dp, tp: 2, ranks: cfg.ranks, world: 4 });
      expect(Object.keys(bundle.tpParams).length).toBeGreaterThan(0);
      const r = runs[i];
      expect(r.code, r.output).toBe(0);
      expect(r.losses.length, r.output).toBe(cfg.steps);
      // One process prints: tp rank 0 of replica 0's last stage (process 2 with pp 2, process 0 with pp 1).
      expect(r.output.match(/\[default(\d)\]:step 0 loss/g), r.output).toEqual([`[default${cfg.ranks === 2 ? 2 : 0}]:step 0 loss`]);
      const comparable = (w: Readonly<Record<string, ArrayLike<number>>>) => (cfg.model === 'gpt' ? withoutKeyBias(w, cfg.width ?? 0) : w);
      const trained = readTrainedWeights(dir);
      const lossDiff = maxRelativeDiff(r.losses, ref.losses);
      const weightDiff = maxWeightDiff(comparable(trained), comparable(ref.params));
      console.log(`${title}: max relative loss difference ${lossDiff.toExponential(2)}, weights ${weightDiff.toExponential(2)}`);
      expect(lossDiff).toBeLessThan(1e-4);
      expect(weightDiff).toBeLessThan(1e-4);
      expect(Math.abs(r.heldout - ref.final.valLoss) / ref.final.valLoss).toBeLessThan(1e-4);
      if (!resume) return;
      // The checkpoint holds whole tensors by name: the same run on one process per rank (tp = 1) continues it.
      const whole = writeTempBundle({ ...cfg, tp: 1 });
      const file = join(whole.dir, 'step-1.safetensors');
      copyFileSync(join(dir, 'out', 'checkpoint-step1.safetensors'), file);
      const resumed = await runTorchrun(whole.dir, cfg.dp * cfg.ranks, ['--resume', file]);
      expect(resumed.code, resumed.output).toBe(0);
      const resumedLoss = maxRelativeDiff(resumed.losses.slice(1), r.losses.slice(1));
      const resumedWeights = maxWeightDiff(comparable(readTrainedWeights(whole.dir)), comparable(trained));
      console.log(`${title}: tp 1 resumed from the tp 2 run's step 1 vs the tp 2 run: losses ${resumedLoss.toExponential(2)}, weights ${resumedWeights.toExponential(2)}`);
      // docs/pytorch.md: the same losses (0 difference at the 9 digits train.py prints), the weights within 1e-6.
      expect(resumedLoss).toBe(0);
      expect(resumedWeights).toBeLessThan(1e-6);
    }, 300_000);
  });

  it('train.py --profile on dp 1 × tp 2 × pp 2 writes a profile the planner reads, with the tp group\'s all-reduce fitted', () => {
    const { dir } = bundles[CASES.length];
    const r = runs[CASES.length];
    expect(r.code, r.output).toBe(0);
    const profile = parseProfile(JSON.parse(readFileSync(join(dir, 'profile.json'), 'utf8')));
    expect(profile.blocks.length).toBe(gpt.layers + 1);
    expect(profile.allReduce).toBeUndefined();
    const tp = profile.tpAllReduce!;
    expect(tp.replicas).toBe(2);
    // Each block input's activation of one micro-batch (4 rows × 16 × 8 floats), then the two probes.
    expect(tp.samples.map((s) => s.bytes)).toEqual([4 * 16 * 8 * 4, 1024, 1 << 20].sort((a, b) => a - b));
    expect(tp.latency).toBeGreaterThanOrEqual(0);
    expect(tp.bandwidth).toBeGreaterThan(0);
    console.log(`tp 2 all-reduce on this machine: latency ${tp.latency.toFixed(3)} ms, bandwidth ${(tp.bandwidth / 1e6).toFixed(2)} GB/s`);
    // The blocks as one tp worker computes them: each GPT block (block 0 holds the embedding and the first) waits for
    // two all-reduces of the activation forward and two backward; the head for none. Its pieces hold fewer weights.
    const parts = profile.tp!;
    expect(parts.t).toBe(2);
    const act = { coll: 'tp-all-reduce', bytes: 4 * 16 * 8 * 4 };
    expect(parts.blocks.map((b) => [b.forward, b.backward])).toEqual([...Array.from({ length: gpt.layers }, () => [[act, act], [act, act]]), [[], []]]);
    for (let b = 0; b < gpt.layers; b++) expect(parts.blocks[b].paramBytes!).toBeLessThan(profile.blocks[b].paramBytes!);
    expect(parts.blocks[gpt.layers].paramBytes).toBe(profile.blocks[gpt.layers].paramBytes);
    // The planner plans that tp from it.
    const plan = run('plan', '--profile', join(dir, 'profile.json'), '--ranks', '2', '--microbatches', '4', '--mem-cap', '4', '--tp', '2');
    expect(plan.code, plan.err).toBe(0);
    expect(plan.out).toContain('tp         2 workers per stage (4 in all)');
  }, 120_000);
});

describe('export-torch --tp and what a tp bundle refuses', () => {
  const out = mkdtempSync(join(tmpdir(), 'pipelab-cli-tp-'));
  const small = ['--dataset', 'names', '--model', 'gpt', '--layers', '2', '--heads', '2', '--width', '8', '--blockSize', '16', '--batchSize', '16', '--microbatches', '4', '--steps', '2', '--ranks', '2'];

  it('writes tp, world = dp × tp × ranks and the split parameters, and prints the launch of that many processes', () => {
    const r = run('export-torch', ...small, '--dp', '2', '--tp', '2', '--out', join(out, 'tp'));
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('torchrun --redirects 1 --tee 1 --nproc_per_node=8 train.py');
    const cfg = JSON.parse(r.files.get(join(out, 'tp', 'config.json')) as string) as TorchBundleConfig;
    expect({ dp: cfg.dp, tp: cfg.tp, ranks: cfg.ranks, world: cfg.world, runTp: cfg.run.tp }).toEqual({ dp: 2, tp: 2, ranks: 2, world: 8, runTp: 2 });
    expect(cfg.tpParams['transformer.h.0.attn.c_attn.weight']).toEqual({ rule: { kind: 'rows', parts: 3 }, shape: [24, 8], block: 0 });
    expect(cfg.tpParams['transformer.h.1.mlp.c_proj.weight']).toEqual({ rule: { kind: 'cols' }, shape: [8, 32], block: 1 });
    expect(cfg.tpParams['lm_head.weight']).toBeUndefined();
    expect(r.files.has(join(out, 'tp', 'tensor_parallel.py'))).toBe(true);
    expect(r.files.get(join(out, 'tp', 'README.md'))).toContain('The world size is dp × tp × ranks = 2 × 2 × 2 = 8');
  });

  it('refuses tp not dividing the heads or the hidden width, naming field, value and rule', () => {
    const refusals: [string[], string][] = [
      [[...small, '--tp', '3'], "--tp = 3: must divide the GPT's heads = 2"],
      [['--dataset', 'names', '--hidden', '16', '--ranks', '2', '--tp', '3'], '--tp = 3: must divide the hidden width = 16'],
    ];
    for (const [flags, message] of refusals) {
      const r = run('export-torch', ...flags, '--out', join(out, 'never'));
      expect(r.code, flags.join(' ')).toBe(2);
      expect(r.err, flags.join(' ')).toContain(message);
      expect(r.files.size).toBe(0);
    }
  });

  it('stops every process of a launch whose world size is not dp × tp × ranks, before any process group starts, naming the numbers', () => {
    const { dir } = writeTempBundle({ ...gpt, schedule: '1f1b', dp: 1, ranks: 2, steps: 1 });
    for (const rank of [0, 2]) {
      const r = runPython(dir, { RANK: String(rank), WORLD_SIZE: '3' });
      expect(r.code).not.toBe(0);
      expect(r.output).toContain(`rank ${rank}: world size = 3, but this run was exported for dp x tp x ranks = 1 x 2 x 2 = 4 processes: start it with torchrun --nproc_per_node=4`);
    }
  }, 60_000);

  it('train.py --profile on a sequence-parallel bundle lists its reduce-scatters and gathers and times its row blocks across the boundaries; plan --tp 2 plans it', () => {
    const { dir, files } = bundles[CASES.length + 1];
    expect(files.find((f) => f.path === 'README.md')!.data as string).toContain('Sequence parallelism is on');
    const r = runs[CASES.length + 1];
    expect(r.code, r.output).toBe(0);
    const profile = parseProfile(JSON.parse(readFileSync(join(dir, 'profile.json'), 'utf8')));
    const parts = profile.tp!;
    expect(parts.sequenceParallel).toBe(true);
    expect(parts.comm).toHaveLength(gpt.layers);
    // One micro-batch is 4 rows × 16 tokens × 8 floats = 2048 bytes whole; each worker holds half of its token rows.
    // A GPT block forward: the LayerNorm's rows gathered, the projection's sum reduce-scattered, twice. Backward (torch's
    // order aside): each of those reversed. The gradients of the LayerNorms and row-parallel biases, which cover this
    // process's rows, are summed once where the update reads them, not in the block's backward. Block 0's embedding
    // gathers its gradient's rows; the head gathers its input's rows and nothing back.
    const ag = { coll: 'tp-all-gather', bytes: 2048 };
    const rs = { coll: 'tp-reduce-scatter', bytes: 2048 };
    const sorted = (l: readonly { coll: string; bytes: number }[]) => [...l].sort((a, b) => `${a.coll}${a.bytes}`.localeCompare(`${b.coll}${b.bytes}`));
    const block = [ag, ag, rs, rs];
    const back = sorted(block);
    expect(parts.blocks.map((b) => b.forward)).toEqual([[ag, rs, ag, rs], [ag, rs, ag, rs], [ag, rs, ag, rs], [ag]]);
    expect(parts.blocks.map((b) => sorted(b.backward))).toEqual([sorted([...back, ag]), back, back, []]);
    // Each GPT block keeps less for its backward than the whole block (a tp worker's heads and columns and, between the
    // layers, its rows); the head keeps more: the rows it gathered besides its own block. A later block's input is its
    // block of the rows: 1024 bytes.
    for (let b = 0; b < gpt.layers; b++) expect(parts.blocks[b].heldBytes).toBeLessThan(profile.blocks[b].heldBytes);
    expect(parts.blocks[gpt.layers].heldBytes).toBe(profile.blocks[gpt.layers].heldBytes + 1024);
    expect(parts.blocks.slice(1).map((b) => b.heldBytesRecompute)).toEqual([1024, 1024, 1024]);
    const plan = run('plan', '--profile', join(dir, 'profile.json'), '--ranks', '2', '--microbatches', '4', '--mem-cap', '4', '--tp', '2');
    expect(plan.code, plan.err).toBe(0);
    expect(plan.out).toContain('tp         2 workers per stage (4 in all) with sequence parallelism (each sends its block of the token rows)');
  }, 120_000);
});
