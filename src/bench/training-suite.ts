/**
 * The training suite: samples per second of one training step of a model held
 * as a single stage on one device, PipeLab's (StageChain + optimizer on the
 * GpuBackend, timing issueTrainStep: the step src/nn/train.ts runs) beside
 * TensorFlow.js training the same network on its WebGPU backend, in this page,
 * on this adapter, and the loss each reaches.
 *
 * Same network (layer sizes, activation, LayerNorm, embedding, mean softmax
 * cross-entropy), same initial weights (ours, copied into tf.variables), same
 * batches (our seeded BatchSampler; the same rows go to both), Adam with the
 * same lr, β and ε. TF.js has no AdamW: our weightDecay is set to 0, so our
 * AdamW is Adam. The lr is held constant (no cosine schedule) for both.
 *
 * Steps alternate between the two (ours, TF.js, TF.js, ours, ...), each synced
 * before the next starts (ours: the loss is read back; TF.js: await
 * loss.data()), so a busy machine slows both alike. The first `warmup` steps
 * (pipeline compiles, pools) are not timed.
 */
import { BatchSampler } from '../data/batches.ts';
import { createDataset } from '../data/datasets.ts';
import type { Examples } from '../data/examples.ts';
import { GpuBackend } from '../gpu/gpu-backend.ts';
import { loadTfjsWebGpu } from './tfjs-matmul-bench.ts';
import { buildModelSpec, GPT_DEFAULTS } from '../nn/model-config.ts';
import { createOptimizer } from '../nn/optimizer.ts';
import { StageChain } from '../nn/stage-chain.ts';
import { issueTrainStep } from '../nn/train.ts';
import { defaultTrainConfig, namesModelSwitch, type TrainConfig } from '../nn/train-config.ts';
import { buildTfjsModel, tfjsBatch } from './tfjs-models.ts';
import { buildTfjsGpt, isGptSpec } from './tfjs-gpt.ts';
import { profileOurStep, profileTfjsStep, type StepProfile } from './step-profile.ts';
import { addCounts, diffCounts, gpuCounts, installGpuCounters, scaleCounts, zeroCounts, type GpuCounts } from './gpu-counters.ts';

export interface TrainingBenchCase {
  dataset: 'spiral' | 'names';
  /** 'gpt': the page's default GPT on the names as sequences (namesModelSwitch), instead of the dataset's default model. */
  model?: 'gpt';
  /** Untimed steps first. */
  warmup: number;
  /** Timed steps. */
  steps: number;
  /** Our micro-batches per step (gradient accumulation); default 1: one pass over the whole batch, as TF.js does. */
  microbatches?: number;
  /** After the timed steps, profile one more step of each side per op (see step-profile.ts). */
  profile?: boolean;
}

export interface SideFigures {
  samplesPerSecond: number;
  medianStepMs: number;
  meanStepMs: number;
  /** Per timed step: milliseconds from the first call until the step's work is submitted (CPU: encoding). */
  medianIssueMs: number;
  /** The loss of the last step (the mean over its batch, before that step's update). */
  finalLoss: number;
  /** Loss per step, warm-up included. */
  losses: number[];
  /** WebGPU calls per timed step (dispatches, submits, writeBuffer calls and bytes, bind groups, buffers created, maps). */
  perStep: GpuCounts;
  /** Median milliseconds of a bare round trip (one small op on 1024 floats, then read back) with nothing else queued: the fixed cost of syncing a step. */
  syncMs: number;
}

export interface TrainingBenchRow {
  model: string;
  dataset: string;
  batchSize: number;
  microbatches: number;
  hidden: number;
  layers: number;
  activation: string;
  params: number;
  lr: number;
  optimizer: string;
  warmup: number;
  steps: number;
  /** Our matmul variant (the app's default: no autotune). */
  variant: string;
  ours: SideFigures;
  tfjs: SideFigures;
  /** ours.samplesPerSecond / tfjs.samplesPerSecond. */
  ratio: number;
  /** max over steps of |our loss − TF.js loss|. */
  maxLossDiff: number;
  /** max over steps of |our loss − TF.js loss| / |TF.js loss|. */
  maxLossRelDiff: number;
  /** Token positions per sample (the GPT's block size; 1 for the MLPs): tokens/s = samples/s × this. */
  tokensPerSample: number;
  /** The GPT's width and heads (absent for the MLPs). */
  gpt?: { width: number; heads: number };
  /** With `profile`: one more step of each side, timed per op. */
  profile?: { ours: StepProfile; tfjs: StepProfile };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
}

function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

interface Side {
  ms: number[];
  issue: number[];
  losses: number[];
  counts: GpuCounts;
  sync: number[];
}

function figures(batchSize: number, side: Side): SideFigures {
  const { ms: stepMs, issue: issueMs, losses } = side;
  const med = median(stepMs);
  return {
    perStep: scaleCounts(side.counts, stepMs.length),
    syncMs: median(side.sync),
    samplesPerSecond: (1000 * batchSize) / med,
    medianStepMs: med,
    meanStepMs: mean(stepMs),
    medianIssueMs: median(issueMs),
    finalLoss: losses[losses.length - 1],
    losses,
  };
}

/** The suite's configuration: the dataset's default model and batch, single stage, constant lr, no weight decay. */
export function trainingBenchConfig(c: TrainingBenchCase): TrainConfig {
  const d = c.model === 'gpt' ? { ...defaultTrainConfig('names'), ...namesModelSwitch('gpt', GPT_DEFAULTS.layers) } : defaultTrainConfig(c.dataset);
  return { ...d, stages: 1, microbatches: c.microbatches ?? 1, weightDecay: 0, lrSchedule: 'constant', steps: c.warmup + c.steps, evalEvery: 0 };
}

