/**
 * A run's state at a step, as one value: its configuration, every weight and
 * the optimizer's state (by PyTorch name), the optimizer's step count, the
 * learning rate of the next step, the data position and seed, and the losses
 * and evaluations so far. Checkpoints, resume after a reload, recovery after a
 * worker dies and the hand-over between the tab and torchrun all read and
 * write this value; its file format is ./codec.ts (version 1).
 *
 * Batch `step` is a pure function of (seed, step) (src/data/batches.ts) and
 * initialisation of (seed, name), so the seed and the next batch's index are
 * the whole data order and RNG state.
 */
import { CpuBackend } from '../nn/cpu-backend.ts';
import { buildModelSpec } from '../nn/model-config.ts';
import { createOptimizer } from '../nn/optimizer.ts';
import { StageChain } from '../nn/stage-chain.ts';
import { lrAt } from '../nn/train-config.ts';
import type { TrainProgress } from '../nn/train.ts';
import { toTrainConfig, type RunConfig } from '../config/run-config.ts';

export const RUN_STATE_FORMAT = 'pipelab-run-state';
export const RUN_STATE_VERSION = 1;
/** A checkpoint file larger than this is refused before it is read whole. */
export const MAX_CHECKPOINT_BYTES = 2 ** 30;

/** Parameters and optimizer slots hold F64 from the CPU reference (a resume there is exact) and F32 from WebGPU. */
export type StateArray = Float32Array | Float64Array;

export interface RunState extends TrainProgress<StateArray> {
  /** The run's configuration (plain JSON; a test's injected fault is not part of it). */
  config: RunConfig;
  /** The learning rate of the next step (step stepsDone) under the configuration's schedule. */
  lrNext: number;
  /** The data order: batches are drawn from `seed`; `nextBatch` (= stepsDone) is the index of the next one. */
  data: { seed: number; nextBatch: number };
  /** What wrote it: "PipeLab" (the tab) or "PipeLab train.py". */
  producer: string;
}

/** The configuration without the fields a checkpoint does not keep (a test's injected fault; how often the run saves and how it recovers). */
export function stateConfig(config: RunConfig): RunConfig {
  // Where the bytes live (the budget, the optimizer's offload) is not what the run trains: a checkpoint does not keep it.
  const { fault: _fault, checkpointEvery: _every, recovery: _recovery, memoryBudget: _budget, offloadOptimizer: _offload, swap: _swap, ...rest } = config;
  return rest;
}

/** The state of a run of `config` at `progress` (the single-device loop's, or gathered from the ranks). */
export function runStateOf(config: RunConfig, progress: TrainProgress<StateArray>, producer = 'PipeLab'): RunState {
  const { stepsDone, params, optimizer, losses, evals, previous } = progress;
  return { config: stateConfig(config), stepsDone, params, optimizer, losses, evals, ...(previous ? { previous } : {}), lrNext: lrAt(config, stepsDone), data: { seed: config.seed, nextBatch: stepsDone }, producer };
}

/** The state of a run of `config` before its first step: the seeded initial weights (float64), zero optimizer slots. */
export async function initialRunState(config: RunConfig): Promise<RunState> {
  const be = new CpuBackend();
  const chain = new StageChain(be, buildModelSpec(toTrainConfig(config)), 1, config.seed);
  const opt = createOptimizer(be, chain.params, config);
  try {
    const params = await chain.readParams();
    const optimizer = await opt.readState();
    return runStateOf(config, { stepsDone: 0, params, optimizer, losses: [], evals: [] });
  } finally {
    opt.dispose();
    chain.dispose();
  }
}
