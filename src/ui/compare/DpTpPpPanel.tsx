/**
 * The Compare preset grown to the third axis, "dp × tp × pp at 8 workers"
 * (state/compare/dp-tp-pp-preset.ts): the Train model's shapes of 8 workers side by
 * side, each row measured beside the simulator fed with the run's own op times,
 * its all-reduce's α–β ring and its tp collectives' α–β line; the tp
 * collectives' share of the step (the exchanges themselves), memory per worker,
 * the shapes that do not fit and why, and a sentence read off the measured numbers.
 */
import { DP_PP_WORKERS } from '../../state/compare/index.ts';
import { meshMeasured, meshMemoryPerWorker, meshSentence, meshSimulated, type MeshPresetShapes, type MeshRow } from '../../state/compare/index.ts';
import { measureDpPp } from '../../state/compare/index.ts';
import { PresetMeasure } from './PresetMeasure.tsx';
import { MeshShapesTable, useShapeRows } from './MeshShapesTable.tsx';

export function DpTpPpPanel({ steps, mesh }: { steps: number; mesh: MeshPresetShapes }) {
  const { shapes, skipped, microbatchRows } = mesh;
  const { rows, comparing, why } = useShapeRows(shapes, (s) => `${s.key}: ${s.dp} replica${s.dp > 1 ? 's' : ''} × ${s.tp} tp × ${s.ranks} rank${s.ranks > 1 ? 's' : ''}`, {
    measured: meshMeasured,
    simulated: meshSimulated,
    memory: meshMemoryPerWorker,
  });
  const done: MeshRow[] = rows.flatMap((r) =>
    r.report && r.measured ? [{ key: r.key, dp: r.shape.dp, tp: r.shape.tp, ranks: r.shape.ranks, measured: { ...r.measured, tpShare: r.measured.tpShare ?? 0 }, ...(r.report.tensorParallel ? { tpFigures: r.report.tensorParallel } : {}) }] : [],
  );
  const sentence = done.length === shapes.length ? meshSentence(done) : null;
  const cfg = shapes[0].config;
  const model = cfg.model === 'gpt' ? `GPT (${cfg.layers} blocks, ${cfg.heads} heads, width ${cfg.width})` : `${cfg.model === 'char-mlp' ? 'character MLP' : 'MLP'} (${cfg.layers} hidden layers of ${cfg.hidden})`;

  return (
    <section className="panel" aria-labelledby="dppp-title" data-testid="dppp-table">
      <h2 id="dppp-title">
        dp × tp × pp at {DP_PP_WORKERS} workers
      </h2>
      <p className="muted small">
        The Train view’s {model}, global batch {cfg.batchSize} and micro-batches of {microbatchRows} rows on {DP_PP_WORKERS} workers as replicas × tensor-parallel workers ×
        pipeline ranks (dp×tp×pp): each replica takes {cfg.batchSize} / dp rows; each stage’s layers are split over its tp workers, which sum their activations every layer
        {cfg.sequenceParallel ? ' (with sequence parallelism, as the Train view has it: reduce-scattered and gathered, each tp worker holding its block of the token rows between layers)' : ''}.
        1F1B, {steps} steps each.
      </p>
      <PresetMeasure label={`▶ Measure the ${shapes.length} shapes`} comparing={comparing} why={why} onMeasure={() => void measureDpPp(shapes)} />
      {skipped.length > 0 && <p className="muted small" data-testid="dppp-skipped">Not run: {skipped.join('; ')}.</p>}
      <MeshShapesTable
        axes="dp×tp×pp"
        rows={rows}
        tp
        memoryTitle="The most any worker held: its weights (a tp worker its slice), its optimizer state and its stashed activations"
        sentence={sentence}
        explain="Before measuring, the simulated bubble is the schedule’s with F = 1, B = 2. Measured: the mean over the steps after the first; simulated: the same schedule played with each op’s measured compute, a ring all-reduce on the bandwidth the run measured and each tp collective at α + (t − 1)·bytes/β fitted to the run’s own."
      />
    </section>
  );
}
