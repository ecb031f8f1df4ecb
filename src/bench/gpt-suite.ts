/**
 * The benchmark's GPT suites, driven from Node through the bench page
 * (window.pipelabBench), registered beside the others in the driver's suites:
 *
 * - gpt:            one training step of the page's default GPT, ours beside
 *                   TF.js (src/bench/tfjs-gpt.ts) in the same page: tokens/s,
 *                   the ratio, both losses, the per-op GPU-time table.
 * - gpt-schedules:  the schedule grid on the GPT at p = 4 (gpipe, 1f1b, zb-h1,
 *                   interleaved v = 2; m = 4, 8), measured vs simulated vs closed
 *                   form, with the shared-device prediction (shared-device-rows.ts).
 *
 * Also the grid loop every schedules suite shares (measureScheduleGrid).
 */
import type { Page } from 'playwright';
import type { ScheduleBenchCase, ScheduleBenchRow } from './schedules-suite.ts';
import type { TrainingBenchCase, TrainingBenchRow } from './training-suite.ts';
import { lanesKey, withSharedDevicePrediction, worstPredictionErrors } from './shared-device-rows.ts';

/** What a suite gets from the driver (the driver's BenchContext). */
export interface GptBenchContext {
  page: Page;
  quick: boolean;
  log(line: string): void;
}

/** What a suite gives back (the driver's SuiteResult). */
export interface GptSuiteResult {
  rows: unknown[];
  notes?: string[];
  meta?: Record<string, unknown>;
}

const pct = (v: number) => `${(100 * v).toFixed(1)}%`;
const x = (v: number) => `${v.toFixed(2)}×`;

/** Runs each case of `grid` in the page (`steps` steps each), then adds the shared-device prediction to every row. */
export async function measureScheduleGrid(ctx: GptBenchContext, grid: readonly ScheduleBenchCase[], steps: number): Promise<ScheduleBenchRow[]> {
  // The lanes of each model on each rank count, from the profiling pass measured before the grid (so every row is held out).
  const profileLanes = new Map<string, number>();
  for (const c of grid) {
    const model = c.model ?? 'char-mlp';
    // A data-parallel (or tensor-parallel) row's lanes: those of its model on as many workers (dp × tp × p ranks of one pipeline).
    const workers = c.ranks * (c.dp ?? 1) * (c.tp ?? 1) * (c.ep ?? 1);
    const key = lanesKey(model, workers);
    if (profileLanes.has(key)) continue;
    const probe: ScheduleBenchCase = { ...c, ranks: workers, dp: 1, tp: 1, ep: 1, zero: 0 };
    const { lanes, source } = await ctx.page.evaluate((c) => window.pipelabBench.profileLanes(c), probe);
    ctx.log(`${model} on ${workers} workers: profiling pass: ${source}`);
    profileLanes.set(key, lanes);
  }
  const rows: ScheduleBenchRow[] = [];
  for (const c of grid) {
    const row = await ctx.page.evaluate(({ c, steps }) => window.pipelabBench.schedule(c, steps), { c, steps });
    ctx.log(
      `${row.model} ${row.schedule} p=${row.p} m=${row.m}: makespan ${row.makespanMeasuredMs.toFixed(1)} ms measured, ${row.makespanSimulatedMs.toFixed(1)} simulated; bubble ${(100 * row.bubbleMeasured).toFixed(1)}% vs ${row.bubbleClosedForm === null ? 'n/a' : (100 * row.bubbleClosedForm).toFixed(1) + '%'} closed form${row.busiest ? `; last step ${row.busiest.stepMs.toFixed(1)} ms = ${row.busiest.stepOverKernel.toFixed(2)}× its busiest worker's kernels (${row.busiest.kernelMs.toFixed(1)} ms), waits ${row.busiest.waits.join('/')}, submits ${row.busiest.submits.join('/')}` : ''}`,
    );
    rows.push(row);
  }
  const predicted = withSharedDevicePrediction(rows, profileLanes);
  for (const r of predicted) {
    const p = r.prediction!;
    ctx.log(`${r.model} ${r.schedule} p=${r.p} m=${r.m}: prediction error today ${pct(p.todayError)}, shared device (k = ${p.lanes} from the profile) ${pct(p.sharedError)}; with k = ${p.fittedLanes} fitted on the m = p rows ${pct(p.fittedError)}`);
  }
  return predicted;
}

