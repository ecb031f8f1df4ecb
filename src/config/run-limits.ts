/**
 * Limits on the work a run may ask for, checked from cheap estimates before
 * any worker starts (and, for the adapter's own buffer limits, again on the
 * worker at init). Each refusal names the field, its value and the rule.
 *
 * Estimates (bytes are float32):
 *  - actions per step: dp · stages · m · (2, or 3 when the backward is split); a
 *    PipeDream run is one stream of steps · m micro-batches: ranks · steps · m · 2;
 *  - the largest GPU buffer of a stage: a layer's parameters, or one
 *    micro-batch's activations (rows = batchSize / (dp · m) · widest layer width);
 *  - memory per worker: for each stage it holds, weights, gradients and optimizer
 *    state (of its share of the weights with tp: tp-params.ts's split ones divided by tp; AdamW 2, SGD 1 per
 *    weight, divided by dp under ZeRO-1; PipeDream
 *    stashes up to `ranks` weight versions, PipeDream-2BW one older version), plus the activations of up to m
 *    micro-batches in flight at the peak of the run's own order (rankMemory: peakMemory over it; 1F1B holds at
 *    most p, GPipe all m): what each keeps (everything; with `recompute` the stage's input alone; with
 *    `recomputeAttention` all but the GPT blocks' attention probabilities) and, live again while one
 *    micro-batch's backward recomputes, the rest of one micro-batch's (a GPT block's per tp worker:
 *    layerActivationsPerRow), and one backward's working set beside the stash (the gradients it keeps for W, not its saved
 *    inputs again: StageMemory.working); all workers: dp · tp times one pipeline's workers';
 *  - work per step: 3 · forward FLOPs (backward about twice forward) · batchSize.
 */
import { ConfigError } from '../util/errors.ts';
import { buildModelSpec } from '../nn/model-config.ts';
import { blockCosts, blockOutCols, layerActivationsPerRow, layerBackwardGradsPerRow, layerBackwardScratchPerRow, layerFlopsPerRow, layerInCols, layerKeptAfterInputPerMicrobatch, layerKeptAfterInputPerRow, layerLargestActivationPerRow, layerParamCount, rowsPerExample, type ModelSpec } from '../nn/model-spec.ts';
import { partitionBlocks, type BlockRange } from '../nn/partition.ts';
import { tpParams } from '../nn/tp-params.ts';
import type { TrainConfig } from '../nn/train-config.ts';
import { rangesOfCut, validateCut } from './explicit-cut.ts';
import { generateWindow, runsAsStream, scheduleKind, UPDATE_WINDOWS, type RunScheduleName } from '../schedule/registry.ts';
import { peakMemory, stagePeakBytes } from '../schedule/peak-memory.ts';
import { tokenRowSplit } from '../schedule/mesh.ts';
import type { Schedule } from '../schedule/types.ts';

const MiB = 1024 * 1024;

export const RUN_LIMITS = {
  microbatches: 1024,
  /** Actions every rank runs in one synchronous step, all ranks together. */
  actionsPerStep: 32_768,
  /** A stream (PipeDream: one window, no flush): its actions over the whole run. */
  pipedreamActions: 65_536,
  /** WebGPU's default maxStorageBufferBindingSize, which every adapter offers. */
  bufferBytes: 128 * MiB,
  rankBytes: 1024 * MiB,
  /** All ranks share this machine's memory. */
  totalBytes: 2048 * MiB,
  /** Forward + backward floating-point operations per step. */
  flopsPerStep: 5e10,
} as const;

