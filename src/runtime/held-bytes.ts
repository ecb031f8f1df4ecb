/**
 * What each worker of a run held, by kind, measured (the update policy's and
 * the stages' own counts, policy.ts HeldBytes) beside the ZeRO paper's formula
 * for its model states (Rajbhandari et al. 2020, §5, here in float32: 4 bytes
 * a weight and a gradient, K = 8 for AdamW's two moments, 4 for SGD's
 * velocity): with P the parameters of the worker's stages and N_d = dp,
 * weights 4P, gradients 4P, optimizer KP; ZeRO-1 divides the optimizer state
 * by N_d, ZeRO-2 the gradients too, ZeRO-3 the weights too.
 */
import { layerParamCount } from '../nn/model-spec.ts';
import { mesh, placeOf } from '../schedule/mesh.ts';
import type { RunPlan } from './run-plan.ts';
import type { RunReport } from './report-types.ts';
import type { StepResult } from './rank-executor.ts';

type Held = RunReport['heldBytesPerWorker'][number];

/** The formula's bytes at rest for `params` parameters at ZeRO stage `zero` over `dp` replicas. */
export function zeroStateBytes(params: number, zero: number, dp: number, optimizer: 'adamw' | 'sgd'): Held['formula'] {
  const k = optimizer === 'adamw' ? 8 : 4;
  const n = zero > 0 ? dp : 1;
  return { weights: (4 * params) / (zero >= 3 ? n : 1), grads: (4 * params) / (zero >= 2 ? n : 1), optimizer: (k * params) / (zero >= 1 ? n : 1) };
}

/** Parameters of each stage of the run. */
function stageParams(plan: RunPlan): number[] {
  return plan.stageBlocks.map(([a, b]) => plan.spec.blocks.slice(a, b).reduce((n, block) => n + block.layers.reduce((m, l) => m + layerParamCount(l), 0), 0));
}

/** Each worker's most bytes held in any step, by kind, with the formula beside it (worker order). */
export function heldBytesPerWorker(plan: RunPlan, records: readonly { results: StepResult[] }[]): RunReport['heldBytesPerWorker'] {
  const { config, schedule } = plan;
  const m = mesh(config.dp, config.ranks);
  const perStage = stageParams(plan);
  const out: Held[] = [];
  for (const rec of records) {
    rec.results.forEach((r, w) => {
      const stash = Object.values(r.peakStashBytes).reduce((a, b) => a + b, 0);
      const h = r.held ?? { weights: 0, grads: 0, optimizer: r.optimizerBytes ?? 0, transient: 0 };
      if (!out[w]) {
        const { rank } = placeOf(m, w);
        const params = schedule.stageToRank.reduce((n, owner, s) => (owner === rank ? n + perStage[s] : n), 0);
        out[w] = { weights: 0, grads: 0, optimizer: 0, stash: 0, transient: 0, formula: zeroStateBytes(params, config.zero, config.dp, config.optimizer) };
      }
      const o = out[w];
      o.weights = Math.max(o.weights, h.weights);
      o.grads = Math.max(o.grads, h.grads);
      o.optimizer = Math.max(o.optimizer, h.optimizer);
      o.transient = Math.max(o.transient, h.transient);
      o.stash = Math.max(o.stash, stash);
    });
  }
  return out;
}
