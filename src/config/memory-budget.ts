/**
 * Each worker's memory budget (issue 54): the planned per-worker peak by kind, the refusal of a run whose plan
 * passes its budget before any worker starts, and what would make it fit, each option's peak computed by the same
 * formulas on the run changed that way.
 *
 * The plan of one worker (4 bytes a value; P its stages' parameters, its tp share; under ZeRO each stage's P ÷ dp
 * rounded up, its largest chunk; the run-limits.ts estimate of what it stashes, exact against the stages' count:
 * stash-estimate-cpu.test.ts):
 *  - weights 4P (PipeDream's and 2BW's stashed versions: 4P each more), sharded under ZeRO-3;
 *  - gradients 4P, sharded under ZeRO-2 and 3; 0 on the device with ZeRO-2 and optimizer offload (the shard's
 *    accumulator lives in host memory);
 *  - optimizer state 8P (AdamW's two moments) or 4P (SGD's velocity), sharded under ZeRO 1–3; 0 on the device with
 *    optimizer offload (it lives in host memory);
 *  - stash: the activations its micro-batches in flight keep at the peak of the run's own order; a swapped stage's
 *    leave the device between its forward and its backward, two micro-batches' at most there at once (the one its
 *    forward just made and the one brought back for the next backward);
 *  - transient: one backward's working set (what its weight layers keep for their weight gradients and one layer's
 *    scratch, live until it ends: run-limits.ts StageMemory.working) and its recomputation made live again; with replicas (dp > 1) one chunk of a stage staged up (1/dp of it: a ring's or a shard's piece); under ZeRO-2/3 one stage's whole
 *    gradient before its reduce-scatter; under ZeRO-3 the gathered weights (all its stages' with reshard = step, one
 *    stage's, two with prefetch, with reshard = microbatch); or, when more, an offloaded update's weights staged back
 *    up at the step's end (at most one stage's; no stash is live then, so only what passes the stash's plan). The allocator counts these as temporaries, staging and gathered
 *    weights (nn/memory-ledger.ts: gathered, staging and temp are this plan's transient).
 * The peak is their sum: every kind at its most at once, an upper bound of the moment that holds the most. It is
 * what the per-step check (runtime/budget-check.ts) holds the allocator's high-water mark against, so a run the
 * plan admits and that grows nothing past it is never stopped (runtime/budget-cpu.test.ts).
 */
import { ConfigError } from '../util/errors.ts';
import { laneLabel, meshOfRun, workerOf } from '../schedule/mesh.ts';
import { scheduleKind, UPDATE_WINDOWS } from '../schedule/registry.ts';
import { MAX_RUN_RANKS, validateRunConfig, withoutCut, type RunConfig } from './run-config.ts';
import { rankMemory, stageCut } from './run-limits.ts';
import { swappedStages } from './memory-fields.ts';
import { gpuOverhead, gpuOverheadText, type BudgetTarget } from './gpu-overhead.ts';

export type { BudgetTarget } from './gpu-overhead.ts';

export const MiB = 1024 * 1024;

/** The kinds a worker's memory is planned and counted by. */
export const PEAK_KINDS = ['weights', 'grads', 'optimizer', 'stash', 'transient'] as const;
export type PeakKind = (typeof PEAK_KINDS)[number];
export const PEAK_KIND_LABEL: Readonly<Record<PeakKind, string>> = { weights: 'weights', grads: 'gradients', optimizer: 'optimizer state', stash: 'stash', transient: 'transient' };

export type BytesByKind = Record<PeakKind, number>;

/** One pipeline rank's planned peak on one of its workers (every replica's and tp worker's the same). */
export interface PlannedPeak extends BytesByKind {
  rank: number;
  total: number;
  /**
   * Of the transient, communication staging: the gradient a backward receives and, with replicas, a chunk of a stage
   * staged up. The budget counts it (the device holds it); the formula the report sets beside the count less its
   * staging (held-bytes.ts) leaves it out.
   */
  staging: number;
}

/** Bytes as the messages write them: GiB, MiB or KiB. */
export function fmtBytes(b: number): string {
  if (b >= 1024 * MiB) return `${(b / (1024 * MiB)).toFixed(2)} GiB`;
  if (b >= MiB) return `${(b / MiB).toFixed(2)} MiB`;
  return `${(b / 1024).toFixed(1)} KiB`;
}

/** The sum of the kinds. */
export function totalOf(b: BytesByKind): number {
  return PEAK_KINDS.reduce((s, k) => s + b[k], 0);
}

