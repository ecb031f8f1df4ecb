/**
 * The exported PyTorch program, run for real under torchrun (CPU, gloo),
 * against the float64 CPU single-device loop (src/nn/train.ts): the same loss
 * at every step and the same final weights. Also what it refuses, and that a
 * wrong world size, a missing weight or a lost message ends it with a message,
 * never a hang. Needs Debian's python3-torch (scripts/install-deps.sh).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice } from '../nn/train.ts';
import { DATASETS } from '../data/datasets.ts';
import { HIDDEN_ACTIVATIONS } from '../nn/model-config.ts';
import { defaultRunConfig, toTrainConfig, withDataset, type RunConfig } from '../runtime/run-config.ts';
import { fromCsv, generateSchedule, toCsv } from '../schedule/index.ts';
import { crossRankColumnViolations } from '../schedule/test-support.ts';
import { ConfigError } from '../util/errors.ts';
import { readSafetensors, writeSafetensors } from '../util/safetensors.ts';
import { maxRelativeDiff, maxWeightDiff, readTrainedWeights, runTorchrun, writeBundle } from './testing/torchrun.ts';
import { buildTorchBundle, type BundleFile } from './torch-bundle.ts';
import { readTrainPy } from './train-py-file.ts';

const small: RunConfig = { ...defaultRunConfig(), layers: 3, hidden: 16, batchSize: 32, microbatches: 4, steps: 5, evalEvery: 0 };

function bundle(cfg: RunConfig): { dir: string; files: BundleFile[] } {
  const dir = mkdtempSync(join(tmpdir(), 'pipelab-torch-'));
  const files = buildTorchBundle(cfg, readTrainPy());
  writeBundle(dir, files);
  return { dir, files };
}

const CASES: { title: string; cfg: RunConfig }[] = [
  { title: 'zb-h1, p = 2, spiral MLP, AdamW (I and W split)', cfg: { ...small, schedule: 'zb-h1', ranks: 2 } },
  {
    title: 'zb-v, p = 2, v = 2, names char-MLP (embedding, LayerNorm, GELU; two stages on one rank)',
    cfg: { ...small, dataset: 'names', model: 'char-mlp', activation: 'gelu', context: 3, embedDim: 8, layers: 3, hidden: 24, schedule: 'zb-v', ranks: 2, virtual: 2 },
  },
  {
    title: 'interleaved-1f1b, p = 2, v = 2, SGD with momentum and weight decay, cosine lr',
    cfg: { ...small, schedule: 'interleaved-1f1b', ranks: 2, virtual: 2, optimizer: 'sgd', lr: 0.1, momentum: 0.9, weightDecay: 0.01, lrSchedule: 'cosine' },
  },
];

/** A small GPT (makemore's Transformer): 4 blocks cut 2 + 2, weight decay on, padded targets in every batch. */
const gpt: RunConfig = {
  ...withDataset(defaultRunConfig(), 'names'), model: 'gpt', layers: 3, heads: 2, width: 8, blockSize: 16,
  batchSize: 8, microbatches: 4, steps: 5, evalEvery: 0, lr: 0.01, weightDecay: 0.01, ranks: 2,
};
const GPT_CASES: { title: string; cfg: RunConfig }[] = [
  { title: 'gpt, zb-h1, p = 2 (attention blocks, I and W split, boundary [mb, T, C])', cfg: { ...gpt, schedule: 'zb-h1' } },
  { title: 'gpt, 1f1b, p = 2', cfg: { ...gpt, schedule: '1f1b' } },
];

/**
 * Every data set (so every model kind) and every activation the page offers, at
 * the sizes choosing the data set in the page gives (its width, depth, context,
 * embedding, batch, optimizer, weight decay, lr schedule), on 2 ranks for 3 steps.
 * Each activation runs on both model kinds; the 2-D sets take turns.
 */
const PAGE_DEFAULT_CASES: { title: string; cfg: RunConfig }[] = DATASETS.flatMap((dataset, d) =>
  HIDDEN_ACTIVATIONS.filter((_, a) => dataset === 'names' || a === d % HIDDEN_ACTIVATIONS.length).map((activation) => {
    const page = withDataset(defaultRunConfig(), dataset);
    const cfg: RunConfig = { ...page, activation, ranks: 2, steps: 3, evalEvery: 0, schedule: '1f1b' };
    return { title: `page defaults: ${dataset} (${cfg.model}, hidden ${cfg.hidden}, ${cfg.layers} layers), ${activation}, 1f1b, p = 2`, cfg };
  }),
);