/** What the limits read: a validated run configuration (the type lives in run-config.ts, which calls this). */
export interface LimitInput extends Omit<TrainConfig, 'stages'> {
  ranks: number;
  virtual: number;
  schedule: RunScheduleName;
  /** 'blocks': equal block counts; 'cut': the explicit `cut`; otherwise balanced FLOPs. */
  partition?: 'flops' | 'blocks' | 'cut';
  /** Blocks per stage when partition = 'cut' (validated by explicit-cut.ts). */
  cut?: readonly number[];
  /** Data-parallel replicas (default 1) and ZeRO stage (default 0). */
  dp?: number;
  zero?: number;
  /** Tensor-parallel workers per stage (default 1). */
  tp?: number;
  /** Expert-parallel workers per stage (default 1): counted in the machine's total. */
  ep?: number;
  /** Sequence parallelism over them (GPT): the LayerNorms', residuals' and stage inputs' rows split t ways. */
  sequenceParallel?: boolean;
  /** `auto`'s cap on the micro-batches a rank holds at once (0 or absent: 1F1B's p). */
  memCap?: number;
}

/** Rows of one micro-batch: each replica's batchSize / dp rows, cut into m micro-batches. */
function microbatchRows(cfg: LimitInput): number {
  return cfg.batchSize / ((cfg.dp ?? 1) * cfg.microbatches);
}

export interface StageBuffer {
  stage: number;
  /** A parameter's global name, or `activations of layer NAME`. */
  buffer: string;
  bytes: number;
}

function fmtBytes(b: number): string {
  return b >= 1024 * MiB ? `${(b / (1024 * MiB)).toFixed(2)} GiB` : `${(b / MiB).toFixed(1)} MiB`;
}

/** The model of a run cut into its stages, as the run plan cuts it: the explicit cut, or by block count, or by FLOPs. */
export function stageCut(cfg: LimitInput): { spec: ModelSpec; stageBlocks: BlockRange[] } {
  const stages = cfg.ranks * cfg.virtual;
  const spec = buildModelSpec({ ...cfg });
  if (cfg.partition === 'cut') {
    validateCut({ ...cfg, partition: 'cut' });
    return { spec, stageBlocks: rangesOfCut(cfg.cut ?? []) };
  }
  const costs = cfg.partition === 'blocks' ? spec.blocks.map(() => 1) : blockCosts(spec);
  return { spec, stageBlocks: partitionBlocks(spec.blocks.length, costs, stages) };
}

/** The largest buffer of each stage (parameters or one micro-batch's activations). */
export function largestStageBuffers(cfg: LimitInput, cut = stageCut(cfg)): StageBuffer[] {
  const rows = microbatchRows(cfg);
  return cut.stageBlocks.map(([a, b], stage) => {
    let best: StageBuffer = { stage, buffer: 'none', bytes: 0 };
    for (const block of cut.spec.blocks.slice(a, b)) {
      for (const l of block.layers) {
        const params = 4 * layerParamCount(l);
        if (params > best.bytes) best = { stage, buffer: `${block.name}.${l.name} parameters`, bytes: params };
        const act = 4 * rows * layerLargestActivationPerRow(l);
        if (act > best.bytes) best = { stage, buffer: `${block.name}.${l.name} activations of one micro-batch (${rows} rows)`, bytes: act };
      }
    }
    return best;
  });
}

/** A stage's (or a rank's) estimated bytes on one worker. */
export interface MemoryEstimate {
  /** Weights, gradients, optimizer state and stashed weight versions. */
  weights: number;
  /** Activations: for a stage, every micro-batch in flight at once (GPipe's bound); for a rank, its schedule's peak. */
  activations: number;
  total: number;
}

/** A rank's estimate, its activations split: what its micro-batches in flight keep at the peak (stash), and one backward's recomputation and working set (transient). */
export interface RankMemory extends MemoryEstimate {
  stash: number;
  transient: number;
  /** What arrives around one backward (StageMemory.incoming), the most of its stages': communication staging, not in `transient`. */
  incoming: number;
  /** Parameters of each stage it holds (one tp worker's share). */
  stageParams: number[];
}

/**
 * A stage's estimate, with what one micro-batch keeps for its backward, what it keeps between a split backward's I
 * and W, and what its recomputation makes live again.
 */
