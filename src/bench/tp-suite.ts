/**
 * The tensor-parallel grid (issue 27): the same model and the same global batch
 * on 4 workers as every (dp, tp, pp) with dp · tp · pp = 4 (1 × 1 × 4 … 4 × 1 × 1),
 * 1F1B, on the char-MLP and the GPT, and the GPT's shapes with tp ≥ 2 again with
 * sequence parallelism (+ SP: its token rows split over the tp workers too). Each row: the measured step beside the
 * run report's own simulated step (the simulator fed with the run's mean op
 * times; a tp action's time holds its collectives' waits), the error and
 * whether it is within 10%, and the tp collectives of the step (count, sizes,
 * time, share) beside the α–β model of the tp all-reduce micro-benchmark run
 * first in the same page (one round of direct exchange over MessagePorts, as
 * src/runtime/comm/tp-collective.ts does it, t ∈ {2, 4}; allreduce-bench.ts).
 */
import { fitAlphaBeta, type AlphaBeta } from '../plan/allreduce-fit.ts';
import { tpExchangeTime } from '../schedule/tp-cost.ts';
import type { TpAllReduceBenchRow } from './allreduce-bench.ts';
import type { GptBenchContext, GptSuiteResult } from './gpt-suite.ts';
import type { ScheduleBenchCase, ScheduleBenchRow } from './schedules-suite.ts';

/** Workers of the grid, the micro-batches of the global batch, and the model's blocks (as the mesh suite). */
export const TP_WORKERS = 4;
const GLOBAL_MICROBATCHES = 8;
const LAYERS = 4;
/** Prediction target per row: |simulated − measured| / measured. */
export const TP_PREDICTION_TARGET = 0.1;
/** The micro-benchmark's sweep: 1 KiB … 1 MiB. */
export const TP_SWEEP_BYTES = [1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20];

export interface TpShape {
  dp: number;
  tp: number;
  pp: number;
  /** Sequence parallelism on. */
  sp?: true;
}

/** Every (dp, tp, pp) of `workers` workers, tp-major then pp descending: 1×1×4, 1×2×2, 1×4×1, 2×1×2, 2×2×1, 4×1×1 for 4. */
export function tpShapes(workers: number): TpShape[] {
  const out: TpShape[] = [];
  for (let dp = 1; dp <= workers; dp++) {
    if (workers % dp !== 0) continue;
    for (let tp = 1; tp <= workers / dp; tp++) {
      if ((workers / dp) % tp === 0) out.push({ dp, tp, pp: workers / dp / tp });
    }
  }
  return out;
}

/** The grid: every shape for the char-MLP and for the GPT, then the GPT's with tp ≥ 2 with sequence parallelism (quick too: the runs are small; it takes fewer steps). */
export function tpGrid(): ScheduleBenchCase[] {
  const grid: ScheduleBenchCase[] = [];
  const at = (s: TpShape): ScheduleBenchCase => ({ schedule: '1f1b', ranks: s.pp, dp: s.dp, tp: s.tp, microbatches: GLOBAL_MICROBATCHES / s.dp, layers: LAYERS });
  for (const model of ['char-mlp', 'gpt'] as const) for (const s of tpShapes(TP_WORKERS)) grid.push({ ...at(s), ...(model === 'gpt' ? { model: 'gpt' } : {}) });
  for (const s of tpShapes(TP_WORKERS)) if (s.tp > 1) grid.push({ ...at(s), model: 'gpt', sequenceParallel: true });
  return grid;
}

/** The α–β model of one tp collective of a `bytes` tensor over t workers (src/schedule/tp-cost.ts: α + (t − 1) · bytes / β), ms. */
export function tpModelMs(fit: AlphaBeta, bytes: number, t: number): number {
  return tpExchangeTime(bytes, t, fit.latencyMs, fit.bytesPerMs);
}

/** α and β of one round of direct exchange fitted to `(bytes, ms)` points of a group of t (bytes: the tensor each member posts). */
export function fitTpExchange(points: readonly { bytes: number; ms: number }[], t: number): AlphaBeta {
  // The ring's fit over 2 workers is the line time = 2α' + bytes/β (allreduce-fit.ts: relative least squares, α, β ≥ 0):
  // with bytes the (t − 1) parts a member sends, the round's α is its 2α'.
  const ring = fitAlphaBeta(points.map((p) => ({ bytes: (t - 1) * p.bytes, ms: p.ms })), 2);
  return { latencyMs: 2 * ring.latencyMs, bytesPerMs: ring.bytesPerMs };
}

