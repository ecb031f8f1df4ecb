/**
 * The Compare preset "dp × pp at 8 workers" (where tp does not fit the Train model; else DpTpPpPanel): one row per shape (1×8, 2×4,
 * 4×2, 8×1) with the same model, global batch and micro-batch size; bubble,
 * all-reduce share and step time measured on the workers beside the
 * simulator's (measured op times, measured all-reduce), memory per worker,
 * and a sentence read off the measured numbers.
 */
import { useMemo } from 'react';
import { DP_PP_BATCH, DP_PP_MICROBATCH_ROWS, DP_PP_WORKERS, dpPpSentence, dpPpShapes, measuredFigures, memoryPerWorker, simulatedFigures, type DpPpRow } from '../../state/compare/index.ts';
import { measureDpPp } from '../../state/compare/index.ts';
import { PresetMeasure } from './PresetMeasure.tsx';
import { MeshShapesTable, useShapeRows } from './MeshShapesTable.tsx';
import { usePipeLab } from '../../state/store/index.ts';
import { dpTpPpShapes } from '../../state/compare/index.ts';
import { DpTpPpPanel } from './DpTpPpPanel.tsx';

/** The preset on the Train view's model: dp × tp × pp where tp fits it, else dp × pp on the character MLP. */
export function DpPpPanel({ steps }: { steps: number }) {
  const config = usePipeLab((s) => s.config);
  const mesh = useMemo(() => dpTpPpShapes(config, steps), [config, steps]);
  return mesh ? <DpTpPpPanel steps={steps} mesh={mesh} /> : <DpPpTable steps={steps} />;
}

function DpPpTable({ steps }: { steps: number }) {
  const shapes = useMemo(() => dpPpShapes(steps), [steps]);
  const { rows, comparing, why } = useShapeRows(shapes, (s) => `${s.key}: ${s.dp} replica${s.dp > 1 ? 's' : ''} × ${s.ranks} rank${s.ranks > 1 ? 's' : ''}`, {
    measured: measuredFigures,
    simulated: simulatedFigures,
    memory: memoryPerWorker,
  });
  const done: DpPpRow[] = rows.flatMap((r) => (r.report && r.measured && r.memory !== null ? [{ key: r.key, dp: r.shape.dp, ranks: r.shape.ranks, measured: r.measured, memoryBytes: r.memory }] : []));
  const sentence = done.length === shapes.length ? dpPpSentence(done) : null;

  return (
    <section className="panel" aria-labelledby="dppp-title" data-testid="dppp-table">
      <h2 id="dppp-title">
        dp × pp at {DP_PP_WORKERS} workers
      </h2>
      <p className="muted small">
        The same character MLP, global batch {DP_PP_BATCH} and micro-batches of {DP_PP_MICROBATCH_ROWS} rows on {DP_PP_WORKERS} workers, as replicas × pipeline
        ranks: each replica takes {DP_PP_BATCH} / dp rows, so it runs {shapes.map((s) => s.config.microbatches).join(', ')} micro-batches. 1F1B, {steps} steps each.
      </p>
      <PresetMeasure label="▶ Measure the four shapes" comparing={comparing} why={why} onMeasure={() => void measureDpPp(shapes)} />
      <MeshShapesTable
        axes="dp×pp"
        rows={rows}
        tp={false}
        memoryTitle="The most any worker held: its stage's weights, its optimizer state and the most activations its stage stashed"
        sentence={sentence}
        explain="Before measuring, the simulated bubble is the schedule’s with F = 1, B = 2. Measured: the mean over the steps after the first; simulated: the same schedule played with the measured op times and a ring all-reduce on the bandwidth the run measured."
      />
    </section>
  );
}