/** `weights 1.0 KiB, gradients …`: each kind's bytes. */
export function byKindText(b: BytesByKind): string {
  return PEAK_KINDS.map((k) => `${PEAK_KIND_LABEL[k]} ${fmtBytes(b[k])}`).join(', ');
}

/** The planned peak of each pipeline rank's worker, by kind (a validated configuration). */
export function plannedPeaks(cfg: RunConfig): PlannedPeak[] {
  const kind = scheduleKind(cfg.schedule);
  const extra = UPDATE_WINDOWS[kind.update].extraWeightVersions(cfg.ranks);
  const n = cfg.zero > 0 ? cfg.dp : 1;
  const slots = cfg.optimizer === 'adamw' ? 2 : 1;
  return rankMemory(cfg, stageCut(cfg), new Set(swappedStages(cfg))).map((r, rank) => {
    const p = r.stageParams.reduce((a, b) => a + b, 0);
    // ZeRO's shard of a stage: the largest of its dp chunks (mesh.ts chunkBounds: sizes differ by one at most).
    const shard = r.stageParams.reduce((a, ps) => a + Math.ceil(ps / n), 0);
    const largest = 4 * Math.max(0, ...r.stageParams);
    const weights = 4 * (cfg.zero >= 3 ? shard : p) * (1 + extra);
    // ZeRO-2 offloaded: the shard's gradient accumulates in host memory beside its optimizer state.
    const grads = cfg.offloadOptimizer && cfg.zero >= 2 ? 0 : 4 * (cfg.zero >= 2 ? shard : p);
    const optimizer = cfg.offloadOptimizer ? 0 : 4 * slots * (cfg.zero >= 1 ? shard : p);
    const gathered = cfg.zero >= 3 ? (cfg.reshard === 'step' ? 4 * p : largest * (cfg.prefetch ? 2 : 1)) : 0;
    // Around a backward: its working set and what it recomputes (r.transient), the gradient it receives (staging), with replicas one chunk of a stage (1/dp of
    // it: a ring's piece staged up, a shard's segment), under ZeRO-2/3 the whole gradient before its reduce-scatter, ZeRO-3's
    // gathered weights. At the step's end no stash is live (the sum counts it): an offloaded update's weights staged up
    // need only what the stash leaves of them.
    const ring = cfg.dp > 1 ? 4 * Math.ceil(Math.max(0, ...r.stageParams) / cfg.dp) : 0;
    const staging = r.incoming + ring;
    const backward = r.transient + staging + (cfg.zero >= 2 ? largest : 0) + gathered;
    const transient = Math.max(backward, (cfg.offloadOptimizer ? largest : 0) - r.stash);
    const b = { weights, grads, optimizer, stash: r.stash, transient };
    return { rank, ...b, total: totalOf(b), staging: transient === backward ? staging : 0 };
  });
}

/** The rank whose worker plans the most. */
export function worstPeak(cfg: RunConfig): PlannedPeak {
  return plannedPeaks(cfg).reduce((a, b) => (b.total > a.total ? b : a));
}

/** The peak the budget holds a worker to: its plan, and on a GPU backend the GPU's own overheads on top (config/gpu-overhead.ts). */
export function budgetPeak(p: PlannedPeak, target: BudgetTarget): number {
  return target === 'gpu' ? p.total + gpuOverhead(p).total : p.total;
}

/** The most any worker's budget peak reaches on `target`. */
export function worstBudgetPeak(cfg: RunConfig, target: BudgetTarget): number {
  return Math.max(...plannedPeaks(cfg).map((p) => budgetPeak(p, target)));
}

/** A change that would lower the run's peak, and the peak its busiest worker would reach with it. */
export interface FitOption {
  label: string;
  change: Partial<RunConfig>;
  peak: number;
  fits: boolean;
}

function tryPeak(cfg: RunConfig, change: Partial<RunConfig>, target: BudgetTarget): number | null {
  const next = { ...(change.partition === 'flops' ? withoutCut(cfg) : cfg), ...change };
  try {
    validateRunConfig(next);
  } catch {
    return null;
  }
  return worstBudgetPeak(next, target);
}

/**
 * What would make `cfg` fit its budget (`budget` bytes), each with the peak it would reach: more stages (the fewest
 * more ranks that fit, else the most the model and the tab allow), recomputation, ZeRO-3 (over dp = 2 replicas
 * where the run has none), activation swapping and optimizer offload; and, where none fits alone, all of them together. An option the
 * run cannot take (a schedule or a mesh that refuses it) is left out.
 */