export interface StageMemory extends MemoryEstimate {
  /** Parameters one of its workers holds (its tp share). */
  params: number;
  kept: number;
  afterInput: number;
  /** Communication staging around a backward: the gradient of one micro-batch's stage output it receives (the last stage: none) and the next forward's input arriving (the first stage: none). */
  incoming: number;
  transient: number;
  /**
   * One backward's working set beside the stash: the gradients its weight layers keep for their weight gradients
   * (layerBackwardGradsPerRow: what W reads less the saved inputs the stash already holds) and the largest gradient
   * one layer holds while it runs (layerBackwardScratchPerRow).
   */
  working: number;
}

/**
 * Estimated bytes of each stage on one of its workers (one of its tp workers): weights, gradients, optimizer state
 * and stashed versions; and the activations of up to m micro-batches in flight.
 */
export function stageMemory(cfg: LimitInput, cut = stageCut(cfg)): StageMemory[] {
  const rows = microbatchRows(cfg);
  const t = cfg.tp ?? 1;
  // Per block, the parameters tensor parallelism splits over a stage's t workers.
  const splitOfBlock = new Array<number>(cut.spec.blocks.length).fill(0);
  if (t > 1) for (const p of tpParams(cut.spec).values()) splitOfBlock[p.block ?? 0] += p.shape.reduce((a, x) => a * x, 1);
  const optimizerCopies = (cfg.optimizer === 'sgd' ? 1 : 2) / ((cfg.zero ?? 0) >= 1 ? (cfg.dp ?? 1) : 1);
  const copies = 2 + optimizerCopies + UPDATE_WINDOWS[scheduleKind(cfg.schedule).update].extraWeightVersions(cfg.ranks);
  // Activation rows an example becomes (the GPT: its tokens); a stage's input per example: the model's input, or those rows'.
  const tokens = rowsPerExample(cut.spec);
  // Sequence parallelism: a stage after the first takes its tp worker's share of the token rows.
  const rowSplit = tokenRowSplit(cfg);
  const inputPerRow = (a: number) => layerInCols(cut.spec.blocks[a].layers[0]) * (a === 0 ? 1 : tokens / rowSplit);
  return cut.stageBlocks.map(([a, b]) => {
    let params = 0;
    let widths = 0;
    let afterInput = 0;
    let afterInputFixed = 0;
    let grads = 0;
    let scratch = 0;
    let probs = 0;
    const blocks = cut.spec.blocks.slice(a, b);
    for (const block of blocks) {
      for (const l of block.layers) {
        params += layerParamCount(l);
        widths += layerActivationsPerRow(l, t, tokens, rowSplit);
        afterInput += layerKeptAfterInputPerRow(l, t, rowSplit);
        afterInputFixed += layerKeptAfterInputPerMicrobatch(l, rowSplit);
        grads += layerBackwardGradsPerRow(l, t, rowSplit);
        scratch = Math.max(scratch, layerBackwardScratchPerRow(l, t));
        if (l.kind === 'gpt-block') probs += (l.heads * l.blockSize * l.blockSize) / t;
      }
    }
    const split = splitOfBlock.slice(a, b).reduce((x, y) => x + y, 0);
    params += split / t - split;
    // Per row, what a micro-batch in flight keeps for its backward, and what its recomputation makes live again.
    // Full recomputation keeps the stage's input, and on the last stage the targets (one a token).
    const labels = b === cut.spec.blocks.length ? tokens : 0;
    const kept = cfg.recompute ? (blocks.length > 0 ? inputPerRow(a) + labels : 0) : cfg.recomputeAttention ? widths - probs : widths;
    const weights = 4 * params * copies;
    const activations = 4 * rows * (cfg.microbatches * kept + (widths - kept));
    // Received while a backward runs: the gradient of its output (not on the last stage, whose loss makes it) and the
    // next forward's input (not on the first, which reads the batch): staged uploads.
    const incoming = (b === cut.spec.blocks.length ? 0 : 4 * rows * blockOutCols(cut.spec.blocks[b - 1]) * (tokens / rowSplit)) + (a === 0 ? 0 : 4 * rows * inputPerRow(a));
    return { weights, activations, total: weights + activations, params, kept: 4 * rows * kept, afterInput: 4 * (rows * afterInput + afterInputFixed), incoming, transient: 4 * rows * (widths - kept), working: 4 * (rows * (grads + scratch) + afterInputFixed) };
  });
}

