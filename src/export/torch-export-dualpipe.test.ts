/**
 * DualPipe's two model copies under torchrun (CPU, gloo) against the float64
 * single-device loop (src/nn/train.ts), as src/runtime/one-device/dualpipe-cpu.test.ts
 * checks the page's workers: rank r holds copy 0's stage r and copy 1's stage
 * p − 1 − r, each copy trains its half of the micro-batches, and at the flush
 * each stage's gradients are summed over its two copies (copies.py) before the
 * same optimizer step on both. Every step's loss within 1e-4 relative, the
 * final weights (copy 0's, trained.safetensors) too, and the copies equal bit
 * for bit (train.py prints their largest difference). The char-MLP on p = 2
 * also saves every step and resumes its step-1 file, which loads both copies:
 * its later steps repeat the straight run. On dp replicas (each stage
 * all_reduced over them, then summed over its copies) and with tp processes
 * per stage (their pieces summed pair by pair), the same, and with ZeRO-1 and
 * ZeRO-3 (each owned chunk's gradient summed over the copies before its update).
 * A bundle whose copies of a stage share a rank is refused before any process
 * group starts. Needs Debian's python3-torch.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice } from '../nn/train.ts';
import { defaultRunConfig, toTrainConfig, withDataset, type RunConfig } from '../config/run-config.ts';
import { generateSchedule, toCsv } from '../schedule/index.ts';
import { crossRankColumnViolations } from '../schedule/test-support.ts';
import { maxRelativeDiff, maxWeightDiff, readTrainedWeights, runPython, withoutKeyBias, type TorchrunResult } from './testing/torchrun.ts';
import { writeTempBundle } from './testing/temp-bundle.ts';
import { launchCases } from './testing/resume-launch.ts';
import { moeChecks } from './testing/moe-page.ts';
import type { TorchBundleConfig } from './torch-bundle.ts';

const names = withDataset(defaultRunConfig(), 'names');
const charMlp: RunConfig = { ...names, layers: 3, hidden: 16, context: 3, embedDim: 8, batchSize: 16, microbatches: 4, steps: 3, evalEvery: 0, ranks: 2, schedule: 'dualpipe' };
const gpt: RunConfig = { ...names, model: 'gpt', layers: 3, heads: 2, width: 8, blockSize: 16, batchSize: 16, microbatches: 8, steps: 3, evalEvery: 0, lr: 0.01, weightDecay: 0.01, ranks: 4, schedule: 'dualpipe' };

/** `resume`: the run also saves every step, and a second run of its bundle, later in the same launch, resumes its step-1 file (its steps 1… must repeat). */
const CASES: { title: string; cfg: RunConfig; resume?: boolean }[] = [
  { title: 'char-MLP, dualpipe, p 2, m 4, AdamW, checkpoint every step and resume', cfg: charMlp, resume: true },
  { title: 'GPT, dualpipe, p 4, m 8', cfg: gpt },
  { title: 'char-MLP, dualpipe, p 2, m 4, full recomputation (both copies’ forwards again in their backwards)', cfg: { ...charMlp, recompute: true } },
  // On replicas (each stage all_reduced over them, then summed over its copies) and with tp (each tp process its pieces).
  { title: 'char-MLP, dualpipe, dp 2 × p 2, m 4', cfg: { ...charMlp, dp: 2 } },
  { title: 'char-MLP, dualpipe, dp 2 × p 2, m 4, ZeRO-1', cfg: { ...charMlp, dp: 2, zero: 1 } },
  { title: 'char-MLP, dualpipe, dp 2 × p 2, m 4, ZeRO-3', cfg: { ...charMlp, dp: 2, zero: 3 } },
  { title: 'GPT, dualpipe, tp 2 × p 2, m 4', cfg: { ...gpt, ranks: 2, microbatches: 4, tp: 2 } },
  // A mixture-of-experts GPT (moe.py): each copy's blocks route their own micro-batches; the aux loss summed over both.
  {
    title: 'MoE GPT, GShard top-2, 4 experts, dropless, dualpipe, p 2, m 4',
    cfg: { ...gpt, ranks: 2, microbatches: 4, batchSize: 8, experts: 4, topK: 2, capacityFactor: 0, auxLossWeight: 0.1 },
  },
];