export function fitOptions(cfg: RunConfig, budget: number, target: BudgetTarget = 'cpu'): FitOption[] {
  const out: FitOption[] = [];
  const add = (label: string, change: Partial<RunConfig>) => {
    const peak = tryPeak(cfg, change, target);
    if (peak !== null) out.push({ label, change, peak, fits: peak <= budget });
  };
  // More stages: the cut by FLOPs over more ranks, up to a stage a block and the tab's workers.
  const blocks = cfg.layers + 1;
  const most = Math.min(Math.floor(blocks / cfg.virtual), Math.floor(MAX_RUN_RANKS / (cfg.dp * cfg.tp)));
  let deeper: FitOption | null = null;
  for (let ranks = cfg.ranks + 1; ranks <= most; ranks++) {
    const change: Partial<RunConfig> = cfg.partition === 'cut' ? { ranks, partition: 'flops' } : { ranks };
    const peak = tryPeak(cfg, change, target);
    if (peak === null) continue;
    deeper = { label: `more stages (ranks = ${ranks})`, change, peak, fits: peak <= budget };
    if (deeper.fits) break;
  }
  if (deeper) out.push(deeper);
  if (!cfg.recompute) add('recomputation (recompute = true)', { recompute: true });
  if (cfg.zero < 3) add(cfg.dp > 1 ? 'ZeRO-3 (zero = 3)' : 'ZeRO-3 over two replicas (dp = 2, zero = 3)', cfg.dp > 1 ? { zero: 3 } : { dp: 2, zero: 3 });
  if (cfg.swap !== 'all') add('activation swapping (swap = all)', { swap: 'all' });
  if (!cfg.offloadOptimizer) add('optimizer offload (offloadOptimizer = true)', { offloadOptimizer: true });
  if (out.length > 1 && !out.some((o) => o.fits)) {
    // Together: the deepest cut, recomputation, offload (ZeRO-3 refuses offload: it keeps its state on the device).
    const change = Object.assign({}, ...out.filter((o) => o.change.zero === undefined).map((o) => o.change)) as Partial<RunConfig>;
    add(`all of ${out.filter((o) => o.change.zero === undefined).map((o) => o.label.split(' (')[0]).join(', ')} together`, change);
  }
  return out;
}

/**
 * The refusal of a run whose planned peak passes its budget (null: no budget, or it fits). On a GPU backend
 * (`target` 'gpu': the page, automation in Chromium) the peak adds the GPU's own overheads, named on their own line.
 */
export function budgetRefusal(cfg: RunConfig, target: BudgetTarget = 'cpu'): string | null {
  if (cfg.memoryBudget === undefined) return null;
  const budget = cfg.memoryBudget * MiB;
  const worst = plannedPeaks(cfg).reduce((a, b) => (budgetPeak(b, target) > budgetPeak(a, target) ? b : a));
  const peak = budgetPeak(worst, target);
  if (peak <= budget) return null;
  const m = meshOfRun(cfg);
  const w = workerOf(m, 0, worst.rank, 0);
  const options = fitOptions(cfg, budget, target);
  const fits = options.filter((o) => o.fits);
  const over = options.filter((o) => !o.fits);
  const list = (os: FitOption[]) => os.map((o) => `${o.label}: ${fmtBytes(o.peak)}`).join('; ');
  const others = m.dp * (m.tp ?? 1) > 1 ? ' (and every replica and tp worker of its rank)' : '';
  return (
    `worker ${w} (${laneLabel(m, w)})${others} plans a peak of ${fmtBytes(peak)} (${byKindText(worst)}` +
    (target === 'gpu' ? `; ${gpuOverheadText(gpuOverhead(worst), fmtBytes)}` : '') +
    `) against a budget of ${fmtBytes(budget)}. ` +
    (fits.length > 0 ? `It would fit with ${list(fits)}.` : 'Nothing tried here fits it.') +
    (over.length > 0 ? ` Still over: ${list(over)}.` : '')
  );
}

/** Throws a ConfigError on `memoryBudget` when the run's planned peak (on `target`) passes its budget (before any worker starts). */
export function checkMemoryBudget(cfg: RunConfig, target: BudgetTarget = 'cpu'): void {
  const refusal = budgetRefusal(cfg, target);
  if (refusal) throw new ConfigError('memoryBudget', cfg.memoryBudget, refusal);
}
