/**
 * The data-parallel grid (issue 18): the same model and the same global batch
 * on 4 workers as dp × pp = 1 × 4, 2 × 2 and 4 × 1, for 1F1B and ZB-H1, on the
 * char-MLP and the GPT; overlap on vs off, ZeRO 1–3, PipeDream-2BW (an
 * all-reduce per block, no flush) and DualPipe (ZeRO 0 and 1) at 2 × 2. Each
 * row: the measured step with its all-reduce beside the simulator's, each
 * stage's all-reduce beside the α–β ring fitted by the all-reduce
 * micro-benchmark (run first, in the same page), the shared-device
 * prediction's error, and the optimizer state per worker.
 */
import { fitAlphaBeta, ringTimeMs, type AlphaBeta } from '../plan/allreduce-fit.ts';
import type { AllReduceBenchRow } from './allreduce-bench.ts';
import { measureScheduleGrid, predictionNote, type GptBenchContext, type GptSuiteResult } from './gpt-suite.ts';
import type { ScheduleBenchCase, ScheduleBenchRow } from './schedules-suite.ts';
import { zeroLabel } from './zero-label.ts';

/** Vector sizes of the all-reduce micro-benchmark: 4 KiB … 4 MiB. */
export const ALLREDUCE_BYTES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20];

/** Workers of the grid, and the micro-batches of one pipeline at dp = 1 (the global batch is this many micro-batches). */
const WORKERS = 4;
const GLOBAL_MICROBATCHES = 8;

/** The ring all-reduce between dp workers of the page, measured per vector size, with the α–β model fitted to each ring size. */
export async function measureRing(ctx: GptBenchContext, dps: readonly number[], repeats: number): Promise<{ rows: (AllReduceBenchRow & { modelMs: number })[]; fits: Record<number, AlphaBeta> }> {
  const rows: (AllReduceBenchRow & { modelMs: number })[] = [];
  const fits: Record<number, AlphaBeta> = {};
  for (const dp of dps) {
    const r = await ctx.page.evaluate(({ dp, bytes, repeats }) => window.pipelabBench.allReduce(dp, bytes, repeats), { dp, bytes: ALLREDUCE_BYTES, repeats });
    const fit = fitAlphaBeta(r.map((x) => ({ bytes: x.bytes, ms: x.medianMs })), dp);
    fits[dp] = fit;
    for (const x of r) {
      const modelMs = ringTimeMs(fit, x.bytes, dp);
      rows.push({ ...x, modelMs });
      ctx.log(`all-reduce dp=${dp} ${(x.bytes / 1024).toFixed(0)} KiB: ${x.medianMs.toFixed(2)} ms (${x.busMBps.toFixed(0)} MB/s per link), α–β model ${modelMs.toFixed(2)} ms`);
    }
    ctx.log(`all-reduce dp=${dp}: α = ${fit.latencyMs.toFixed(3)} ms per exchange, β = ${(fit.bytesPerMs / 1000).toFixed(0)} MB/s`);
  }
  return { rows, fits };
}

/** The grid: every dp × pp = 4 for each model and schedule, then overlap off and ZeRO 1, 2, 3 (and 3 re-gathered per action) at 2 × 2 (1F1B, char-MLP). */
export function meshGrid(quick: boolean): ScheduleBenchCase[] {
  const grid: ScheduleBenchCase[] = [];
  const models: ('char-mlp' | 'gpt')[] = quick ? ['char-mlp'] : ['char-mlp', 'gpt'];
  const schedules = quick ? (['1f1b'] as const) : (['1f1b', 'zb-h1'] as const);
  for (const model of models) {
    for (const schedule of schedules) {
      for (const dp of [1, 2, 4]) {
        grid.push({ schedule, ranks: WORKERS / dp, dp, microbatches: GLOBAL_MICROBATCHES / dp, layers: WORKERS, ...(model === 'gpt' ? { model: 'gpt' } : {}) });
      }
    }
  }
  const base = { schedule: '1f1b' as const, ranks: 2, dp: 2, microbatches: GLOBAL_MICROBATCHES / 2, layers: WORKERS };
  grid.push({ ...base, overlap: false }, { ...base, zero: 1 }, { ...base, zero: 2 }, { ...base, zero: 3 }, { ...base, zero: 3, reshard: 'microbatch' });
  // PipeDream-2BW on the same replicas: no flush, an all-reduce per stage and block (simulate-blocks.ts).
  grid.push({ ...base, schedule: 'pipedream-2bw' });
  // DualPipe on the same replicas (two stages a worker, one of each model copy), plain and with ZeRO-1 as DeepSeek-V3 trains it.
  grid.push({ ...base, schedule: 'dualpipe' }, { ...base, schedule: 'dualpipe', zero: 1 });
  return grid;
}

