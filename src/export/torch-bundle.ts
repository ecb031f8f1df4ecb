/**
 * A run, exported as a PyTorch program and the files it reads: train.py and its
 * modules (the program, src/export/torch/; ./torch-program.ts), config.json (the
 * run configuration and what train.py needs of it: the mesh (dp replicas ×
 * ranks × tp, tp innermost, replica-major), the split of every parameter tensor
 * parallelism splits (src/nn/tp-shard.ts), the model spec, the stage cut, the stage-to-rank map,
 * the learning rate of every step), schedule.csv (PyTorch's time-aligned CSV,
 * one row per pipeline rank, run by every replica), init.safetensors (the
 * initial weights, the page's names), batches.safetensors (the exact batch of
 * every step; replica d trains its rows), heldout.safetensors (the held-out
 * split) and README.md; a run on "your text" also carries the text (text.txt,
 * UTF-8) and its vocabulary (vocab.json, symbol by index), so the bundle keeps
 * what it was trained on. `torchrun --nproc_per_node=dp×tp×P train.py` replays the run.
 *
 * The program's text is a parameter: the page imports it with `?raw`, the CLI
 * reads it from disk (readTorchProgram in ./torch-program-disk.ts).
 */
import { BatchSampler, splitMicrobatches } from '../data/batches.ts';
import { createDataset } from '../data/datasets.ts';
import { labelCols, targetCount, type Examples } from '../data/examples.ts';
import { CpuBackend, CpuTensor } from '../nn/cpu-backend.ts';
import { ADAMW_DEFAULTS } from '../nn/optimizer.ts';
import { blockInCols, type BlockSpec } from '../nn/model-spec.ts';
import { StageChain } from '../nn/stage-chain.ts';
import { lrAt } from '../nn/train-config.ts';
import { planRun } from '../runtime/executor/index.ts';
import { toTrainConfig, type RunConfig } from '../config/run-config.ts';
import { toCsv } from '../schedule/csv.ts';
import { ConfigError } from '../util/errors.ts';
import { writeSafetensors, type NamedTensor } from '../util/safetensors.ts';
import { bundleReadme } from './bundle-readme.ts';
import type { TextCorpus } from '../data/text-corpus.ts';
import { programFiles, type BundleFile, type TorchProgram } from './torch-program.ts';
import { profileModelOf } from '../plan/profile-model.ts';
import type { ProfileModel } from '../plan/profile.ts';
import { workerCount, meshOfRun } from '../schedule/mesh.ts';
import { tpParams } from '../nn/tp-params.ts';
import type { TpParam } from '../nn/tp-shard.ts';
import type { UpdatePolicyName } from '../schedule/registry.ts';

export type { BundleFile } from './torch-program.ts';

/** Values of input and label data the bundle may hold (steps × batchSize × (input columns + 1)). */
export const MAX_BUNDLE_DATA_VALUES = 64 * 1024 * 1024;