export type TpMicroRow = TpAllReduceBenchRow & { modelMs: number; block: boolean };

/** The tp all-reduce micro-benchmark at t = 2 and 4: the sweep plus the block sizes, each beside its α–β fit. */
export async function measureTpAllReduce(ctx: GptBenchContext, blockBytes: readonly number[], repeats: number): Promise<{ rows: TpMicroRow[]; fits: Record<number, AlphaBeta> }> {
  const sizes = [...new Set([...TP_SWEEP_BYTES, ...blockBytes])].sort((a, b) => a - b);
  const rows: TpMicroRow[] = [];
  const fits: Record<number, AlphaBeta> = {};
  for (const t of [2, 4]) {
    const r = await ctx.page.evaluate(({ t, bytes, repeats }) => window.pipelabBench.tpAllReduce(t, bytes, repeats), { t, bytes: sizes, repeats });
    const fit = fitTpExchange(r.map((x) => ({ bytes: x.bytes, ms: x.medianMs })), t);
    fits[t] = fit;
    for (const x of r) {
      const modelMs = tpModelMs(fit, x.bytes, t);
      rows.push({ ...x, modelMs, block: blockBytes.includes(x.bytes) });
      ctx.log(`tp all-reduce t=${t} ${(x.bytes / 1024).toFixed(1)} KiB${blockBytes.includes(x.bytes) ? ' (a GPT block)' : ''}: ${x.medianMs.toFixed(3)} ms (${x.sendMBps.toFixed(0)} MB/s sent per member), α–β model ${modelMs.toFixed(3)} ms`);
    }
    ctx.log(`tp all-reduce t=${t}: α = ${fit.latencyMs.toFixed(3)} ms per round, β = ${(fit.bytesPerMs / 1000).toFixed(0)} MB/s`);
  }
  return { rows, fits };
}

export type TpGridRow = ScheduleBenchRow & {
  shape: TpShape;
  /** (simulated − measured) / measured of the step. */
  error: number;
  /** The same of the compute-only makespan (the pipeline without the gradient all-reduce). */
  computeError: number;
  /**
   * Each tensor size a worker's tp collectives sent in the run (the tensor, bytes: what a member posts to each other
   * one), their median own time in the run (the report's: the member that waited least; the GPU readback and upload
   * included) and the micro-benchmark's α–β model of the exchange alone at that size, ms.
   */
  tpSizes?: { bytes: number; runMs: number; benchMs: number }[];
};

/** A measured row with its shape, its prediction errors and the micro-benchmark's model at each of its tp sizes. */
export function tpRow(r: ScheduleBenchRow, fits: Record<number, AlphaBeta>): TpGridRow {
  const m = r.mesh;
  const t = r.tp?.t ?? 1;
  const shape: TpShape = { dp: m?.dp ?? 1, tp: t, pp: r.p, ...(r.sequenceParallel ? { sp: true as const } : {}) };
  const measured = m?.stepMs ?? r.makespanMeasuredMs;
  const simulated = m?.stepSimulatedMs ?? r.makespanSimulatedMs;
  const fit = fits[t];
  const computeError = r.makespanMeasuredMs > 0 ? (r.makespanSimulatedMs - r.makespanMeasuredMs) / r.makespanMeasuredMs : 0;
  // The report's points are bytes sent, (t − 1) copies of the tensor.
  const tpSizes = r.tp && fit ? r.tp.points.map((p) => ({ bytes: p.bytes / (t - 1), runMs: p.ms, benchMs: tpModelMs(fit, p.bytes / (t - 1), t) })) : undefined;
  return { ...r, shape, error: measured > 0 ? (simulated - measured) / measured : 0, computeError, ...(tpSizes ? { tpSizes } : {}) };
}

export const shapeLabel = (s: TpShape) => `${s.dp}×${s.tp}×${s.pp}${s.sp ? ' + SP' : ''}`;
const pct = (v: number) => `${v >= 0 ? '+' : ''}${(100 * v).toFixed(1)}%`;