/** Each stage's measured all-reduce beside the micro-benchmark's α–β model for its bytes and ring size. */
export function withRingModel(rows: readonly ScheduleBenchRow[], fits: Record<number, AlphaBeta>): (ScheduleBenchRow & { ringModelMs?: number[] })[] {
  return rows.map((r) => {
    // ZeRO-2/3's collectives of a stage are many a step (a reduce-scatter per backward, gathers): no one all-reduce to set beside the ring model.
    const fit = r.mesh && r.mesh.dp > 1 && r.mesh.zero <= 1 ? fits[r.mesh.dp] : undefined;
    return fit ? { ...r, ringModelMs: r.mesh!.perStage.map((s) => ringTimeMs(fit, s.bytes, r.mesh!.dp)) } : { ...r };
  });
}

export async function mesh(ctx: GptBenchContext): Promise<GptSuiteResult> {
  const ring = await measureRing(ctx, [2, 4], ctx.quick ? 5 : 15);
  const grid = meshGrid(ctx.quick);
  const measured = await measureScheduleGrid(ctx, grid, ctx.quick ? 4 : 8);
  const rows = withRingModel(measured, ring.fits);
  for (const r of rows) {
    const m = r.mesh!;
    ctx.log(
      `${r.model} ${r.schedule} ${m.dp}×${r.p} m=${r.m}${m.overlap ? '' : ' no overlap'}${zeroLabel(m)}: step ${m.stepMs.toFixed(1)} ms measured, ${m.stepSimulatedMs.toFixed(1)} simulated; bubble ${(100 * r.bubbleMeasured).toFixed(1)}%, collectives ${(100 * m.allReduceShare).toFixed(1)}% of the step; ring ${((m.ringBytes ?? 0) / 1024).toFixed(1)} KiB per worker per step (formula ${((m.ringBytesFormula ?? 0) / 1024).toFixed(1)}); held at rest ${((m.heldBytes ?? 0) / 1024).toFixed(1)} KiB per worker (formula ${((m.heldFormula ?? 0) / 1024).toFixed(1)})`,
    );
  }
  return {
    rows,
    meta: { fits: ring.fits },
    notes: [
      `the same model (${WORKERS} blocks) and the same global batch (${GLOBAL_MICROBATCHES} micro-batches of 64 rows for the char-MLP, 8 sequences for the GPT) on ${WORKERS} workers: dp replicas of a ${WORKERS}/dp-stage pipeline, each with ${GLOBAL_MICROBATCHES}/dp micro-batches; the first step of each run is left out of the means.`,
      `ZeRO rows: ring bytes are what one worker sent over its ring in a step (every reduce-scatter and all-gather exchange), measured beside the count from the schedule (src/runtime/report/held-bytes.ts: an all-reduce a stage with ZeRO 0/1; a reduce-scatter per backward plus one all-gather with ZeRO-2 and ZeRO-3 per step; plus an all-gather per F/B/I with ZeRO-3 per action); held: weights + gradients + optimizer state at rest of the worker holding most, beside the ZeRO paper's formula. ZeRO-2/3's step is simulated with their collectives played between the actions as the runtime issues them (src/schedule/simulate-zero.ts), the ring's bandwidth read off the run's own exchanges, and each worker's own steps around the ring (the gradient read-back after each backward, the write of gathered weights, the shard update at the step's end) at their measured means (src/runtime/report/report.ts).`,
      `step: the measured step with its collectives (the mesh's first start to its last end); simulated: the simulator with dp, fed with the run's own mean op times and the α–β ring fitted to the run's own per-stage all-reduce times (src/runtime/report/report.ts). bubble: the compute-only pipeline bubble; all-reduce share: the part of the step after the last compute ended.`,
      `all-reduce per stage against the α–β model of the micro-benchmark run first in this page (${Object.entries(ring.fits).map(([dp, f]) => `dp = ${dp}: α = ${f.latencyMs.toFixed(3)} ms, β = ${(f.bytesPerMs / 1000).toFixed(0)} MB/s`).join('; ')}); the ring part measured on each worker from its first chunk exchange to its last, the least over the group (the worker that waited least for its peers); the whole collective also reads the gradients back from the GPU and writes the sum back.`,
      predictionNote(measured) + ' For dp > 1 the lanes are those of the same model on dp × p workers, and the mesh plays like one pipeline on lanes / dp (src/schedule/simulate-mesh.ts); the prediction is of the compute makespan.',
    ],
  };
}
