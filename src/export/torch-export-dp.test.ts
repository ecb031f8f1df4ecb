/**
 * dp × pp under torchrun: the exported program run as dp = 2 replicas of a
 * p = 2 pipeline (4 processes, replica-major, CPU, gloo), against the float64
 * single-device loop on the whole batch (src/nn/train.ts): every step's loss
 * (the whole batch's, summed over the replicas) within 1e-4 relative and the
 * same final weights, for 1F1B and ZB-H1, the char-MLP and the GPT, with and
 * without ZeRO-1 (four launches cover each pair: each schedule meets each model
 * once, and each model runs with and without ZeRO-1), one with the all-reduce
 * at the flush instead of overlapped; and an MoE GPT (GShard top-2 with drops,
 * ZeRO-1), each replica routing its own micro-batches, against the page's run
 * and the loop on dp × m micro-batches (the same routing groups); and expert
 * parallelism as the tab runs it (run.ep = 2, config.json's ep): p 2 × ep 2
 * (GShard top-2 with drops) and dp 2 × ep 2 (Switch with drops, full
 * recomputation), each ep process on half of every micro-batch's sequences and
 * holding half the experts, the whole micro-batch routed as one group (moe.py),
 * against the page's own ep = 2 run and the loop, in the same launch.
 *
 * ZeRO-2 and ZeRO-3 (collectives.py: a reduce-scatter, emulated by an
 * all_reduce, after every backward; ZeRO-3's weights gathered before each
 * F/B/I and zeroed after) on the same mesh, each model with each: ZeRO-2 on
 * ZB-H1 (the W path) and on 1F1B without overlap; ZeRO-3 on interleaved 1F1B
 * (two stages per rank) keeping each stage for the step with the other's
 * gather prefetched, and on ZB-H1 freeing after every action (W runs on
 * freed weights: it needs none) without prefetch, saving a checkpoint every
 * step (the weights gathered whole) and resuming from step 1 with the same
 * losses and weights as the straight run. (Skipping the gather before I, or
 * before B and I, or before one step's F, or keeping p.grad after the
 * reduce-scatter, fails these cases.) Needs Debian's python3-torch.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice } from '../nn/train.ts';
import { defaultRunConfig, toTrainConfig, withDataset, type RunConfig } from '../config/run-config.ts';
import { maxRelativeDiff, maxWeightDiff, readTrainedWeights, withoutKeyBias, type TorchrunResult } from './testing/torchrun.ts';
import { writeTempBundle } from './testing/temp-bundle.ts';
import { launchCases } from './testing/resume-launch.ts';
import { moeChecks } from './testing/moe-page.ts';
import type { TorchBundleConfig } from './torch-bundle.ts';

const names = withDataset(defaultRunConfig(), 'names');
const charMlp: RunConfig = { ...names, layers: 3, hidden: 16, context: 3, embedDim: 8, batchSize: 32, microbatches: 4, steps: 3, evalEvery: 0, ranks: 2, dp: 2 };
const gpt: RunConfig = { ...names, model: 'gpt', layers: 3, heads: 2, width: 8, blockSize: 16, batchSize: 16, microbatches: 4, steps: 3, evalEvery: 0, lr: 0.01, weightDecay: 0.01, ranks: 2, dp: 2 };

/**
 * `resume`: the run also saves every step, and a second run of its bundle, later in the same launch, resumes its step-1
 * file (its steps 1… must repeat).
 */