/** What train.py reads from config.json. */
export interface TorchBundleConfig {
  format: 'pipelab-torch-bundle/1';
  /** The run configuration as the page, the URL and window.pipelab take it. */
  run: RunConfig;
  /** Data-parallel replicas of the pipeline. */
  dp: number;
  /** Pipeline ranks per replica (schedule.csv's rows). */
  ranks: number;
  /** Tensor-parallel processes per pipeline rank. */
  tp: number;
  /**
   * The run's expert parallelism (run.ep; 1 when absent): ep processes per pipeline rank of each replica, each on its
   * slice of every micro-batch's sequences and holding experts / ep of its stages' experts (moe.py: the router's
   * probabilities all-gathered over the ep group, the rows exchanged by all_to_all_single; bundle.py
   * check_expert_parallel says what else it needs).
   */
  ep: number;
  /** Processes: dp × ranks × ep × tp; process g = ((replica · ranks + rank) · ep + e) · tp + j (src/schedule/mesh.ts workerOf). */
  world: number;
  /** Every parameter tensor parallelism splits, with its rule and whole shape (tpParams in src/nn/tp-params.ts); the rest are whole on every tp process. Empty with tp = 1. */
  tpParams: Record<string, TpParam>;
  /** Stages: ranks × virtual × copies; with model copies (DualPipe) copy c's stage k is stage c·stages/copies + k (src/schedule/copies.ts). */
  stages: number;
  /** Model copies of the schedule: 2 for DualPipe (each stage's gradients summed over them at the flush), else 1. */
  copies: number;
  /** Micro-batches of one step. */
  microbatches: number;
  /**
   * How the weights are updated (the schedule's registry entry): 'flush' after every step; PipeDream's
   * 'stash-and-update-after-backward' and PipeDream-2BW's 'double-buffered' run the whole run as one stream
   * (stream.py), with no flush.
   */
  update: UpdatePolicyName;
  /** Micro-batches schedule.csv holds: one step's (microbatches) under a flush, every step's (steps × microbatches) for a stream, numbered across steps. */
  windowMicrobatches: number;
  /** What a micro-batch's loss is divided by: the targets of its whole step ('step') or its own ('microbatch': PipeDream, every micro-batch its own update). */
  lossOver: 'step' | 'microbatch';
  batchSize: number;
  steps: number;
  /** Rows of one micro-batch: batchSize / (dp × microbatches). */
  rowsPerMicrobatch: number;
  /** Each micro-batch's summed loss is scaled by this (1 / batchSize): the step's losses add up to the batch mean. */
  lossScale: number;
  /**
   * Per step, 1 / the targets of the whole batch (every replica's rows) that take a loss (labels ≠ −1), as the
   * page scales: the GPT's padded positions take none, so a step's micro-batch losses, over every replica, add up
   * to the batch's mean, and the replicas' summed gradients are the one-device gradient.
   */
  lossScalePerStep: number[];
  /** lossOver 'microbatch' only: per step, per micro-batch, 1 / its own targets that take a loss (else absent). */
  lossScalePerMicrobatch?: number[][];
  schedule: string;
  stageToRank: number[];
  /** Half-open block ranges [start, end), one per stage. */
  stageBlocks: [number, number][];
  /** Columns each stage takes. */
  stageInCols: number[];
  /** The shape of one row of each stage's input (the GPT's blocks take [blockSize, width] per sequence). */
  stageInShape: number[][];
  /** The same per block (train.py --profile times blocks one at a time and sends each boundary's activation). */
  blockInShape: number[][];
  /** The model, as a profile names it (train.py --profile writes it into profile.json). */
  profileModel: ProfileModel;
  /** Each stage's parameters, [name, shape], in the order train.py gathers them. */
  stageParams: [string, number[]][][];
  model: unknown;
  optimizer: { name: string; lr: number; momentum: number; weightDecay: number; beta1: number; beta2: number; eps: number };
  lrPerStep: number[];
}

function concatRows(parts: readonly Examples[]): { inputs: Float32Array | Int32Array; labels: Int32Array } {
  const n = parts.reduce((s, e) => s + e.n, 0);
  const cols = parts[0].inputCols;
  const inputs = parts[0].inputDType === 'i32' ? new Int32Array(n * cols) : new Float32Array(n * cols);
  const lc = labelCols(parts[0]);
  const labels = new Int32Array(n * lc);
  let row = 0;
  for (const e of parts) {
    inputs.set(e.inputs.subarray(0, e.n * cols), row * cols);
    labels.set(e.labels.subarray(0, e.n * lc), row * lc);
    row += e.n;
  }
  return { inputs, labels };
}

/** Labels per row beyond the first axis: none for one label a row, [blockSize] for the GPT's per-position targets. */
function labelShape(ex: Examples): number[] {
  return ex.labelCols === undefined ? [] : [ex.labelCols];
}

/** One row of a block's input: a sequence of [blockSize, width] for the GPT's blocks and head, else its columns. */
function blockInShape(b: BlockSpec): number[] {
  const first = b.layers[0];
  return first.kind === 'gpt-block' || first.kind === 'gpt-moe-block' || first.kind === 'gpt-head' ? [first.blockSize, first.dim] : [blockInCols(b)];
}

function examplesFile(ex: Examples, leading: number[]): Uint8Array {
  const { inputs, labels } = concatRows([ex]);
  return writeSafetensors({
    inputs: { data: inputs, shape: [...leading, ex.inputCols] },
    labels: { data: labels, shape: [...leading, ...labelShape(ex)] },
  });
}