/**
 * Estimated bytes of each rank of one pipeline (on one of its tp workers): the weights of every stage it holds
 * (DualPipe: both copies'), and the activations at the peak of the run's own order (peakMemory: what each
 * micro-batch in flight keeps, so 1F1B's ranks hold at most p, GPipe's all m) plus one backward's recomputation.
 * `auto` is planned from the model (too slow to plan on every keystroke), one stage a rank, and no order it picks
 * holds more than its cap of micro-batches on a rank (memCap; 0: 1F1B's p): the bound is that many, each what it keeps
 * until its I, or what its W reads after it, whichever is more.
 */
export function rankMemory(cfg: LimitInput, cut = stageCut(cfg), swapped: ReadonlySet<number> = new Set()): RankMemory[] {
  const per = stageMemory(cfg, cut);
  const kind = scheduleKind(cfg.schedule);
  if (kind.fromStageCosts) {
    const held = Math.min(cfg.microbatches, cfg.memCap || cfg.ranks);
    return per.map(({ weights, kept, afterInput, incoming, transient: remade, working, params }, s) => {
      // Swapped (memory-budget.ts): two micro-batches' at most stay on the device, the one just made and the one brought back.
      const stash = Math.min(held, swapped.has(s) ? 2 : held) * Math.max(kept, afterInput);
      const transient = remade + working;
      return { weights, activations: stash + transient, total: weights + stash + transient, stash, transient, incoming, stageParams: [params] };
    });
  }
  const { schedule, k, held, afterInput } = stashOrder(cfg, per, swapped);
  const peaks = peakMemory(schedule, held, afterInput);
  return Array.from({ length: cfg.ranks }, (_, r) => {
    const mine = schedule.stageToRank.flatMap((rank, s) => (rank === r ? [per[s % k]] : []));
    const weights = mine.reduce((x, m) => x + m.weights, 0);
    const transient = Math.max(0, ...mine.map((m) => m.transient + m.working));
    // A swapped stage's stashes leave the device between its forward and its backward: two at most are there at once.
    const away = schedule.stageToRank.flatMap((rank, s) => (rank === r && swapped.has(s % k) ? [per[s % k].kept] : []));
    const stash = peaks[r].peakBytes + 2 * Math.max(0, ...away);
    const activations = stash + transient;
    return { weights, activations, total: weights + activations, stash, transient, incoming: Math.max(0, ...mine.map((m) => m.incoming)), stageParams: mine.map((m) => m.params) };
  });
}

/** The run's order for the estimate (one step's; a stream's two, its steady state) and each of its stages' bytes: stage c·k + j is stage j of copy c. */
function stashOrder(cfg: LimitInput, per: readonly StageMemory[], swapped: ReadonlySet<number> = new Set()): { schedule: Schedule; k: number; held: Float64Array; afterInput?: Float64Array } {
  const kind = scheduleKind(cfg.schedule);
  const schedule = generateWindow(cfg.schedule, cfg.ranks, cfg.microbatches, Math.min(cfg.steps, 2), kind.virtualFor(cfg.virtual));
  const k = per.length;
  const byStage = (f: (m: StageMemory, j: number) => number) => Float64Array.from({ length: schedule.stages }, (_, s) => f(per[s % k], s % k));
  return { schedule, k, held: byStage((m, j) => (swapped.has(j) ? 0 : m.kept)), afterInput: kind.splitBackward ? byStage((m) => m.afterInput) : undefined };
}

