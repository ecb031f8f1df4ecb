/**
 * dp × pp under torchrun: the exported program run as dp = 2 replicas of a
 * p = 2 pipeline (4 processes, replica-major, CPU, gloo), against the float64
 * single-device loop on the whole batch (src/nn/train.ts): every step's loss
 * (the whole batch's, summed over the replicas) within 1e-4 relative and the
 * same final weights, for 1F1B and ZB-H1, the char-MLP and the GPT, with and
 * without ZeRO-1 (four launches cover each pair: each schedule meets each model
 * once, and each model runs with and without ZeRO-1), one with the all-reduce
 * at the flush instead of overlapped. Needs Debian's python3-torch.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice } from '../nn/train.ts';
import { defaultRunConfig, toTrainConfig, withDataset, type RunConfig } from '../config/run-config.ts';
import { maxRelativeDiff, maxWeightDiff, readTrainedWeights, runTorchrun, withoutKeyBias } from './testing/torchrun.ts';
import { writeTempBundle } from './testing/temp-bundle.ts';
import type { TorchBundleConfig } from './torch-bundle.ts';

const names = withDataset(defaultRunConfig(), 'names');
const charMlp: RunConfig = { ...names, layers: 3, hidden: 16, context: 3, embedDim: 8, batchSize: 32, microbatches: 4, steps: 3, evalEvery: 0, ranks: 2, dp: 2 };
const gpt: RunConfig = { ...names, model: 'gpt', layers: 3, heads: 2, width: 8, blockSize: 16, batchSize: 16, microbatches: 4, steps: 3, evalEvery: 0, lr: 0.01, weightDecay: 0.01, ranks: 2, dp: 2 };

const CASES: { title: string; cfg: RunConfig }[] = [
  { title: 'char-MLP, 1f1b, dp 2 × p 2', cfg: { ...charMlp, schedule: '1f1b' } },
  { title: 'char-MLP, zb-h1, dp 2 × p 2, ZeRO-1, all-reduce at the flush (no overlap)', cfg: { ...charMlp, schedule: 'zb-h1', zero: 1, overlap: false } },
  { title: 'GPT, 1f1b, dp 2 × p 2, ZeRO-1', cfg: { ...gpt, schedule: '1f1b', zero: 1 } },
  { title: 'GPT, zb-h1, dp 2 × p 2', cfg: { ...gpt, schedule: 'zb-h1' } },
];

describe('dp × pp under torchrun equals the float64 single-device loop', () => {
  for (const { title, cfg } of CASES) {
    it(title, async () => {
      const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
      const { dir, files } = writeTempBundle(cfg);
      const bundle = JSON.parse(files.find((f) => f.path === 'config.json')!.data as string) as TorchBundleConfig;
      expect({ dp: bundle.dp, ranks: bundle.ranks, world: bundle.world, rows: bundle.rowsPerMicrobatch }).toEqual({ dp: 2, ranks: 2, world: 4, rows: cfg.batchSize / 8 });
      const r = await runTorchrun(dir, 4);
      expect(r.code, r.output).toBe(0);
      expect(r.losses.length, r.output).toBe(cfg.steps);
      // One process prints the losses: the last stage's of replica 0 (process 1), the sum over both replicas.
      expect(r.output.match(/\[default(\d)\]:step 0 loss/g), r.output).toEqual(['[default1]:step 0 loss']);
      const comparable = (w: Readonly<Record<string, ArrayLike<number>>>) => (cfg.model === 'gpt' ? withoutKeyBias(w, cfg.width ?? 0) : w);
      const lossDiff = maxRelativeDiff(r.losses, ref.losses);
      const weightDiff = maxWeightDiff(comparable(readTrainedWeights(dir)), comparable(ref.params));
      console.log(`${title}: max relative loss difference ${lossDiff.toExponential(2)}, weights ${weightDiff.toExponential(2)}`);
      expect(lossDiff).toBeLessThan(1e-4);
      expect(weightDiff).toBeLessThan(1e-4);
      expect(Math.abs(r.heldout - ref.final.valLoss) / ref.final.valLoss).toBeLessThan(1e-4);
    }, 300_000);
  }
});