describe('the exported PyTorch program equals the float64 single-device loop', () => {
  for (const { title, cfg } of [...CASES, ...GPT_CASES, ...PAGE_DEFAULT_CASES]) {
    it(title, async () => {
      const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
      const { dir, files } = bundle(cfg);
      const r = await runTorchrun(dir, cfg.ranks);
      expect(r.code, r.output).toBe(0);
      expect(r.losses.length, r.output).toBe(cfg.steps);
      const lossDiff = maxRelativeDiff(r.losses, ref.losses);
      const weightDiff = maxWeightDiff(readTrainedWeights(dir), ref.params);
      console.log(`${title}: max relative loss difference ${lossDiff.toExponential(2)}, weights ${weightDiff.toExponential(2)}`);
      expect(lossDiff).toBeLessThan(1e-4);
      expect(weightDiff).toBeLessThan(1e-4);
      // The held-out loss train.py prints is the float64 reference's, to float32 rounding.
      expect(Math.abs(r.heldout - ref.final.valLoss) / ref.final.valLoss).toBeLessThan(1e-4);
      // The bundle's CSV is the time-aligned form, and reads back as the run's schedule.
      const csv = files.find((f) => f.path === 'schedule.csv')!.data as string;
      expect(crossRankColumnViolations(csv)).toEqual([]);
      expect(fromCsv(csv).order).toEqual(generateSchedule(cfg.schedule as never, cfg.ranks, cfg.microbatches, cfg.virtual).order);
    }, 300_000);
  }
});

describe('what the exported program refuses', () => {
  it('refuses PipeDream async with a message naming the schedule and the rule', () => {
    expect(() => buildTorchBundle({ ...small, schedule: 'pipedream', ranks: 2 }, 'x')).toThrow(ConfigError);
    expect(() => buildTorchBundle({ ...small, schedule: 'pipedream', ranks: 2 }, 'x')).toThrow(/schedule = "pipedream": cannot be exported for PyTorch/);
  });

  it('refuses a bad configuration with the field, the value and the rule', () => {
    expect(() => buildTorchBundle({ ...small, microbatches: 5 }, 'x')).toThrow('microbatches = 5: must divide batchSize = 32 evenly');
  });

  it('stops on a wrong world size, naming both', async () => {
    const { dir } = bundle({ ...small, schedule: '1f1b', ranks: 2, steps: 1 });
    const r = await runTorchrun(dir, 1, [], 120_000);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain('world size = 1, but this run was exported for ranks = 2');
  }, 180_000);

  it('stops when a stage weight is missing from init.safetensors, naming the rank and the weight', async () => {
    const { dir } = bundle({ ...small, schedule: '1f1b', ranks: 2, steps: 1 });
    const init = readSafetensors(new Uint8Array(readFileSync(join(dir, 'init.safetensors'))));
    const { 'head.linear.W': _dropped, ...rest } = init.tensors;
    writeFileSync(join(dir, 'init.safetensors'), writeSafetensors(Object.fromEntries(Object.entries(rest).map(([k, t]) => [k, { data: t.data, shape: t.shape }]))));
    const r = await runTorchrun(dir, 2, [], 120_000);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain('rank 1: stage 1 weight head.linear.W');
    expect(r.output).toContain('did not load from init.safetensors: missing');
  }, 180_000);

  it('ends a run whose peer stops answering with a timeout naming the rank, the step and the column, never a hang', async () => {
    const { dir } = bundle({ ...small, schedule: 'gpipe', ranks: 2, steps: 1 });
    const r = await runTorchrun(dir, 2, ['--timeout', '5', '--test-stall-rank', '1'], 120_000);
    expect(r.code).not.toBe(0);
    expect(r.output).toMatch(/train\.py: rank 0: step 0 column \d+: (no grad of micro-batch \d+ for stage 0 from rank 1|act of micro-batch \d+ for stage 1 not taken by rank 1) within 5\.0 s/);
  }, 180_000);

  it('refuses a CSV that is not time-aligned, naming the action and the input it lacks', async () => {
    const cfg: RunConfig = { ...small, schedule: 'zb-h1', ranks: 2, steps: 1 };
    const { dir } = bundle(cfg);
    writeFileSync(join(dir, 'schedule.csv'), toCsv(generateSchedule('zb-h1', 2, cfg.microbatches), { align: false }));
    const r = await runTorchrun(dir, 2, ['--timeout', '20'], 120_000);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain('rank 1: step 0 column 1: 1F0 needs the act of micro-batch 0 for stage 1, which no earlier column of schedule.csv sends: the file is not time-aligned');
  }, 180_000);
});