const CASES: { title: string; cfg: RunConfig; resume?: boolean }[] = [
  { title: 'char-MLP, 1f1b, dp 2 × p 2', cfg: { ...charMlp, schedule: '1f1b' } },
  { title: 'char-MLP, zb-h1, dp 2 × p 2, ZeRO-1, all-reduce at the flush (no overlap)', cfg: { ...charMlp, schedule: 'zb-h1', zero: 1, overlap: false } },
  { title: 'GPT, 1f1b, dp 2 × p 2, ZeRO-1', cfg: { ...gpt, schedule: '1f1b', zero: 1 } },
  { title: 'GPT, zb-h1, dp 2 × p 2', cfg: { ...gpt, schedule: 'zb-h1' } },
  {
    title: 'MoE GPT, GShard top-2, 4 experts, capacity factor 1.25 (drops), 1f1b, dp 2 × p 2, ZeRO-1 (each replica’s micro-batch its own routing group)',
    cfg: { ...gpt, schedule: '1f1b', zero: 1, experts: 4, topK: 2, capacityFactor: 1.25, auxLossWeight: 0.1 },
  },
  // Expert parallelism as the tab runs it (config.json's ep = run.ep): each stage on 2 ep processes, each on half of every
  // micro-batch's sequences and holding 2 of the 4 experts, the whole micro-batch routed as one group (the probabilities
  // all-gathered), the rows exchanged by all_to_all_single; the page's own ep = 2 run's numbers and one device's.
  {
    title: 'MoE GPT, GShard top-2, capacity factor 1 (drops), 1f1b, p 2 × ep 2 (experts 0–1 on ep rank 0, 2–3 on ep rank 1)',
    cfg: { ...gpt, dp: 1, ep: 2, schedule: '1f1b', experts: 4, topK: 2, capacityFactor: 1, auxLossWeight: 0.1 },
  },
  {
    title: 'MoE GPT, Switch top-1, capacity factor 1, 1f1b, dp 2 × ep 2 (p 1), full recomputation (the experts’ gradients summed over the replicas holding them)',
    cfg: { ...gpt, ranks: 1, ep: 2, schedule: '1f1b', experts: 4, topK: 1, capacityFactor: 1, auxLossWeight: 0.1, recompute: true },
  },
  { title: 'char-MLP, zb-h1, dp 2 × p 2, ZeRO-2', cfg: { ...charMlp, schedule: 'zb-h1', zero: 2 } },
  { title: 'GPT, 1f1b, dp 2 × p 2, ZeRO-2, no overlap', cfg: { ...gpt, schedule: '1f1b', zero: 2, overlap: false } },
  { title: 'char-MLP, interleaved-1f1b v 2, dp 2 × p 2, ZeRO-3, reshard per step, prefetch', cfg: { ...charMlp, schedule: 'interleaved-1f1b', virtual: 2, zero: 3, reshard: 'step', prefetch: true } },
  { title: 'GPT, 1f1b, dp 2 × p 2, ZeRO-3, reshard every micro-batch, full recomputation (the forward again on weights gathered for the backward)', cfg: { ...gpt, schedule: '1f1b', zero: 3, reshard: 'microbatch', prefetch: false, recompute: true } },
  { title: 'GPT, zb-h1, dp 2 × p 2, ZeRO-3, reshard every micro-batch (W on freed weights), no prefetch, checkpoint every step and resume', cfg: { ...gpt, schedule: 'zb-h1', zero: 3, reshard: 'microbatch', prefetch: false }, resume: true },
];