/** The note every schedules table carries about its prediction columns. */
export function predictionNote(rows: readonly ScheduleBenchRow[]): string {
  const w = worstPredictionErrors(rows);
  const lanes = [...new Set(rows.map((r) => `${r.model} p = ${r.p}: k = ${r.prediction?.lanes ?? 'n/a'}${r.prediction?.lanesFrom === 'profile' ? ' from its profiling pass' : ' fitted'}`))].join(', ');
  const fitted = [...new Set(rows.map((r) => `${r.model} k = ${r.prediction?.fittedLanes ?? 'n/a'}`))].join(', ');
  return `shared-device prediction (issue 12, src/plan/prediction-check.ts): solo op times calibrated from the row's own means so that one device with k lanes, shared by the ranks, reproduces them; k per model and rank count from the profiling pass of that model on that many ranks, before the grid (src/plan/measure.ts: a GPipe run with as many micro-batches as ranks; ${lanes}), so every row is held out. Worst |error| today ${pct(w.today)}, shared device ${pct(w.shared)} (goal ≤ 5%); for reference, with k fitted on the grid's own m = p rows (${fitted}) ${pct(w.fitted)}.`;
}

export async function gpt(ctx: GptBenchContext): Promise<GptSuiteResult> {
  const c: TrainingBenchCase = ctx.quick ? { dataset: 'names', model: 'gpt', warmup: 2, steps: 4 } : { dataset: 'names', model: 'gpt', warmup: 5, steps: 30, profile: true };
  const r: TrainingBenchRow = await ctx.page.evaluate((c) => window.pipelabBench.training(c), c);
  const tok = (side: 'ours' | 'tfjs') => r[side].samplesPerSecond * r.tokensPerSample;
  ctx.log(
    `gpt batch ${r.batchSize}×${r.tokensPerSample}: ours ${tok('ours').toFixed(0)} tokens/s (${r.ours.medianStepMs.toFixed(1)} ms/step), TF.js ${tok('tfjs').toFixed(0)} (${r.tfjs.medianStepMs.toFixed(1)} ms/step): ${x(r.ratio)}; loss after ${r.warmup + r.steps} steps ${r.ours.finalLoss.toFixed(5)} vs ${r.tfjs.finalLoss.toFixed(5)} (max rel. Δ ${r.maxLossRelDiff.toExponential(1)})`,
  );
  return {
    rows: [r],
    meta: { oursTokensPerSecond: tok('ours'), tfjsTokensPerSecond: tok('tfjs'), ratio: r.ratio, maxLossRelDiff: r.maxLossRelDiff },
    notes: [
      `ours / TF.js tokens/s: ${x(r.ratio)} (target ≥ 3×); tokens = the positions a step computes, batch × block size (${r.batchSize} × ${r.tokensPerSample}), padded ones included (the same for both).`,
      `the page's default GPT (GPT_DEFAULTS, as the page's model switch gives it: ${r.layers} blocks, width ${r.gpt?.width}, ${r.gpt?.heads} heads, block size ${r.tokensPerSample}), ${r.params} parameters, on the names as sequences; as a single stage on one device, the batch as one micro-batch.`,
      'TF.js: the same GPT from the same ModelSpec (src/bench/tfjs-gpt.ts): attention from tf ops (tf.split into q, k, v; heads by reshape + transpose; tf.matMul(q, kᵀ)/√D plus −1e9 above the diagonal from tf.linalg.bandPart; tf.softmax; tf.matMul(P, v)); Linear as x·Wᵀ + b in PyTorch\'s layout; LayerNorm by tf.moments (eps 1e-5); GELU in its tanh form; loss −Σ one-hot·logSoftmax over the targets that take a loss, / their count.',
      'same initial weights (ours copied into the tf.variables), same batches (our seeded BatchSampler), loss normalised by the non-padded targets on both sides, Adam with lr 5e-3, β1 0.9, β2 0.999, ε 1e-8, constant lr; ours AdamW with weightDecay 0 (the GPT default is 0.01; TF.js has no AdamW). Steps alternate between the sides as in the training suite.',
    ],
  };
}

