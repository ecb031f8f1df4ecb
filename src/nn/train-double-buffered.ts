/**
 * The single-device reference of PipeDream-2BW's update rule (Narayanan et
 * al., ICML 2021, §3.1), which the pipeline's 'double-buffered' policy
 * (runtime/policies/double-buffer-policy.ts) must reproduce: the same model, batches,
 * micro-batches and order as trainSingleDevice (train.ts), but step t's
 * micro-batches run forward and backward on the weights of one step before,
 * W(max(t − 1, 0)), and their accumulated gradient is applied to the latest
 * weights: W(t+1) = W(t) − ν·∇f(W(t−1)), the optimizer's normal step on W(t)
 * (AdamW's moments from that same stale gradient) at step t's learning rate.
 * The loss scale is the step's, 1 / the batch's targets, as in train.ts, so
 * the gradient is the batch mean. The two versions are kept by copying
 * (independently of how the runtime exchanges them).
 */
import { BatchSampler, splitMicrobatches } from '../data/batches.ts';
import { createDataset } from '../data/datasets.ts';
import { targetCount } from '../data/examples.ts';
import type { Backend, Tensor } from './backend.ts';
import { buildModelSpec } from './model-config.ts';
import { createOptimizer } from './optimizer.ts';
import { StageChain } from './stage-chain.ts';
import type { ParamValues } from './stage.ts';
import { lrAt, validateTrainConfig, type TrainConfig } from './train-config.ts';

export interface DoubleBufferedResult {
  /** Per step: the batch mean of the loss (each micro-batch's on W(t − 1)). */
  losses: number[];
  /** Per micro-batch over the whole run (step t's are t·m … t·m + m − 1): its share of its step's loss. */
  microbatchLosses: number[];
  /** The latest weights after the last step, W(steps). */
  params: ParamValues;
}

export async function trainDoubleBuffered(be: Backend, cfg: TrainConfig): Promise<DoubleBufferedResult> {
  validateTrainConfig(cfg);
  const data = createDataset(cfg);
  const model = new StageChain(be, buildModelSpec(cfg), cfg.stages, cfg.seed, { recompute: cfg.recompute, recomputeAttention: cfg.recomputeAttention });
  const opt = createOptimizer(be, model.params, cfg);
  const sampler = new BatchSampler(data.train, cfg.batchSize, cfg.seed);
  const params = model.params;
  /** W(t − 1) while step t runs (null at step 0, which runs on W(0)). */
  let older: Tensor[] | null = null;
  const losses: number[] = [];
  const microbatchLosses: number[] = [];
  try {
    for (let t = 0; t < cfg.steps; t++) {
      const batch = sampler.batch(t);
      const lossScale = 1 / targetCount(batch);
      // Load W(t − 1), keeping W(t) aside.
      const latest = older ? params.map((p) => be.clone(p.value)) : null;
      if (older) params.forEach((p, i) => be.copyInto(p.value, (older as Tensor[])[i]));
      model.zeroGrads();
      const mbs = splitMicrobatches(batch, cfg.microbatches);
      let total = 0;
      for (let i = 0; i < mbs.length; i++) {
        const loss = await model.forwardBackward(t * cfg.microbatches + i, mbs[i], lossScale);
        const v = (await be.read(loss))[0];
        be.dispose(loss);
        microbatchLosses.push(v);
        total += v;
      }
      losses.push(total);
      // Back to W(t); W(t) becomes the older version of step t + 1; the stale gradient moves W(t) to W(t + 1).
      if (latest) {
        params.forEach((p, i) => be.copyInto(p.value, latest[i]));
        for (const x of latest) be.dispose(x);
      }
      if (older) params.forEach((p, i) => be.copyInto((older as Tensor[])[i], p.value));
      else older = params.map((p) => be.clone(p.value));
      opt.lr = lrAt(cfg, t);
      opt.step(1);
    }
    return { losses, microbatchLosses, params: await model.readParams() };
  } finally {
    for (const x of older ?? []) be.dispose(x);
    opt.dispose();
    model.dispose();
  }
}
