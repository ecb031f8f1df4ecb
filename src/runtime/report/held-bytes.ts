/**
 * What each worker of a run held, by kind, measured (the update policy's and
 * the stages' own counts, policy.ts HeldBytes) beside the ZeRO paper's formula
 * for its model states (Rajbhandari et al. 2020, §5, here in float32: 4 bytes
 * a weight and a gradient, K = 8 for AdamW's two moments, 4 for SGD's
 * velocity): with P the parameters of the worker's stages and N_d = dp,
 * weights 4P, gradients 4P, optimizer KP; ZeRO-1 divides the optimizer state
 * by N_d, ZeRO-2 the gradients too, ZeRO-3 the weights too. The worker's formula peak is its rank's planned peak
 * (config/memory-budget.ts plannedPeaks: the one formula the page, the planner and the budget use), checked against
 * the allocator's count less what the formula leaves out (communication staging, the GPU's uniform ring).
 *
 * And the bytes a worker's ring sends in a step, counted from the schedule:
 * each ring collective over a vector of N values sends (N_d − 1)/N_d · N
 * values from every worker, and a stage's step runs, per its sharding, an
 * all-reduce (two such halves: ZeRO 0 and 1); a reduce-scatter after every
 * backward that leaves weight gradients (B, W) and one all-gather of the
 * weights (ZeRO-2, and ZeRO-3 gathering once a step); or those reduce-scatters
 * and an all-gather before every action that reads the weights (F, B, I:
 * ZeRO-3 re-gathering per action; sharded-step.ts).
 */
import { plannedPeaks } from '../../config/memory-budget.ts';
import { byKind, kindIndex, liveTotal, OUTSIDE_FORMULA, type MemorySample, type StepMemory } from '../../nn/memory-ledger.ts';
import { layerParamCount } from '../../nn/model-spec.ts';
import { tpParams } from '../../nn/tp-params.ts';
import { meshOfRun, placeOf } from '../../schedule/mesh.ts';
import type { RunPlan } from '../executor/index.ts';
import type { RunReport } from './report-types.ts';
import { policyHeld } from './high-water.ts';
import type { StepResult } from '../executor/index.ts';

type Held = RunReport['heldBytesPerWorker'][number];

/** The formula's bytes at rest for `params` parameters at ZeRO stage `zero` over `dp` replicas. */
export function zeroStateBytes(params: number, zero: number, dp: number, optimizer: 'adamw' | 'sgd'): Held['formula'] {
  const k = optimizer === 'adamw' ? 8 : 4;
  const n = zero > 0 ? dp : 1;
  const weights = (4 * params) / (zero >= 3 ? n : 1), grads = (4 * params) / (zero >= 2 ? n : 1), state = (k * params) / (zero >= 1 ? n : 1);
  return { weights, grads, optimizer: state, peak: weights + grads + state };
}

/** Each worker's highest live bytes over the steps given (MemorySample of the peak), or null where none was counted. */
function peakOf(memories: readonly (StepMemory | undefined)[]): MemorySample | null {
  let best: MemorySample | null = null;
  for (const m of memories) if (m && (!best || liveTotal(m.peak) > liveTotal(best))) best = m.peak;
  return best;
}

/** Values one worker of rank `rank` sends over its ring in a step (a stream: in the run), by the schedule's actions (before the (N_d − 1)/N_d and the bytes a value). */
function ringValues(plan: RunPlan, perStage: readonly number[], rank: number): number {
  const { config, schedule } = plan;
  const order = schedule.order[rank];
  let values = 0;
  schedule.stageToRank.forEach((owner, s) => {
    if (owner !== rank) return;
    const mine = order.filter((a) => a.stage === s);
    const reduces = mine.filter((a) => a.op === 'B' || a.op === 'W').length;
    const reads = mine.filter((a) => a.op === 'F' || a.op === 'B' || a.op === 'I').length;
    // A stream (PipeDream-2BW on replicas) all-reduces once per block: its one window holds `steps` of them.
    const flushes = plan.windows.stream ? config.steps : 1;
    const collectives = config.zero <= 1 ? 2 * flushes : config.zero === 2 || config.reshard === 'step' ? reduces + 1 : reduces + reads;
    values += collectives * perStage[s];
  });
  return values;
}