/** MoE rows: the GPT's blocks as 4 experts each (top-2), ep 2 × pp 2 (4 workers) under 1F1B and DualPipe; m = 4 (and 8 in the full run). */
export const MOE_BENCH_EXPERTS = 4;

/**
 * The grid on the GPT at p = 4: gpipe, 1f1b, zb-h1 and interleaved (v = 2) at m = 4 and 8 (quick: gpipe and 1f1b at m = 4 and 8);
 * then the MoE rows (ep 2 × pp 2, 1F1B and DualPipe; quick m = 4 only).
 */
export function gptScheduleGrid(quick: boolean): ScheduleBenchCase[] {
  const grid: ScheduleBenchCase[] = [];
  for (const m of [4, 8]) {
    grid.push({ schedule: 'gpipe', ranks: 4, microbatches: m, model: 'gpt' }, { schedule: '1f1b', ranks: 4, microbatches: m, model: 'gpt' });
    if (!quick) grid.push({ schedule: 'zb-h1', ranks: 4, microbatches: m, model: 'gpt' }, { schedule: 'interleaved-1f1b', ranks: 4, microbatches: m, virtual: 2, model: 'gpt' });
  }
  for (const m of quick ? [4] : [4, 8]) {
    for (const schedule of ['1f1b', 'dualpipe'] as const) grid.push({ schedule, ranks: 2, microbatches: m, model: 'gpt', experts: MOE_BENCH_EXPERTS, ep: 2 });
  }
  return grid;
}

export async function gptSchedules(ctx: GptBenchContext): Promise<GptSuiteResult> {
  const rows = await measureScheduleGrid(ctx, gptScheduleGrid(ctx.quick), ctx.quick ? 4 : 8);
  return {
    rows,
    notes: [
      'the page\'s default GPT (width, heads, block size) with p·v transformer blocks, the head with the last (balanced FLOPs); 8 sequences per micro-batch; the first step of each run is left out of the means.',
      'simulated ("today"): the simulator fed with the run\'s own mean per-stage F/B/I/W times and its mean communication time per crossing as link latency.',
      predictionNote(rows),
      `MoE rows (the second table): the same GPT with 2 blocks, each block's MLP ${MOE_BENCH_EXPERTS} experts behind a top-2 router, ep 2 × pp 2 (4 workers, each holding half the experts and half of each micro-batch's sequences), under 1F1B and DualPipe. step: first start to last end, collectives included; simulated: the simulator fed with the run's compute less its all-to-alls' own times, the all-to-alls priced on the α–β line fitted to them and played after the compute, as the tab's workers run them (src/runtime/report/report-ep.ts); overlapped: the same with each forward and backward pair costing max(compute, all-to-alls), DualPipe's overlap on a GPU that runs a pair at once (the tab's workers do not). all-to-all share: a worker's time in ep-all-to-all intervals over the step (waits for the other ep worker included; own: each round at its least-waiting member's time, what the simulator prices; simulated: the same reading of the simulated timeline). No profiling pass of their own (the profiles are keyed by p × dp workers): their shared-device prediction uses the k fitted on the grid's m = p rows.`,
    ],
  };
}