describe('dp × pp under torchrun equals the float64 single-device loop', () => {
  // Every case's bundle, run in one torchrun launch (its processes import torch once, not per case).
  let bundles: ReturnType<typeof writeTempBundle>[] = [];
  let runs: TorchrunResult[] = [];
  let resumedBundles = new Map<number, ReturnType<typeof writeTempBundle>>();
  let resumedRuns = new Map<number, TorchrunResult>();
  beforeAll(async () => {
    // A resume case's second run follows its straight run in the same launch (testing/resume-launch.ts).
    ({ bundles, runs, resumedBundles, resumedRuns } = await launchCases(CASES));
  }, 900_000);

  CASES.forEach(({ title, cfg, resume }, i) => {
    it(title, async () => {
      // An MoE block routes each replica's micro-batch as its own group (with ep, the ep processes' slices of it as one):
      // one device with dp × m micro-batches has the same groups.
      const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg.experts ? { ...cfg, microbatches: cfg.dp * cfg.microbatches } : cfg));
      const { dir, files } = bundles[i];
      const bundle = JSON.parse(files.find((f) => f.path === 'config.json')!.data as string) as TorchBundleConfig;
      const ep = cfg.ep ?? 1;
      expect({ dp: bundle.dp, ranks: bundle.ranks, ep: bundle.ep, world: bundle.world, rows: bundle.rowsPerMicrobatch }).toEqual({ dp: cfg.dp, ranks: cfg.ranks, ep, world: 4, rows: cfg.batchSize / (cfg.dp * cfg.microbatches) });
      expect(bundle.run).toMatchObject({ zero: cfg.zero, reshard: cfg.reshard, prefetch: cfg.prefetch });
      const r = runs[i];
      expect(r.code, r.output).toBe(0);
      expect(r.losses.length, r.output).toBe(cfg.steps);
      // One process prints the losses: the last stage's of replica 0 (ep rank 0), process (ranks − 1) · ep
      // (src/schedule/mesh.ts workerOf), the sum over every replica and ep rank.
      expect(r.output.match(/\[default(\d)\]:step 0 loss/g), r.output).toEqual([`[default${(cfg.ranks - 1) * ep}]:step 0 loss`]);
      if (ep > 1) {
        // Process g = ((d · ranks + rank) · 2 + e); each holds its ep rank's half of the experts; per MoE block and
        // micro-batch it all-gathers the probabilities once per forward and exchanges rows twice per forward and twice
        // per backward (with full recomputation the forward runs again in the backward).
        const moeBlocks = bundle.stageBlocks.map(([a, b]) => (bundle.model as { blocks: { layers: { kind: string }[] }[] }).blocks.slice(a, b).filter((bl) => bl.layers.some((l) => l.kind === 'gpt-moe-block')).length);
        const forwards = cfg.recompute ? 2 : 1;
        for (let g = 0; g < 4; g++) {
          const e = g % 2, rank = Math.floor(g / 2) % cfg.ranks;
          const n = moeBlocks[rank] * cfg.microbatches * cfg.steps;
          expect(r.output, r.output).toContain(`[default${g}]:rank ${g}: ep rank ${e} of 2: experts ${2 * e}..${2 * e + 1} of ${moeBlocks[rank]} MoE blocks, ${n * forwards} all_gather and ${n * (2 * forwards + 2)} all_to_all_single calls`);
        }
      }
      const comparable = (w: Readonly<Record<string, ArrayLike<number>>>) => (cfg.model === 'gpt' ? withoutKeyBias(w, cfg.width ?? 0) : w);
      const lossDiff = maxRelativeDiff(r.losses, ref.losses);
      const weightDiff = maxWeightDiff(comparable(readTrainedWeights(dir)), comparable(ref.params));
      console.log(`${title}: max relative loss difference ${lossDiff.toExponential(2)}, weights ${weightDiff.toExponential(2)}`);
      expect(lossDiff).toBeLessThan(1e-4);
      expect(weightDiff).toBeLessThan(1e-4);
      expect(Math.abs(r.heldout - ref.final.valLoss) / ref.final.valLoss).toBeLessThan(1e-4);
      if (cfg.experts) await moeChecks(title, cfg, r, dir, ref);
      if (!resume) return;
      // Every step's checkpoint holds the whole weights (ZeRO-3 gathers them): resuming step 1's repeats steps 1….
      const trained = readTrainedWeights(dir);
      const resumed = resumedRuns.get(i)!;
      expect(resumed.code, resumed.output).toBe(0);
      expect(resumed.output, resumed.output).toContain(`resumed from ${join(dir, 'out', 'checkpoint-step1.safetensors')} at step 1`);
      const resumedLoss = maxRelativeDiff(resumed.losses.slice(1), r.losses.slice(1));
      const resumedWeights = maxWeightDiff(readTrainedWeights(resumedBundles.get(i)!.dir), trained);
      console.log(`${title}: resumed from step 1 vs straight: losses ${resumedLoss.toExponential(2)}, weights ${resumedWeights.toExponential(2)}`);
      // docs/pytorch.md: the resumed ZeRO-3 run repeats its straight run exactly.
      expect(resumedLoss).toBe(0);
      expect(resumedWeights).toBe(0);
    }, 300_000);
  });
});