/** Builds every file of the bundle. Throws a ConfigError for a configuration it cannot export. */
export function buildTorchBundle(config: RunConfig, program: TorchProgram): BundleFile[] {
  const { fault: _fault, ...run } = config;
  const plan = planRun(run);
  const { spec, schedule, stageBlocks, windows } = plan;
  const dataCols = spec.input.cols + 1;
  if (run.steps * run.batchSize * dataCols > MAX_BUNDLE_DATA_VALUES) {
    throw new ConfigError(
      'steps',
      run.steps,
      `the bundle holds every step's batch: steps × batchSize × ${dataCols} values must be at most ${MAX_BUNDLE_DATA_VALUES} (export fewer steps)`,
    );
  }

  const be = new CpuBackend();
  // Model copies (DualPipe) repeat the cut (run-plan.ts): the weights are the model's, built once from copy 0's stages.
  const copies = schedule.copies ?? 1;
  if ((run.ep ?? 1) > 1 && copies > 1) {
    // train.py's expert parallelism runs one model copy (bundle.py check_expert_parallel); the tab runs DualPipe with ep.
    throw new ConfigError('schedule', run.schedule, `with ep = ${run.ep} the export runs schedules of one model copy; ${run.schedule} holds ${copies} (export it with ep = 1, or another schedule)`);
  }
  const cut = stageBlocks.slice(0, stageBlocks.length / copies);
  const chain = new StageChain(be, spec, cut.length, run.seed, { ranges: cut });
  const init: Record<string, NamedTensor> = {};
  const modelStageParams = chain.stages.map((st) =>
    st.params.map((p): [string, number[]] => {
      if (!(p.value instanceof CpuTensor)) throw new Error(`export: ${p.name} is not on the CPU reference`);
      init[p.name] = { data: Float32Array.from(p.value.data), shape: [...p.value.shape] };
      return [p.name, [...p.value.shape]];
    }),
  );
  chain.dispose();
  const stageParams = Array.from({ length: copies }, () => modelStageParams).flat();

  const data = createDataset(toTrainConfig(run));
  const sampler = new BatchSampler(data.train, run.batchSize, run.seed);
  const stepBatches = Array.from({ length: run.steps }, (_, step) => sampler.batch(step));
  const batches = concatRows(stepBatches);

  const cfg: TorchBundleConfig = {
    format: 'pipelab-torch-bundle/1',
    run,
    dp: run.dp,
    ranks: run.ranks,
    tp: run.tp,
    ep: run.ep ?? 1,
    world: workerCount(meshOfRun(run)),
    tpParams: run.tp > 1 ? Object.fromEntries(tpParams(spec)) : {},
    stages: stageBlocks.length,
    copies,
    microbatches: run.microbatches,
    update: plan.kind.update,
    windowMicrobatches: windows.microbatches(run.microbatches, run.steps),
    lossOver: windows.lossOver,
    batchSize: run.batchSize,
    rowsPerMicrobatch: run.batchSize / (run.dp * run.microbatches),
    steps: run.steps,
    lossScale: 1 / run.batchSize,
    lossScalePerStep: stepBatches.map((b) => 1 / targetCount(b)),
    ...(windows.lossOver === 'microbatch' ? { lossScalePerMicrobatch: stepBatches.map((b) => splitMicrobatches(b, run.microbatches).map((mb) => 1 / targetCount(mb))) } : {}),
    schedule: run.schedule,
    stageToRank: [...schedule.stageToRank],
    stageBlocks: stageBlocks.map(([a, b]): [number, number] => [a, b]),
    stageInCols: stageBlocks.map(([a]) => blockInCols(spec.blocks[a])),
    stageInShape: stageBlocks.map(([a]) => blockInShape(spec.blocks[a])),
    blockInShape: spec.blocks.map(blockInShape),
    profileModel: profileModelOf(spec),
    stageParams,
    model: spec,
    optimizer: { name: run.optimizer, lr: run.lr, momentum: run.momentum, weightDecay: run.weightDecay, ...ADAMW_DEFAULTS },
    lrPerStep: Array.from({ length: run.steps }, (_, step) => lrAt(run, step)),
  };
  const meta = { format: 'pt', producer: 'PipeLab', config: JSON.stringify(run) };
  return [
    ...programFiles(program),
    { path: 'config.json', data: JSON.stringify(cfg, null, 1) + '\n' },
    { path: 'schedule.csv', data: toCsv(schedule) },
    { path: 'init.safetensors', data: writeSafetensors(init, meta) },
    {
      path: 'batches.safetensors',
      data: writeSafetensors({
        inputs: { data: batches.inputs, shape: [run.steps, run.batchSize, spec.input.cols] },
        labels: { data: batches.labels, shape: [run.steps, run.batchSize, ...labelShape(data.train)] },
      }),
    },
    { path: 'heldout.safetensors', data: examplesFile(data.val, [data.val.n]) },
    ...(plan.corpus ? textFiles(plan.corpus) : []),
    { path: 'README.md', data: bundleReadme(run, plan.corpus) },
  ];
}

/** A text run's text and vocabulary (the batches hold its indices). */
function textFiles(c: TextCorpus): BundleFile[] {
  const vocab = { name: c.name, hash: c.hash, symbols: c.symbols, unknown: c.unknownChars > 0 ? c.symbols.length - 1 : null };
  return [
    { path: 'text.txt', data: new TextEncoder().encode(c.text) },
    { path: 'vocab.json', data: JSON.stringify(vocab, null, 1) + '\n' },
  ];
}