/** The rows whose prediction misses the target, said in words with what the row shows of why (for the notes). */
export function tpMisses(rows: readonly TpGridRow[]): string {
  const miss = rows.filter((r) => Math.abs(r.error) > TP_PREDICTION_TARGET);
  if (miss.length === 0) return `every row's simulated step is within ${100 * TP_PREDICTION_TARGET}% of the measured one (worst ${pct(Math.max(0, ...rows.map((r) => Math.abs(r.error))))}).`;
  return `${miss.length} of ${rows.length} rows miss the ${100 * TP_PREDICTION_TARGET}% target: ${miss.map((r) => `${r.model} ${shapeLabel(r.shape)} ${pct(r.error)}${missReason(r)}`).join('; ')}.`;
}

/** The parts of a missed row: the compute-only makespan's error, and the tp collectives' share of the step measured and simulated. */
function missReason(r: TpGridRow): string {
  const parts = [`compute-only makespan ${pct(r.computeError)}`];
  const tp = r.tp;
  if (tp) {
    const waits = tp.perStage.map((s) => s.waitMs).filter((w) => w > 0);
    parts.push(`tp collectives ${(100 * tp.share).toFixed(1)}% of the step measured (${(100 * tp.ownShare).toFixed(1)}% their own time, the rest waits for slower members${waits.length ? `, ${Math.max(...waits).toFixed(1)} ms per collective at most` : ''}), ${tp.simulated ? `${(100 * tp.simulated.share).toFixed(1)}% simulated` : 'not simulated'}`);
  }
  return ` (${parts.join('; ')})`;
}

/**
 * What a tp collective costs in the run against the exchange alone: at each row's largest size, the run's own time
 * (timed from the device's end of the kernels before it: tp-collective.ts) over the micro-benchmark's model; the
 * words follow the ratio (the rest of a collective in the run: reading the tensor off the device, the message
 * between two busy workers, the upload of the result).
 */
export function exchangeNote(rows: readonly TpGridRow[], fits: Record<number, AlphaBeta>): string {
  const sized = rows.filter((r) => r.tpSizes?.length).map((r) => ({ r, x: r.tpSizes!.reduce((a, b) => (b.bytes > a.bytes ? b : a)) }));
  const ratio = ({ x }: (typeof sized)[number]): number => x.runMs / Math.max(x.benchMs, 1e-9);
  const parts = sized.map((s) => `${s.r.model} ${shapeLabel(s.r.shape)} ${(s.x.bytes / 1024).toFixed(0)} KiB: ${s.x.runMs.toFixed(2)} ms in the run, ${s.x.benchMs.toFixed(3)} ms exchanged alone (${ratio(s).toFixed(1)}×)`);
  const f = Object.entries(fits).map(([t, a]) => `t = ${t}: α = ${a.latencyMs.toFixed(3)} ms`).join(', ');
  if (!sized.length) return `no tp row measured a collective (the exchange alone: ${f}).`;
  const median = sized.map(ratio).sort((a, b) => a - b)[Math.floor(sized.length / 2)];
  const reading =
    median >= 2
      ? `a collective in the run takes ${median.toFixed(1)}× the exchange alone (median over the rows): the rest is reading the tensor off the device, the message between busy workers and the upload of the result`
      : `a collective in the run takes about the exchange alone (${median.toFixed(1)}×, median over the rows): reading the tensor back and uploading the result add little`;
  return `the tp collectives, each timed from the end of the kernels before it: ${parts.join('; ')}. The MessagePort exchange alone (${f}); ${reading}. Paid 2 times per GPT block forward and 2 backward (8 in all with sequence parallelism), every micro-batch.`;
}

