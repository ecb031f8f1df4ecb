/**
 * The single-device training loop (no workers): the model as one stage, or as
 * `cfg.stages` stages run in sequence on the same backend. Each step draws a
 * seeded batch, splits it into micro-batches, accumulates their gradients
 * (loss scale 1 / the batch's targets that take a loss, so accumulation is
 * exact: 1 / batchSize for the MLPs, 1 / non-padded positions for the GPT),
 * and applies the optimizer once. A run can start from where another stopped
 * (`from`: its weights, optimizer state, losses and evaluations) and continues
 * exactly as the uninterrupted run: batch `step` and the learning rate of
 * `step` depend on the step alone.
 */
import { BatchSampler, splitMicrobatches } from '../data/batches.ts';
import { createDataset } from '../data/datasets.ts';
import { targetCount, type Dataset, type Examples } from '../data/examples.ts';
import type { Backend, Tensor } from './backend.ts';
import { evaluate } from './evaluate.ts';
import { buildModelSpec } from './model-config.ts';
import type { ModelSpec } from './model-spec.ts';
import { createOptimizer, type Optimizer, type OptimizerState } from './optimizer.ts';
import type { BlockRange } from './partition.ts';
import { StageChain } from './stage-chain.ts';
import type { ParamValues } from './stage.ts';
import { lrAt, validateTrainConfig } from './train-config.ts';
import { ConfigError, requireInt } from '../util/errors.ts';
import type { TrainConfig } from './train-config.ts';

export interface StepReport {
  /** An MoE model's aux loss of the step (α-weighted, summed over its MoE blocks; gpt-moe-block.ts), beside the loss; absent for a dense model. */
  auxLoss?: number;
  /** 0-based. */
  step: number;
  /** Mean training loss of the step's batch, nats per example. */
  loss: number;
  lr: number;
}

export interface EvalReport {
  /** Steps done when evaluated. */
  step: number;
  /** 2-D sets: over the whole training set (names: not computed, NaN). */
  trainLoss: number;
  trainAccuracy: number;
  /** The held-out set: 2-D sets an independent draw; names the 10% of names split off. */
  valLoss: number;
  valAccuracy: number;
}

export interface TrainHooks {
  onStep?(r: StepReport): void | Promise<void>;
  onEval?(r: EvalReport): void | Promise<void>;
  /** Checked before every step; true ends the run early (still evaluated). */
  shouldStop?(): boolean;
  /** The trained model, before it is disposed (e.g. to sample names from it). */
  onDone?(model: StageChain, data: Dataset): void | Promise<void>;
}

/** Where a run stands after `stepsDone` steps: what continuing it needs besides its configuration. */
export interface TrainProgress<V extends ArrayLike<number> = Float32Array | Float64Array> {
  stepsDone: number;
  /** Every parameter by global name. */
  params: Record<string, V>;
  optimizer: OptimizerState<V>;
  /** Per step so far. */
  losses: number[];
  /** The evaluations so far (every evalEvery steps; not the one a stop adds). */
  evals: EvalReport[];
  /** PipeDream-2BW: the weight version before the latest, W(t − 1), by name (its stream's next block runs on it); after its first step. */
  previous?: Record<string, V>;
}

export interface TrainOptions {
  /** Continue from here (e.g. a checkpoint): the next step is from.stepsDone. */
  from?: TrainProgress<ArrayLike<number>>;
  /** Read the progress after the last step (before the final evaluation) into result.progress. */
  readProgress?: boolean;
}

export interface TrainResult {
  spec: ModelSpec;
  ranges: readonly BlockRange[];
  /** Per step. */
  losses: number[];
  /** An MoE model's aux loss per step (StepReport.auxLoss); empty for a dense model. */
  auxLosses: number[];
  evals: EvalReport[];
  final: EvalReport;
  params: ParamValues;
  stepsDone: number;
  ms: number;
  /** With readProgress: the weights, optimizer state, losses and evaluations after the last step. */
  progress?: TrainProgress;
}

export async function evaluateModel(be: Backend, model: StageChain, data: Dataset, step: number): Promise<EvalReport> {
  const val = await evaluate(be, model, data.val);
  // The names and text training sets are large (~50k rows and more) and only their held-out loss is reported.
  const train = data.name !== 'names' && data.name !== 'text' ? await evaluate(be, model, data.train) : { loss: NaN, accuracy: NaN };
  return { step, trainLoss: train.loss, trainAccuracy: train.accuracy, valLoss: val.loss, valAccuracy: val.accuracy };
}

/**
 * Issues one training step as the app runs it: the batch split into
 * micro-batches, each forward and backward (gradients accumulate, loss scale
 * 1 / the batch's targets), one optimizer step at the step's learning rate, then a
 * flush. Returns the step's loss (the batch mean) as a tensor: reading it
 * waits for the step. The benchmark times exactly this.
 */
