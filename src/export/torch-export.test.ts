/**
 * The exported PyTorch program, run for real under torchrun (CPU, gloo),
 * against the float64 CPU single-device loop (src/nn/train.ts): the same loss
 * at every step, the same final weights and the same held-out loss, for every
 * data set, model kind and activation the page offers and for the GPT, dense
 * and with a mixture of experts (Switch and GShard, with capacity drops and
 * dropless: also against the page's own run, aux loss and drops included,
 * ./testing/moe-page.ts). What it refuses and how it fails:
 * ./torch-export-failures.test.ts. Needs Debian's python3-torch
 * (scripts/install-deps.sh).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice } from '../nn/train.ts';
import { DATASETS } from '../data/datasets.ts';
import { HIDDEN_ACTIVATIONS } from '../nn/model-config.ts';
import { defaultRunConfig, toTrainConfig, withDataset, type RunConfig } from '../config/run-config.ts';
import { fromCsv, generateSchedule } from '../schedule/index.ts';
import { crossRankColumnViolations } from '../schedule/test-support.ts';
import { maxRelativeDiff, maxWeightDiff, readTrainedWeights, runTorchrunMany, withoutKeyBias, type TorchrunResult } from './testing/torchrun.ts';
import { moeChecks } from './testing/moe-page.ts';
import { writeTempBundle } from './testing/temp-bundle.ts';
import { mobyDickText } from '../data/moby-dick.ts';
import { corpusFromText } from '../data/text-corpus.ts';
import { registerCorpus } from '../data/text-registry.ts';

/** Your text: an excerpt of the example (Moby-Dick), loaded as the page loads a text. */
const mobyExcerpt = await corpusFromText('moby-dick-excerpt.txt', (await mobyDickText()).slice(0, 20_000));
registerCorpus(mobyExcerpt);

/** A small GPT (makemore's Transformer): 4 blocks cut 2 + 2, weight decay on, padded targets in every batch. */
const gpt: RunConfig = {
  ...withDataset(defaultRunConfig(), 'names'), model: 'gpt', layers: 3, heads: 2, width: 8, blockSize: 16,
  batchSize: 8, microbatches: 4, steps: 5, evalEvery: 0, lr: 0.01, weightDecay: 0.01, ranks: 2,
};

/** The MoE cases' experts and aux loss weight. */
const moe = { experts: 4, auxLossWeight: 0.1, steps: 3 } as const;

/** What varies beside the data set and the activation: the schedule (so I/W split, interleaving, ZB-V's two stages per rank and Hanayo's waves) and once the optimizer. */
type Variant = { label: string; change: Partial<RunConfig> };
const SCHEDULE_VARIANTS: Readonly<Record<string, Variant>> = {
  spiral: { label: 'zb-h1 (I and W split)', change: { schedule: 'zb-h1' } },
  moons: { label: '1f1b', change: { schedule: '1f1b' } },
  circles: { label: 'gpipe', change: { schedule: 'gpipe' } },
  xor: {
    label: 'interleaved-1f1b, v = 2, SGD with momentum and weight decay, cosine lr',
    change: { schedule: 'interleaved-1f1b', virtual: 2, optimizer: 'sgd', lr: 0.1, momentum: 0.9, weightDecay: 0.01, lrSchedule: 'cosine' },
  },
  'names/relu': { label: '1f1b', change: { schedule: '1f1b' } },
  'names/gelu': { label: 'zb-v, v = 2 (two stages on one rank)', change: { schedule: 'zb-v', virtual: 2 } },
  // Two waves zig-zagging over the 2 ranks: 8 stages (a block each), a stage's hop to the next on the same rank at each
  // turn; deeper than the page's 3 layers, so narrower (32) to keep the launch as cheap as the others.
  'names/tanh': { label: 'hanayo, 2 waves (v = 4, stages 0 3 4 7 on rank 0)', change: { schedule: 'hanayo', virtual: 4, layers: 7, hidden: 32 } },
};

/**
 * Every data set (so every model kind) and every activation the page offers, at the sizes choosing the
 * data set in the page gives (width, depth, context, embedding, batch, AdamW with its weight decay, cosine
 * lr), on 2 ranks for 3 steps; the 2-D sets share one model kind, so they take the activations in turn,
 * and the character MLP on names runs each one. Then the GPT.
 */