/** The formula's bytes the busiest worker's ring sends in a step (`bytesPerValue` 4: the page's float32). */
export function ringBytesFormula(plan: RunPlan, bytesPerValue = 4): number {
  const { dp, ranks } = plan.config;
  if (dp < 2) return 0;
  const perStage = stageParams(plan);
  let most = 0;
  for (let r = 0; r < ranks; r++) most = Math.max(most, ringValues(plan, perStage, r));
  return (bytesPerValue * most * (dp - 1)) / dp;
}

/** Parameters of each stage of the run that one worker holds: with tp, 1/tp of those tensor parallelism splits (nn/tp-params.ts) and all of the rest. */
function stageParams(plan: RunPlan): number[] {
  const tp = plan.config.tp ?? 1;
  const split = tp > 1 ? [...tpParams(plan.spec).values()] : [];
  return plan.stageBlocks.map(([a, b]) => {
    const whole = plan.spec.blocks.slice(a, b).reduce((n, block) => n + block.layers.reduce((m, l) => m + layerParamCount(l), 0), 0);
    const splitCount = split.filter((r) => (r.block ?? -1) >= a && (r.block ?? -1) < b).reduce((n, r) => n + r.shape.reduce((x, y) => x * y, 1), 0);
    return whole - splitCount + splitCount / tp;
  });
}

/** Each worker's most bytes held in any step, by kind, with the formula beside it (worker order). */
export function heldBytesPerWorker(plan: RunPlan, records: readonly { results: StepResult[] }[]): RunReport['heldBytesPerWorker'] {
  const { config, schedule } = plan;
  const m = meshOfRun(config);
  const perStage = stageParams(plan);
  // The peak: the one formula the page, the planner and the budget use (memory-budget.ts plannedPeaks).
  const planned = plannedPeaks(config);
  const out: Held[] = [];
  // The steady state: the first step (warming the pool, a ZeRO-3 worker's weights before their first gather) left out when there are several.
  const steady = records.length > 1 ? records.slice(1) : records;
  for (const rec of records) {
    rec.results.forEach((r, w) => {
      const h = policyHeld(r);
      if (!out[w]) {
        const { rank } = placeOf(m, w);
        const mine = schedule.stageToRank.flatMap((owner, s) => (owner === rank ? [perStage[s]] : []));
        const states = zeroStateBytes(mine.reduce((a, b) => a + b, 0), config.zero, config.dp, config.optimizer);
        // Offloaded (ZeRO-Offload), the optimizer state is in host memory: none on the device.
        // With ZeRO-2 the shard's gradient accumulator goes with it.
        const formula = { ...states, optimizer: config.offloadOptimizer ? 0 : states.optimizer, grads: config.offloadOptimizer && config.zero >= 2 ? 0 : states.grads, peak: planned[rank].total - planned[rank].staging };
        out[w] = { weights: 0, grads: 0, optimizer: 0, stash: 0, transient: 0, formula };
        const peak = peakOf(steady.map((s) => s.results[w]?.memory));
        if (peak) {
          // Less what the formula leaves out: staging, the uniform ring, and the pool's bucket rounding of the rest.
          const outside = OUTSIDE_FORMULA.reduce((n, k) => n + (peak.live[kindIndex(k)] ?? 0), 0);
          out[w].measured = { peak: liveTotal(peak), comparable: liveTotal(peak) - outside - (peak.slack ?? 0), byKind: byKind(peak.live), pooled: peak.pooled, slack: peak.slack ?? 0, pending: peak.pending ?? 0 };
        }
      }
      const o = out[w];
      o.weights = Math.max(o.weights, h.weights);
      o.grads = Math.max(o.grads, h.grads);
      o.optimizer = Math.max(o.optimizer, h.optimizer);
      o.transient = Math.max(o.transient, h.transient);
      o.stash = Math.max(o.stash, h.stash);
    });
  }
  return out;
}

/** Each worker's most bytes in host memory in any step (offloaded optimizer state and swapped stashes), when any worker held some. */
export function hostBytes(records: readonly { results: StepResult[] }[]): { hostBytesPerWorker?: number[] } {
  const out: number[] = [];
  for (const rec of records) rec.results.forEach((r, w) => (out[w] = Math.max(out[w] ?? 0, (r.hostOptimizerBytes ?? 0) + (r.hostStashBytes ?? 0))));
  return out.some((b) => b > 0) ? { hostBytesPerWorker: out } : {};
}