export async function issueTrainStep(be: Backend, model: StageChain, opt: Optimizer, cfg: TrainConfig, step: number, batch: Examples): Promise<Tensor> {
  // 1 / the batch's targets (its size for the MLPs, its non-padded positions for the GPT): accumulation gives the batch mean.
  const lossScale = 1 / targetCount(batch);
  const mbs = splitMicrobatches(batch, cfg.microbatches);
  model.zeroGrads();
  const total = be.zeros([1]);
  for (const [i, mb] of mbs.entries()) {
    const loss = await model.forwardBackward(i, mb, lossScale);
    be.axpy(total, loss, 1);
    be.dispose(loss);
  }
  // The MoE layers' routing counts: the pipeline reports them (the run report's moeLoad); this loop drops them.
  for (const l of model.takeRouteLoads()) be.dispose(l.counts);
  opt.lr = lrAt(cfg, step);
  opt.step(1);
  be.flush();
  return total;
}

/** Throws a ConfigError unless `from` is a point of a run of `cfg`: 0 ≤ stepsDone ≤ steps, one loss per step done. */
export function checkStart(cfg: TrainConfig, from: TrainProgress<ArrayLike<number>>): void {
  requireInt('from.stepsDone', from.stepsDone, 0, cfg.steps);
  if (!Array.isArray(from.losses) || from.losses.length !== from.stepsDone) {
    throw new ConfigError('from.losses.length', Array.isArray(from.losses) ? from.losses.length : from.losses, `must be ${from.stepsDone}, one loss per step done`);
  }
  if (!Array.isArray(from.evals)) throw new ConfigError('from.evals', from.evals, 'must be a list of evaluations');
}

/** The aux loss the model's MoE blocks accumulated over the step (read once the step's loss was read: no extra wait for compute). */
async function readAuxLoss(be: Backend, model: StageChain): Promise<number> {
  const t = be.zeros([1]);
  model.takeAuxLoss(t);
  const v = (await be.read(t))[0];
  be.dispose(t);
  return v;
}

export async function trainSingleDevice(be: Backend, cfg: TrainConfig, hooks: TrainHooks = {}, opts: TrainOptions = {}): Promise<TrainResult> {
  validateTrainConfig(cfg);
  if (opts.from) checkStart(cfg, opts.from);
  const t0 = performance.now();
  const data = createDataset(cfg);
  const spec = buildModelSpec(cfg);
  const model = new StageChain(be, spec, cfg.stages, cfg.seed, { recompute: cfg.recompute, recomputeAttention: cfg.recomputeAttention });
  const opt = createOptimizer(be, model.params, cfg);
  const sampler = new BatchSampler(data.train, cfg.batchSize, cfg.seed);
  const losses: number[] = [];
  const auxLosses: number[] = [];
  const hasAux = model.stages.some((s) => s.hasAuxLoss);
  const evals: EvalReport[] = [];
  let step = 0;
  try {
    if (opts.from) {
      model.loadParams(opts.from.params);
      opt.loadState(opts.from.optimizer);
      losses.push(...opts.from.losses);
      evals.push(...opts.from.evals);
      step = opts.from.stepsDone;
    }
    for (; step < cfg.steps; step++) {
      if (hooks.shouldStop?.()) break;
      const total = await issueTrainStep(be, model, opt, cfg, step, sampler.batch(step));
      const loss = (await be.read(total))[0];
      be.dispose(total);
      losses.push(loss);
      const auxLoss = hasAux ? await readAuxLoss(be, model) : undefined;
      if (auxLoss !== undefined) auxLosses.push(auxLoss);
      await hooks.onStep?.({ step, loss, lr: opt.lr, ...(auxLoss !== undefined ? { auxLoss } : {}) });
      if (cfg.evalEvery > 0 && (step + 1) % cfg.evalEvery === 0 && step + 1 < cfg.steps) {
        const r = await evaluateModel(be, model, data, step + 1);
        evals.push(r);
        await hooks.onEval?.(r);
      }
    }
    const progress = opts.readProgress
      ? { stepsDone: step, params: await model.readParams(), optimizer: await opt.readState(), losses: [...losses], evals: [...evals] }
      : undefined;
    const final = await evaluateModel(be, model, data, step);
    evals.push(final);
    await hooks.onEval?.(final);
    const params = await model.readParams();
    await hooks.onDone?.(model, data);
    return { spec, ranges: model.ranges, losses, auxLosses, evals, final, params, stepsDone: step, ms: performance.now() - t0, progress };
  } finally {
    opt.dispose();
    model.dispose();
  }
}