describe('DualPipe (two model copies) under torchrun equals the float64 single-device loop', () => {
  // Every case's bundle, run in one torchrun launch per world size (its processes import torch once, not per case).
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
      const p = cfg.ranks;
      const world = cfg.dp * (cfg.tp ?? 1) * p;
      const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
      const { dir, files } = bundles[i];
      const bundle = JSON.parse(files.find((f) => f.path === 'config.json')!.data as string) as TorchBundleConfig;
      // 2p stages: copy 0's stage k on rank k, copy 1's stage k (stage p + k) on rank p − 1 − k, the same blocks and weights.
      expect({ copies: bundle.copies, stages: bundle.stages, world: bundle.world }).toEqual({ copies: 2, stages: 2 * p, world });
      expect(bundle.stageToRank).toEqual([...Array.from({ length: p }, (_, k) => k), ...Array.from({ length: p }, (_, k) => p - 1 - k)]);
      expect(bundle.stageBlocks.slice(p)).toEqual(bundle.stageBlocks.slice(0, p));
      expect(bundle.stageParams.slice(p)).toEqual(bundle.stageParams.slice(0, p));
      // The CSV lists both copies' stages, time-aligned (it has no field for the copies: config.json carries them).
      const csv = files.find((f) => f.path === 'schedule.csv')!.data as string;
      const schedule = generateSchedule('dualpipe', p, cfg.microbatches);
      expect(crossRankColumnViolations(csv, 2)).toEqual([]);
      expect(csv).toBe(toCsv(schedule));
      expect(new Set(schedule.order.flat().map((a) => a.stage)).size).toBe(2 * p);

      const r = runs[i];
      expect(r.code, r.output).toBe(0);
      expect(r.losses.length, r.output).toBe(cfg.steps);
      // Rank 0 holds copy 1's last stage (stage 2p − 1) and prints the sum of both copies' losses.
      expect(r.output.match(/\[default(\d)\]:step 0 loss/g), r.output).toEqual(['[default0]:step 0 loss']);
      const copies = /model copies differ by (\S+)/.exec(r.output);
      expect(copies, r.output).not.toBeNull();
      const comparable = (w: Readonly<Record<string, ArrayLike<number>>>) => (cfg.model === 'gpt' ? withoutKeyBias(w, cfg.width ?? 0) : w);
      const lossDiff = maxRelativeDiff(r.losses, ref.losses);
      const weightDiff = maxWeightDiff(comparable(readTrainedWeights(dir)), comparable(ref.params));
      console.log(`${title}: max relative loss difference ${lossDiff.toExponential(2)}, weights ${weightDiff.toExponential(2)}, copies differ by ${copies![1]}`);
      expect(lossDiff).toBeLessThan(1e-4);
      expect(weightDiff).toBeLessThan(1e-4);
      expect(Number(copies![1])).toBe(0);
      expect(Math.abs(r.heldout - ref.final.valLoss) / ref.final.valLoss).toBeLessThan(1e-4);
      if (cfg.experts) await moeChecks(title, cfg, r, dir, ref);
      if (!resume) return;
      // The checkpoint holds copy 0's weights by name; a resume loads them into both copies.
      const trained = readTrainedWeights(dir);
      const resumed = resumedRuns.get(i)!;
      expect(resumed.code, resumed.output).toBe(0);
      expect(resumed.output, resumed.output).toContain(`resumed from ${join(dir, 'out', 'checkpoint-step1.safetensors')} at step 1`);
      const resumedLoss = maxRelativeDiff(resumed.losses.slice(1), r.losses.slice(1));
      const resumedWeights = maxWeightDiff(readTrainedWeights(resumedBundles.get(i)!.dir), trained);
      const resumedCopies = /model copies differ by (\S+)/.exec(resumed.output);
      console.log(`${title}: resumed from step 1 vs straight: losses ${resumedLoss.toExponential(2)}, weights ${resumedWeights.toExponential(2)}, copies differ by ${resumedCopies?.[1]}`);
      // docs/pytorch.md: the resumed run repeats the straight one exactly (0).
      expect(resumedLoss).toBe(0);
      expect(resumedWeights).toBe(0);
      expect(Number(resumedCopies?.[1])).toBe(0);
    }, 300_000);
  });

  it('refuses, before any process group starts, a bundle whose copies of a stage share a rank', () => {
    const { dir } = writeTempBundle({ ...charMlp, dp: 2, steps: 1 });
    const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as TorchBundleConfig;
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...cfg, stageToRank: [0, 1, 0, 1] }));
    expect(runPython(dir, { RANK: '0', WORLD_SIZE: '4' }).output).toContain(
      "config.json: model stage 0's 2 copies sit on ranks [0, 0]: each copy of a stage must be on its own rank",
    );
  }, 60_000);
});
