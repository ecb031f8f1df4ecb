/**
 * The single-device reference of PipeDream's update rule (Narayanan et al., SOSP 2019: asynchronous 1F1B with
 * weight stashing), which the pipeline's 'stash-and-update-after-backward' policy (runtime/pipedream-policy.ts)
 * must reproduce, written from the rule and not from the schedule or the runtime:
 *
 * - the run is one stream of steps × m micro-batches k = 0, 1, …, with no flush;
 * - each stage s of the p stages updates its own weights after every backward, with its own optimizer, in the
 *   order of k, at the learning rate of k's step (⌊k / m⌋);
 * - in the steady state stage s has p − s micro-batches in flight (1F1B: p − s forwards before its first backward,
 *   then one forward after each backward), so micro-batch k's forward on stage s follows the backwards of
 *   micro-batches 0 … k − (p − s) there: it runs on stage s's weights after max(0, k − p + s + 1) updates;
 * - weight stashing: k's backward on stage s uses the weights its forward used, and its gradient is applied to
 *   stage s's latest weights (those after k updates).
 *
 * So micro-batch k's loss and gradients are those of the model whose stage s holds version max(0, k − p + s + 1) of
 * its weights; each micro-batch's loss is its own mean (1 / its targets), and a step's loss is the mean over its
 * m micro-batches. Every version a later micro-batch still reads is kept by copying.
 */
import { BatchSampler, splitMicrobatches } from '../data/batches.ts';
import { createDataset } from '../data/datasets.ts';
import { targetCount } from '../data/examples.ts';
import type { Backend, Tensor } from './backend.ts';
import { buildModelSpec } from './model-config.ts';
import { createOptimizer } from './optimizer.ts';
import type { BlockRange } from './partition.ts';
import { StageChain } from './stage-chain.ts';
import type { ParamValues } from './stage.ts';
import { lrAt, validateTrainConfig, type TrainConfig } from './train-config.ts';

export interface PipeDreamResult {
  /** Per step: the mean of its micro-batches' losses. */
  losses: number[];
  /** Per micro-batch over the whole run (step t's are t·m … t·m + m − 1): its own mean loss. */
  microbatchLosses: number[];
  /** Every stage's latest weights after the last micro-batch. */
  params: ParamValues;
}

/** The version of stage s's weights (how many of its updates) that micro-batch k's forward and backward use, of p stages. */
export function pipeDreamVersion(k: number, s: number, p: number): number {
  return Math.max(0, k - p + s + 1);
}

/** `ranges`: the run's cut of the model into cfg.stages stages (as the runtime cuts it); by default StageChain's. */
export async function trainPipeDream(be: Backend, cfg: TrainConfig, ranges?: readonly BlockRange[]): Promise<PipeDreamResult> {
  validateTrainConfig(cfg);
  const data = createDataset(cfg);
  const model = new StageChain(be, buildModelSpec(cfg), cfg.stages, cfg.seed, { recompute: cfg.recompute, recomputeAttention: cfg.recomputeAttention, ...(ranges ? { ranges } : {}) });
  const p = model.stages.length;
  const opts = model.stages.map((s) => createOptimizer(be, s.params, cfg));
  const sampler = new BatchSampler(data.train, cfg.batchSize, cfg.seed);
  /** Per stage: version j → a copy of its weights after j updates, kept while a later micro-batch reads it. */
  const versions = model.stages.map((s) => new Map<number, Tensor[]>([[0, s.params.map((q) => be.clone(q.value))]]));
  const losses: number[] = [];
  const microbatchLosses: number[] = [];
  try {
    for (let t = 0; t < cfg.steps; t++) {
      const mbs = splitMicrobatches(sampler.batch(t), cfg.microbatches);
      let sum = 0;
      for (let i = 0; i < mbs.length; i++) {
        const k = t * cfg.microbatches + i;
        // Every stage at the version k's forward saw there; the latest of each is version k (k updates done).
        model.stages.forEach((s, j) => {
          const v = versions[j].get(pipeDreamVersion(k, j, p));
          if (!v) throw new Error(`stage ${j}: version ${pipeDreamVersion(k, j, p)} for micro-batch ${k} was not kept`);
          s.params.forEach((q, n) => be.copyInto(q.value, v[n]));
        });
        model.zeroGrads();
        const loss = await model.forwardBackward(k, mbs[i], 1 / targetCount(mbs[i]));
        const value = (await be.read(loss))[0];
        be.dispose(loss);
        microbatchLosses.push(value);
        sum += value;
        // Each stage's stashed gradient applied to its latest weights; the result is version k + 1.
        model.stages.forEach((s, j) => {
          const latest = versions[j].get(k) as Tensor[];
          s.params.forEach((q, n) => be.copyInto(q.value, latest[n]));
          opts[j].lr = lrAt(cfg, t);
          opts[j].step(1);
          versions[j].set(k + 1, s.params.map((q) => be.clone(q.value)));
          // Micro-batches after k read versions from pipeDreamVersion(k + 1, j, p) on.
          for (const [old, ws] of versions[j]) {
            if (old >= pipeDreamVersion(k + 1, j, p)) continue;
            for (const x of ws) be.dispose(x);
            versions[j].delete(old);
          }
        });
      }
      losses.push(sum / mbs.length);
    }
    return { losses, microbatchLosses, params: await model.readParams() };
  } finally {
    for (const vs of versions) for (const ws of vs.values()) for (const x of ws) be.dispose(x);
    for (const o of opts) o.dispose();
    model.dispose();
  }
}
