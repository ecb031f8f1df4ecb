/**
 * PipeDream and PipeDream-2BW under torchrun: the exported program runs the
 * whole run as one stream (schedule.csv holds steps × m micro-batches,
 * numbered across steps) with each stage updating its own weights as the
 * page's policies do (src/export/torch/stream.py): PipeDream after every
 * backward on the weight version its forward stashed, 2BW every m
 * micro-batches with gradients one version stale (on dp replicas after an
 * all_reduce of each block's gradients). Each is checked against
 * the page's own run of the same configuration (the pipeline runtime on the
 * float64 CPU reference, in-process): every step's loss and the final
 * weights. The staleness is what is tested: the same bundle
 * trained synchronously (1F1B, a flush per step) ends measurably elsewhere.
 * A stream has no step to stop, save or resume at: --steps, --save-every and
 * --resume are refused before any process group starts. Needs Debian's
 * python3-torch.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice, type TrainProgress } from '../nn/train.ts';
import { encodeRunState } from '../run-state/codec.ts';
import { runStateOf } from '../run-state/run-state.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultRunConfig, toTrainConfig, withDataset, type RunConfig } from '../config/run-config.ts';
import { runPipeline } from '../runtime/coordinator.ts';
import { InProcessRankHost } from '../runtime/executor/in-process-host.ts';
import { maxRelativeDiff, maxWeightDiff, readTrainedWeights, runPythonMany, runTorchrunMany, withoutKeyBias, type TorchrunResult } from './testing/torchrun.ts';
import { writeTempBundle } from './testing/temp-bundle.ts';
import type { TorchBundleConfig } from './torch-bundle.ts';

const names = withDataset(defaultRunConfig(), 'names');
const charMlp: RunConfig = { ...names, layers: 3, hidden: 16, context: 3, embedDim: 8, batchSize: 32, microbatches: 4, steps: 4, evalEvery: 0, lr: 0.01, weightDecay: 0.01 };
const gpt: RunConfig = { ...names, model: 'gpt', layers: 3, heads: 2, width: 8, blockSize: 16, batchSize: 8, microbatches: 4, steps: 4, evalEvery: 0, lr: 0.01, weightDecay: 0.01 };

const CASES: { title: string; cfg: RunConfig }[] = [
  { title: 'PipeDream, char-MLP, p = 3, m = 4 (up to 3 weight versions a stage), AdamW', cfg: { ...charMlp, schedule: 'pipedream', ranks: 3 } },
  { title: 'PipeDream, GPT, p = 2, SGD with momentum', cfg: { ...gpt, schedule: 'pipedream', ranks: 2, optimizer: 'sgd', lr: 0.1, momentum: 0.9 } },
  // A mixture-of-experts GPT (moe.py): its router and experts bound per weight version like every other weight; the aux
  // loss's gradient in every backward (its value and drops are not printed for a stream: the bundle's README says so).
  { title: 'PipeDream, MoE GPT (4 experts, GShard top-2, capacity factor 1, α 0.1), p = 2, AdamW', cfg: { ...gpt, schedule: 'pipedream', ranks: 2, experts: 4, topK: 2, capacityFactor: 1, auxLossWeight: 0.1 } },
  { title: 'PipeDream-2BW, char-MLP, p = 2, m = 4, AdamW', cfg: { ...charMlp, schedule: 'pipedream-2bw', ranks: 2 } },
  { title: 'PipeDream, char-MLP, p = 3, full recomputation (a backward runs its forward again on its own micro-batch’s weight version)', cfg: { ...charMlp, schedule: 'pipedream', ranks: 3, recompute: true } },
  { title: 'PipeDream-2BW, GPT, p = 4, m = 4 (m = p: the first stage runs 3 forwards ahead), AdamW', cfg: { ...gpt, schedule: 'pipedream-2bw', ranks: 4 } },
  { title: 'PipeDream-2BW on replicas, char-MLP, dp 2 × p 2, m = 4 (each block’s gradients all_reduced before its update), AdamW', cfg: { ...charMlp, schedule: 'pipedream-2bw', ranks: 2, dp: 2 } },
  { title: 'PipeDream-2BW with tensor parallelism, GPT, tp 2 × p 2 (each process versions its own pieces), AdamW', cfg: { ...gpt, schedule: 'pipedream-2bw', ranks: 2, tp: 2 } },
  // A stream sums the sequence-parallel LayerNorm gradients in every backward (a flush: once, where the update reads them).
  // SGD: AdamW's per-element step turns float32's different sums over tp pieces into lr-sized steps on the near-zero
  // gradients of PipeDream's 16 updates (6e-4 apart with tp 2, with or without SP; 3e-7 with SGD).
  { title: 'PipeDream with sequence parallelism, GPT, tp 2 × p 2 (the LayerNorms’ row parts summed in each backward), SGD with momentum', cfg: { ...gpt, schedule: 'pipedream', ranks: 2, tp: 2, sequenceParallel: true, optimizer: 'sgd', lr: 0.1, momentum: 0.9 } },
];

describe('PipeDream and PipeDream-2BW under torchrun equal the page’s run', () => {
  // Every case's bundle, run in one torchrun launch per world size (its processes import torch once, not per case).
  let bundles: ReturnType<typeof writeTempBundle>[] = [];
  let runs: TorchrunResult[] = [];
  // The 2BW resume test's page run, its two files and their runs (the last two of the 2-process launch, the refused one last).
  let resume: Awaited<ReturnType<typeof resumeJobs>>;
  let resumed: TorchrunResult[] = [];
  beforeAll(async () => {
    bundles = CASES.map(({ cfg }) => writeTempBundle(cfg));
    resume = await resumeJobs();
    const results = await runTorchrunMany([...CASES.map(({ cfg }, i) => ({ dir: bundles[i].dir, world: cfg.dp * cfg.tp * cfg.ranks })), ...resume.jobs]);
    runs = results.slice(0, CASES.length);
    resumed = results.slice(CASES.length);
  }, 900_000);

  CASES.forEach(({ title, cfg }, i) => {
    it(title, async () => {
      const page = await runPipeline(cfg, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()), readWeights: true });
      const { dir, files } = bundles[i];
      const bundle = JSON.parse(files.find((f) => f.path === 'config.json')!.data as string) as TorchBundleConfig;
      const stream = cfg.schedule === 'pipedream'
        ? { update: 'stash-and-update-after-backward', lossOver: 'microbatch' }
        : { update: 'double-buffered', lossOver: 'step' };
      expect(bundle).toMatchObject({ ...stream, windowMicrobatches: cfg.steps * cfg.microbatches, microbatches: cfg.microbatches });
      expect(bundle.lossScalePerMicrobatch === undefined).toBe(cfg.schedule !== 'pipedream');
      const world = cfg.dp * cfg.tp * cfg.ranks;
      const r = runs[i];
      expect(r.code, r.output).toBe(0);
      expect(r.losses.length, r.output).toBe(cfg.steps);
      const comparable = (w: Readonly<Record<string, ArrayLike<number>>>) => (cfg.model === 'gpt' ? withoutKeyBias(w, cfg.width ?? 0) : w);
      const lossDiff = maxRelativeDiff(r.losses, page.losses);
      const weights = comparable(readTrainedWeights(dir));
      expect(page.weights, 'the page run read its weights').toBeDefined();
      const weightDiff = maxWeightDiff(weights, comparable(page.weights!));
      // The staleness is real: synchronous training of the same batches ends elsewhere.
      const sync = await trainSingleDevice(new CpuBackend(), toTrainConfig({ ...cfg, schedule: '1f1b' }));
      const syncDiff = maxWeightDiff(weights, comparable(sync.params));
      console.log(`${title}: losses ${lossDiff.toExponential(2)}, weights ${weightDiff.toExponential(2)} (vs synchronous 1F1B: ${syncDiff.toExponential(2)})`);
      expect(lossDiff).toBeLessThan(1e-4);
      expect(weightDiff).toBeLessThan(1e-4);
      expect(syncDiff).toBeGreaterThan(100 * Math.max(weightDiff, 1e-7));
      expect(Number.isFinite(r.heldout), r.output).toBe(true); // of the weights just compared
      // Each process says how many weight versions its stage held: PipeDream up to p − r (rank r's forwards in flight), 2BW two.
      for (let g = 0; g < world; g++) {
        const rank = Math.floor(g / cfg.tp) % cfg.ranks;
        const want = cfg.schedule === 'pipedream' ? cfg.ranks - rank : 2;
        expect(r.output, `process ${g}`).toContain(`rank ${g}: weight versions held at most: stage ${rank} ${want}`);
      }
      // One process prints the losses: replica 0's last stage, the whole batch's (both replicas' shares).
      expect(r.output.match(/\[default(\d)\]:step 0 loss/g), r.output).toEqual([`[default${(cfg.ranks - 1) * cfg.tp}]:step 0 loss`]);
    }, 300_000);
  });

  it('refuses --steps and --save-every for a stream, and --resume for PipeDream, before any process group starts, naming the flag and why', () => {
    const checks = (['pipedream-2bw', 'pipedream'] as const).flatMap((schedule) => {
      const { dir } = writeTempBundle({ ...charMlp, schedule, ranks: 2 });
      const flags = [['--steps', '2'], ['--save-every', '1'], ...(schedule === 'pipedream' ? [['--resume', 'nowhere.safetensors']] : [])];
      return flags.map((args) => ({ schedule, dir, args }));
    });
    // All in one Python process (torch imported once).
    const results = runPythonMany(checks.map(({ dir, args }) => ({ dir, env: { RANK: '0', WORLD_SIZE: '2' }, args })));
    expect(results).toHaveLength(5);
    checks.forEach(({ schedule, args }, i) => {
      const r = results[i];
      expect(r.code, r.output).not.toBe(0);
      expect(r.output).toContain(`${args[0]}: schedule ${schedule} runs its 4 steps as one stream of 16 micro-batches with no flush`);
    });
  });

  it("PipeDream-2BW: the page's checkpoint inside its stream continues under torchrun --resume (walked from micro-batch B·m) to the page's uninterrupted losses and weights", () => {
    const { page, dir, file } = resume;
    const [r, refused] = resumed;
    expect(r.code, r.output).toBe(0);
    expect(r.output).toContain(`resumed from ${file} at step 3`);
    expect(r.losses.slice(0, 3).every((x) => x === undefined), r.output).toBe(true);
    const lossDiff = maxRelativeDiff(r.losses.slice(3), page.losses.slice(3));
    const weightDiff = maxWeightDiff(readTrainedWeights(dir), page.weights);
    console.log(`PipeDream-2BW resumed at step 3 under torchrun: losses ${lossDiff.toExponential(2)}, weights ${weightDiff.toExponential(2)}`);
    expect(lossDiff).toBeLessThan(1e-4);
    expect(weightDiff).toBeLessThan(1e-4);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toContain('a PipeDream-2BW stream resumed at step 3 needs the checkpoint');
  });
});

/**
 * The 2BW resume test's runs: the page's 2BW run with a checkpoint inside its stream (after step 3 of 6), resumed from
 * it in a bundle; and a checkpoint without the older version (a synchronous run's), which cannot continue a 2BW stream,
 * in a bundle of its own: both for the file's 2-process launch, the refused one last (a failed job ends the launch).
 */
async function resumeJobs() {
  const cfg: RunConfig = { ...charMlp, schedule: 'pipedream-2bw', ranks: 2, steps: 6 };
  const saved: TrainProgress[] = [];
  const page = await runPipeline(cfg, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()), readWeights: true, progressEvery: 3, onProgress: (p) => saved.push(p) });
  expect(saved[0].stepsDone).toBe(3);
  const { dir } = writeTempBundle(cfg);
  const file = join(dir, 'page-2bw.safetensors');
  writeFileSync(file, encodeRunState(runStateOf(cfg, saved[0])));
  const other = writeTempBundle(cfg).dir;
  const syncFile = join(other, 'sync.safetensors');
  const sync = { ...runStateOf(cfg, saved[0]), config: { ...cfg, schedule: '1f1b' as const } };
  delete sync.previous;
  writeFileSync(syncFile, encodeRunState(sync));
  return {
    page,
    dir,
    file,
    jobs: [
      { dir, world: cfg.ranks, args: ['--resume', file] },
      { dir: other, world: cfg.ranks, args: ['--resume', syncFile] },
    ],
  };
}