export async function benchTraining(c: TrainingBenchCase): Promise<TrainingBenchRow> {
  const cfg = trainingBenchConfig(c);
  const total = c.warmup + c.steps;
  const data = createDataset(cfg);
  const spec = buildModelSpec(cfg);
  const sampler = new BatchSampler(data.train, cfg.batchSize, cfg.seed);
  const batches: Examples[] = Array.from({ length: total + 1 }, (_, s) => sampler.batch(s));

  const tf = await loadTfjsWebGpu();
  const be = await GpuBackend.create();
  const model = new StageChain(be, spec, 1, cfg.seed);
  const beta1 = 0.9;
  const beta2 = 0.999;
  const eps = 1e-8;
  const opt = createOptimizer(be, model.params, { ...cfg, beta1, beta2, eps });
  const init = await model.readParams();
  const tfModel = isGptSpec(spec) ? buildTfjsGpt(tf, spec, init) : buildTfjsModel(tf, spec, init);
  const tfOpt = tf.train.adam(cfg.lr, beta1, beta2, eps);

  installGpuCounters();
  const ours: Side = { ms: [], issue: [], losses: [], counts: zeroCounts(), sync: [] };
  const peer: Side = { ms: [], issue: [], losses: [], counts: zeroCounts(), sync: [] };

  const ourStep = async (s: number, record = true): Promise<void> => {
    const c0 = gpuCounts();
    const t0 = performance.now();
    // The app's own training step (src/nn/train.ts).
    const lossT = await issueTrainStep(be, model, opt, cfg, s, batches[s]);
    const t1 = performance.now();
    const loss = (await be.read(lossT))[0];
    be.dispose(lossT);
    const t2 = performance.now();
    const c1 = gpuCounts();
    if (!record) return;
    ours.losses.push(loss);
    if (s >= c.warmup) {
      ours.ms.push(t2 - t0);
      ours.issue.push(t1 - t0);
      addCounts(ours.counts, diffCounts(c0, c1));
    }
  };

  const tfStep = async (s: number, record = true): Promise<void> => {
    const b = batches[s];
    const c0 = gpuCounts();
    const t0 = performance.now();
    const tb = tfjsBatch(tf, b.inputs, b.n, b.inputCols, b.labels, data.classes);
    const cost = tfOpt.minimize(() => tfModel.loss(tb) as import('@tensorflow/tfjs').Scalar, true, Object.values(tfModel.vars));
    const t1 = performance.now();
    const loss = (await cost!.data())[0];
    const t2 = performance.now();
    const c1 = gpuCounts();
    cost!.dispose();
    tb.x.dispose();
    tb.y.dispose();
    if (!record) return;
    peer.losses.push(loss);
    if (s >= c.warmup) {
      peer.ms.push(t2 - t0);
      peer.issue.push(t1 - t0);
      addCounts(peer.counts, diffCounts(c0, c1));
    }
  };

  // The fixed cost of one sync: one small op (1024 elements: above TF.js's CPU hand-off size) with nothing else queued, read back.
  const one = be.zeros([1024]);
  const tfOne = tf.zeros([1024]);
  const syncRounds = async (): Promise<void> => {
    for (let i = 0; i < 5; i++) {
      let t0 = performance.now();
      be.scale(one, 1);
      await be.read(one);
      ours.sync.push(performance.now() - t0);
      t0 = performance.now();
      const t = tf.mul(tfOne, 1);
      await t.data();
      t.dispose();
      peer.sync.push(performance.now() - t0);
    }
  };

  let profile: TrainingBenchRow['profile'];
  try {
    await syncRounds();
    for (let s = 0; s < total; s++) {
      if (s % 2 === 0) {
        await ourStep(s);
        await tfStep(s);
      } else {
        await tfStep(s);
        await ourStep(s);
      }
    }
    if (c.profile) {
      profile = {
        ours: await profileOurStep(be, () => ourStep(total, false)),
        tfjs: await profileTfjsStep(tf, () => tfStep(total, false)),
      };
    }
  } finally {
    be.dispose(one);
    tfOne.dispose();
    opt.dispose();
    model.dispose();
    be.destroy();
    tfModel.dispose();
    tfOpt.dispose();
  }
  const o = figures(cfg.batchSize, ours);
  const p = figures(cfg.batchSize, peer);
  const params = Object.values(init).reduce((a, v) => a + v.length, 0);
  return {
    model: spec.name,
    dataset: cfg.dataset,
    batchSize: cfg.batchSize,
    microbatches: cfg.microbatches,
    hidden: cfg.hidden,
    layers: cfg.layers,
    activation: cfg.activation,
    params,
    lr: cfg.lr,
    optimizer: `adam (β1 ${beta1}, β2 ${beta2}, ε ${eps}; ours: adamw, weightDecay 0)`,
    warmup: c.warmup,
    steps: c.steps,
    variant: be.matmulChoice().NN,
    ours: o,
    tfjs: p,
    ratio: o.samplesPerSecond / p.samplesPerSecond,
    maxLossDiff: Math.max(...ours.losses.map((l, i) => Math.abs(l - peer.losses[i]))),
    maxLossRelDiff: Math.max(...ours.losses.map((l, i) => Math.abs(l - peer.losses[i]) / Math.abs(peer.losses[i]))),
    tokensPerSample: isGptSpec(spec) ? data.train.inputCols : 1,
    gpt: isGptSpec(spec) ? { width: cfg.width as number, heads: cfg.heads as number } : undefined,
    profile,
  };
}