/**
 * The estimate's largest stash of each stage of the run's order on its own (what the stages measure, each its own
 * peak: report.peakStashBytes); null for `auto`, whose order is planned from the model.
 */
export function stageStashPeaks(cfg: LimitInput, cut = stageCut(cfg)): { peaks: number[]; stageToRank: readonly number[] } | null {
  if (scheduleKind(cfg.schedule).fromStageCosts) return null;
  const { schedule, held, afterInput } = stashOrder(cfg, stageMemory(cfg, cut));
  return { peaks: stagePeakBytes(schedule, held, afterInput), stageToRank: schedule.stageToRank };
}

/** The field to name for too much memory: what dominates the estimate. */
function memoryField(cfg: LimitInput, weights: number, activations: number): { field: string; value: number } {
  if (activations > weights) return { field: 'batchSize', value: cfg.batchSize };
  return cfg.model === 'gpt' ? { field: 'width', value: cfg.width ?? 0 } : { field: 'hidden', value: cfg.hidden };
}

/** Actions of one window: a synchronous step, or a whole stream (PipeDream). */
export function runActions(cfg: Pick<LimitInput, 'schedule' | 'ranks' | 'virtual' | 'microbatches' | 'steps' | 'dp'>): number {
  const kind = scheduleKind(cfg.schedule);
  const m = UPDATE_WINDOWS[kind.update].microbatches(cfg.microbatches, cfg.steps);
  return (cfg.dp ?? 1) * cfg.ranks * cfg.virtual * m * (kind.splitBackward ? 3 : 2);
}

/** Throws a ConfigError unless one step of the schedule at these sizes, on every replica, has at most RUN_LIMITS.actionsPerStep actions (before it is generated). */
export function checkStepActions(schedule: RunScheduleName, ranks: number, virtual: number, microbatches: number, dp = 1): void {
  const actions = dp * ranks * virtual * microbatches * (scheduleKind(schedule).splitBackward ? 3 : 2);
  if (!(actions <= RUN_LIMITS.actionsPerStep)) {
    const what = dp > 1 ? 'dp · ranks · virtual · microbatches · ops' : 'ranks · virtual · microbatches · ops';
    throw new ConfigError('microbatches', microbatches, `${what} = ${actions} actions per step; a step may have at most ${RUN_LIMITS.actionsPerStep}`);
  }
}

/**
 * Throws a ConfigError unless the run's window fits its limit (before it is generated): a synchronous schedule's
 * step at most RUN_LIMITS.actionsPerStep actions over every replica; a stream (PipeDream, PipeDream-2BW, one window of
 * steps × microbatches) at most RUN_LIMITS.pipedreamActions.
 */
export function checkWindowActions(cfg: Pick<LimitInput, 'schedule' | 'ranks' | 'virtual' | 'microbatches' | 'steps' | 'dp'>): void {
  if (!runsAsStream(cfg.schedule)) {
    checkStepActions(cfg.schedule, cfg.ranks, cfg.virtual, cfg.microbatches, cfg.dp ?? 1);
    return;
  }
  const actions = runActions(cfg);
  if (!(actions <= RUN_LIMITS.pipedreamActions)) {
    throw new ConfigError(
      'steps',
      cfg.steps,
      `${scheduleKind(cfg.schedule).title.split(':')[0]} runs steps × microbatches as one stream: ranks · steps · microbatches · 2 = ${actions} actions; a run may ask for at most ${RUN_LIMITS.pipedreamActions}`,
    );
  }
}