export async function tpSuite(ctx: GptBenchContext): Promise<GptSuiteResult> {
  const grid = tpGrid();
  // The GPT's block activation (rows · C float32) is the same in every shape: one micro-batch, the same width.
  const gpt = grid.find((c) => c.model === 'gpt');
  const block = gpt ? await ctx.page.evaluate((c) => window.pipelabBench.tpBlockBytes(c), gpt) : null;
  const blocks = block ? [block.bytes] : [];
  const micro = await measureTpAllReduce(ctx, blocks, ctx.quick ? 5 : 15);
  const steps = ctx.quick ? 4 : 8;
  const rows: TpGridRow[] = [];
  for (const c of grid) {
    const measured: ScheduleBenchRow = await ctx.page.evaluate(({ c, steps }) => window.pipelabBench.schedule(c, steps), { c, steps });
    const r = tpRow(measured, micro.fits);
    const tp = r.tp;
    ctx.log(
      `tp ${r.model} ${shapeLabel(r.shape)} m=${r.m}: step ${(r.mesh?.stepMs ?? r.makespanMeasuredMs).toFixed(1)} ms measured, ${(r.mesh?.stepSimulatedMs ?? r.makespanSimulatedMs).toFixed(1)} simulated (${pct(r.error)}; compute-only makespan ${pct(r.computeError)})` +
        (tp ? `; ${tp.perWorker.count.toFixed(0)} tp collectives per worker (${tp.perStage.map((s) => s.perLayer.toFixed(1)).join(', ')} per split layer by stage), ${(100 * tp.share).toFixed(1)}% of the step (${tp.simulated ? (100 * tp.simulated.share).toFixed(1) : 'n/a'}% simulated); own ms by size ${(r.tpSizes ?? []).map((x) => `${(x.bytes / 1024).toFixed(1)} KiB ${x.runMs.toFixed(2)} (bench ${x.benchMs.toFixed(3)})`).join(', ')}` : ''),
    );
    rows.push(r);
  }
  const fitText = Object.entries(micro.fits).map(([t, f]) => `t = ${t}: α = ${f.latencyMs.toFixed(3)} ms, β = ${(f.bytesPerMs / 1000).toFixed(0)} MB/s`).join('; ');
  return {
    rows,
    meta: { fits: micro.fits, micro: micro.rows, block, target: TP_PREDICTION_TARGET },
    notes: [
      `the same model (${LAYERS} blocks) and the same global batch (${GLOBAL_MICROBATCHES} micro-batches of 64 rows for the char-MLP, 8 sequences for the GPT) on ${TP_WORKERS} workers as dp × tp × pp: dp replicas of a pp-stage pipeline whose stages are each split over tp workers (Megatron's column/row split of the GPT block, the char-MLP's column-parallel hidden linears), each replica ${GLOBAL_MICROBATCHES}/dp micro-batches, 1F1B; ${steps} steps, the first left out of the means.`,
      `step: measured, the mesh's first start to its last end; simulated: the run report's own (src/runtime/report/report.ts, report-tp.ts): the simulator fed with the run's mean op times less the own time of the tp collectives inside each action (the waits for slower members stay in them), the tp collectives priced on top by the α–β line fitted to the run's own collective times (src/schedule/tp-cost.ts), with dp > 1 the α–β ring fitted to the run's own gradient all-reduces. ${tpMisses(rows)}`,
      exchangeNote(rows, micro.fits),
      `tp figures: the run report's (src/runtime/report/report-tp.ts): collectives per split layer and micro-batch (Megatron's 4 per GPT block: 2 all-reduces forward, 2 backward; 2 per column-parallel MLP linear: an all-gather forward, an all-reduce backward; + SP, sequence parallelism: 8 per GPT block, 4 forward — a gather of rows before each column-parallel linear, a reduce-scatter after each row-parallel one — and 4 backward, plus the embedding's and head's row gathers and each stage's sum of its LayerNorms' gradients once a step), the share of the step a worker spent in them measured and simulated, and per tensor size the own time of one in the run (the member that waited least: the GPU readback, the exchange, the upload) beside the micro-benchmark's α–β model of the exchange alone at that size; the run's own α–β fit beside the micro-benchmark's.`,
      `tp all-reduce micro-benchmark: t dedicated workers (src/bench/ring-bench-worker.ts), a MessageChannel between every pair, run the runtime's TpChannel (src/runtime/comm/tp-collective.ts: each member posts its whole tensor to every other one and sums the t parts in member order) on float32 tensors of 1 KiB … 1 MiB and at the GPT's block size (rows · C · 4${block ? ` = ${block.rows} · ${block.width} · 4 = ${(block.bytes / 1024).toFixed(0)} KiB` : ''}); a repetition (up to 64 collectives back to back for the small tensors, about 256 KiB sent, timed together: the page's clock has a 0.1 ms grain) is timed on each member, the slowest member's kept; median of ${ctx.quick ? 5 : 15} repetitions after 2 untimed. α–β fit of one round of direct exchange (src/plan/allreduce-fit.ts's relative least squares; the model of src/schedule/tp-cost.ts): time = α + (t − 1) · bytes / β; ${fitText}.`,
    ],
  };
}