const CASES: { title: string; cfg: RunConfig }[] = [
  ...DATASETS.filter((d) => d !== 'text').flatMap((dataset, d) =>
    HIDDEN_ACTIVATIONS.filter((_, a) => dataset === 'names' || a === d % HIDDEN_ACTIVATIONS.length).map((activation) => {
      const page = withDataset(defaultRunConfig(), dataset);
      const v = SCHEDULE_VARIANTS[dataset === 'names' ? `names/${activation}` : dataset];
      const cfg: RunConfig = { ...page, activation, ranks: 2, steps: 3, evalEvery: 0, ...v.change };
      const sized = 'hidden' in v.change || 'layers' in v.change ? '' : 'page sizes: ';
      return { title: `${dataset} (${cfg.model}, ${sized}hidden ${cfg.hidden}, ${cfg.layers} layers, batch ${cfg.batchSize}), ${activation}, p = 2, ${v.label}`, cfg };
    }),
  ),
  { title: 'gpt, zb-h1, p = 2 (attention blocks, I and W split, boundary [mb, T, C])', cfg: { ...gpt, schedule: 'zb-h1' } },
  { title: 'gpt, 1f1b, p = 2', cfg: { ...gpt, schedule: '1f1b' } },
  { title: 'gpt, zb-h1, p = 2, selective recomputation (the attention core again in I, torch.utils.checkpoint)', cfg: { ...gpt, schedule: 'zb-h1', recomputeAttention: true } },
  { title: 'gpt, zb-h1, p = 2, full recomputation (each stage’s forward again in I, torch.utils.checkpoint)', cfg: { ...gpt, schedule: 'zb-h1', recompute: true } },
  // Mixture-of-experts GPTs (moe.py), 4 experts, α = 0.1, 3 steps: torchrun against the page's own run too (moeChecks;
  // DualPipe's in ./torch-export-dualpipe.test.ts, dp's in ./torch-export-dp.test.ts).
  { title: 'MoE GPT, Switch top-1, capacity factor 1 (drops), zb-h1, p = 2 (the router and experts split into I and W)', cfg: { ...gpt, ...moe, schedule: 'zb-h1', topK: 1, capacityFactor: 1 } },
  { title: 'MoE GPT, GShard top-2, capacity factor 1 (first and second choices dropped), experts every other block, 1f1b, p = 2, full recomputation', cfg: { ...gpt, ...moe, schedule: '1f1b', topK: 2, capacityFactor: 1, moeEvery: 2, recompute: true } },
  { title: 'MoE GPT, GShard top-2, dropless (capacity factor 0), interleaved-1f1b, v = 2, p = 2', cfg: { ...gpt, ...moe, schedule: 'interleaved-1f1b', virtual: 2, topK: 2, capacityFactor: 0 } },
  {
    title: 'your text: the GPT on the first 20,000 characters of Moby-Dick, 1f1b, p = 4 (blocks of 17 characters, the excerpt’s own vocabulary)',
    cfg: { ...withDataset(defaultRunConfig(), 'text', mobyExcerpt.hash), layers: 3, heads: 2, width: 8, blockSize: 16, batchSize: 8, microbatches: 4, steps: 4, evalEvery: 0, lr: 0.01, weightDecay: 0.01, ranks: 4, schedule: '1f1b' },
  },
];

describe('the exported PyTorch program equals the float64 single-device loop', () => {
  // Every case's bundle, run in one torchrun launch per world size (its processes import torch once, not per case).
  let bundles: ReturnType<typeof writeTempBundle>[] = [];
  let runs: TorchrunResult[] = [];
  beforeAll(async () => {
    bundles = CASES.map(({ cfg }) => writeTempBundle(cfg));
    runs = await runTorchrunMany(CASES.map(({ cfg }, i) => ({ dir: bundles[i].dir, world: cfg.ranks })));
  }, 900_000);

  CASES.forEach(({ title, cfg }, i) => {
    it(title, async () => {
      const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
      const { dir, files } = bundles[i];
      const r = runs[i];
      expect(r.code, r.output).toBe(0);
      expect(r.losses.length, r.output).toBe(cfg.steps);
      const lossDiff = maxRelativeDiff(r.losses, ref.losses);
      const comparable = (w: Readonly<Record<string, ArrayLike<number>>>) => (cfg.model === 'gpt' ? withoutKeyBias(w, cfg.width ?? 0) : w);
      const weightDiff = maxWeightDiff(comparable(readTrainedWeights(dir)), comparable(ref.params));
      console.log(`${title}: max relative loss difference ${lossDiff.toExponential(2)}, weights ${weightDiff.toExponential(2)}`);
      expect(lossDiff).toBeLessThan(1e-4);
      expect(weightDiff).toBeLessThan(1e-4);
      // The held-out loss train.py prints is the float64 reference's, to float32 rounding.
      expect(Math.abs(r.heldout - ref.final.valLoss) / ref.final.valLoss).toBeLessThan(1e-4);
      if (cfg.experts) await moeChecks(title, cfg, r, dir, ref);
      if (cfg.dataset === 'text') {
        // The bundle keeps the text it trained on, and its vocabulary.
        expect(new TextDecoder().decode(files.find((f) => f.path === 'text.txt')!.data as Uint8Array)).toBe(mobyExcerpt.text);
        expect(JSON.parse(files.find((f) => f.path === 'vocab.json')!.data as string).symbols).toEqual(mobyExcerpt.symbols);
      }
      // The bundle's CSV is the time-aligned form, and reads back as the run's schedule.
      const csv = files.find((f) => f.path === 'schedule.csv')!.data as string;
      expect(crossRankColumnViolations(csv)).toEqual([]);
      expect(fromCsv(csv).order).toEqual(generateSchedule(cfg.schedule as never, cfg.ranks, cfg.microbatches, cfg.virtual).order);
    }, 120_000);
  });
});