/** Throws a ConfigError naming the field, its value and the limit it passes. Call on a configuration that passed its field rules. */
export function checkRunLimits(cfg: LimitInput): void {
  if (cfg.microbatches > RUN_LIMITS.microbatches) {
    throw new ConfigError('microbatches', cfg.microbatches, `must be at most ${RUN_LIMITS.microbatches} for a run (each micro-batch is a message between workers)`);
  }
  checkWindowActions(cfg);
  const cut = stageCut(cfg);
  for (const b of largestStageBuffers(cfg, cut)) {
    if (b.bytes > RUN_LIMITS.bufferBytes) {
      const field = b.buffer.includes('activations') ? 'batchSize' : cfg.model === 'gpt' ? 'width' : 'hidden';
      throw new ConfigError(
        field,
        field === 'batchSize' ? cfg.batchSize : field === 'width' ? cfg.width : cfg.hidden,
        `stage ${b.stage}'s buffer ${b.buffer} would take ${fmtBytes(b.bytes)}; a GPU buffer may take at most ${fmtBytes(RUN_LIMITS.bufferBytes)} (WebGPU's default maxStorageBufferBindingSize)`,
      );
    }
  }
  const perRankMemory = rankMemory(cfg, cut);
  const worst = perRankMemory.reduce((a, b) => (b.total > a.total ? b : a));
  const perRank = worst.total;
  const t = cfg.tp ?? 1;
  if (perRank > RUN_LIMITS.rankBytes) {
    const { field, value } = memoryField(cfg, worst.weights, worst.activations);
    const who = t > 1 ? `each of a rank's ${t} tensor-parallel workers` : 'a rank';
    throw new ConfigError(
      field,
      value,
      `${who} would hold about ${fmtBytes(perRank)} (weights, gradients and optimizer state ${fmtBytes(worst.weights)}, activations at its schedule's peak ${fmtBytes(worst.activations)}); a ${t > 1 ? 'worker' : 'rank'} may hold at most ${fmtBytes(RUN_LIMITS.rankBytes)}`,
    );
  }
  const dp = cfg.dp ?? 1;
  // Expert parallelism: ep workers a stage, each counted as holding the whole stage and micro-batch (an upper bound).
  const ep = cfg.ep ?? 1;
  const weights = dp * ep * t * perRankMemory.reduce((s, x) => s + x.weights, 0);
  const activations = dp * ep * t * perRankMemory.reduce((s, x) => s + x.activations, 0);
  if (weights + activations > RUN_LIMITS.totalBytes) {
    const { field, value } = memoryField(cfg, weights, activations);
    throw new ConfigError(
      field,
      value,
      `all ${dp > 1 || t > 1 || ep > 1 ? 'workers' : 'ranks'} together would hold about ${fmtBytes(weights + activations)} (weights, gradients and optimizer state ${fmtBytes(weights)}, activations ${fmtBytes(activations)}); a run may hold at most ${fmtBytes(RUN_LIMITS.totalBytes)} on this machine`,
    );
  }
  const flops = 3 * cut.spec.blocks.reduce((s, b) => s + b.layers.reduce((t, l) => t + layerFlopsPerRow(l), 0), 0) * cfg.batchSize;
  if (flops > RUN_LIMITS.flopsPerStep) {
    throw new ConfigError('batchSize', cfg.batchSize, `a step would take about ${(flops / 1e9).toFixed(0)} GFLOP (forward and backward); a step may take at most ${RUN_LIMITS.flopsPerStep / 1e9} GFLOP`);
  }
}

/**
 * Checks the stage buffers of `rank` against the adapter's own limits (known
 * only on the worker). Throws an Error naming rank, stage, the buffer and the limit.
 */
export function checkAdapterBufferLimits(
  cfg: LimitInput,
  rank: number,
  stagesOfRank: readonly number[],
  limits: { maxStorageBufferBindingSize: number; maxBufferSize: number },
): void {
  const limit = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  const name = limits.maxStorageBufferBindingSize <= limits.maxBufferSize ? 'maxStorageBufferBindingSize' : 'maxBufferSize';
  for (const b of largestStageBuffers(cfg)) {
    if (stagesOfRank.includes(b.stage) && b.bytes > limit) {
      throw new Error(`rank ${rank}, stage ${b.stage}: the buffer ${b.buffer} needs ${fmtBytes(b.bytes)}, more than this adapter's ${name} of ${fmtBytes(limit)}`);
    }
  }
}
