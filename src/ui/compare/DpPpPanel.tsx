/**
 * The Compare preset "dp × pp at 8 workers": one row per shape (1×8, 2×4,
 * 4×2, 8×1) with the same model, global batch and micro-batch size; bubble,
 * all-reduce share and step time measured on the workers beside the
 * simulator's (measured op times, measured all-reduce), memory per worker,
 * and a sentence read off the measured numbers.
 */
import { useMemo } from 'react';
import { cannotMeasureReason } from '../../state/compare.ts';
import { predict } from '../../state/derived.ts';
import { DP_PP_BATCH, DP_PP_MICROBATCH_ROWS, DP_PP_WORKERS, dpPpSentence, dpPpShapes, measuredFigures, memoryPerWorker, simulatedFigures, type DpPpRow } from '../../state/dp-pp-preset.ts';
import { measureDpPp, useDpPpRuns } from '../../state/dp-pp-measure.ts';
import { PresetErrors, PresetMeasure } from './PresetMeasure.tsx';
import { usePipeLab } from '../../state/store.ts';
import { bytes, ms, pct } from '../timeline/format.ts';
import { TimelinePanel } from '../timeline/TimelinePanel.tsx';

export function DpPpPanel({ steps }: { steps: number }) {
  const shapes = useMemo(() => dpPpShapes(steps), [steps]);
  const runs = useDpPpRuns((s) => s.runs);
  const session = usePipeLab((s) => s.session);
  // Re-render when WebGPU's state is known and when the session changes (cannotMeasureReason reads both).
  usePipeLab((s) => s.webgpu);
  const mode = usePipeLab((s) => s.timelineMode);
  const setMode = usePipeLab((s) => s.setTimelineMode);
  const predicted = useMemo(() => shapes.map((s) => predict(s.config)?.result.bubble ?? null), [shapes]);
  const rows = shapes.map((s, i) => {
    const m = runs[s.key];
    const report = m?.status === 'done' ? m.report : null;
    return {
      shape: s,
      m,
      report,
      measured: report ? measuredFigures(report) : null,
      simulated: report ? simulatedFigures(report) : null,
      memory: report ? memoryPerWorker(report) : null,
      predictedBubble: predicted[i],
    };
  });
  const done: DpPpRow[] = rows.flatMap((r) => (r.report && r.measured && r.memory !== null ? [{ key: r.shape.key, dp: r.shape.dp, ranks: r.shape.ranks, measured: r.measured, memoryBytes: r.memory }] : []));
  const sentence = done.length === shapes.length ? dpPpSentence(done) : null;
  const why = session === 'comparing' ? null : cannotMeasureReason();
  const status = (r: (typeof rows)[number]) => (r.m?.status === 'running' ? 'running…' : r.m?.status === 'queued' ? 'queued' : r.m?.status === 'error' ? 'failed' : '—');

  return (
    <section className="panel" aria-labelledby="dppp-title" data-testid="dppp-table">
      <h2 id="dppp-title">
        dp × pp at {DP_PP_WORKERS} workers
      </h2>
      <p className="muted small">
        The same character MLP, global batch {DP_PP_BATCH} and micro-batches of {DP_PP_MICROBATCH_ROWS} rows on {DP_PP_WORKERS} workers, as replicas × pipeline
        ranks: each replica takes {DP_PP_BATCH} / dp rows, so it runs {shapes.map((s) => s.config.microbatches).join(', ')} micro-batches. 1F1B, {steps} steps each.
      </p>
      <PresetMeasure label="▶ Measure the four shapes" comparing={session === 'comparing'} why={why} onMeasure={() => void measureDpPp(shapes)} />
      <div className="table-scroll" tabIndex={0} role="region" aria-label="dp × pp table (scrolls sideways on narrow windows)">
        <table className="numbers">
          <thead>
            <tr>
              <th scope="col" className="nowrap">dp×pp</th>
              <th scope="col">micro-batches per replica</th>
              <th scope="col">bubble, measured</th>
              <th scope="col">bubble, simulated</th>
              <th scope="col">all-reduce share, measured</th>
              <th scope="col">all-reduce share, simulated</th>
              <th scope="col">step, ms measured</th>
              <th scope="col">step, ms simulated</th>
              <th scope="col" title="The most any worker held: its stage's weights, its optimizer state and the most activations its stage stashed">
                memory per worker
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.shape.key} data-testid={`dppp-row-${r.shape.key}`}>
                <th scope="row">{r.shape.key}</th>
                <td>{r.shape.config.microbatches}</td>
                <td className="strong">{r.measured ? pct(r.measured.bubble) : status(r)}</td>
                <td>{pct(r.simulated?.bubble ?? r.predictedBubble)}</td>
                <td>{r.measured ? pct(r.measured.allReduceShare) : '—'}</td>
                <td>{pct(r.simulated?.allReduceShare)}</td>
                <td className="strong">{ms(r.measured?.stepMs)}</td>
                <td>{ms(r.simulated?.stepMs)}</td>
                <td>{r.memory !== null ? bytes(r.memory) : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {sentence ? (
        <p className="dppp-sentence" data-testid="dppp-sentence">
          {sentence}
        </p>
      ) : (
        <p className="muted small">
          Before measuring, the simulated bubble is the schedule’s with F = 1, B = 2. Measured: the mean over the steps after the first; simulated: the same schedule played with
          the measured op times and a ring all-reduce on the bandwidth the run measured.
        </p>
      )}
      <PresetErrors rows={rows.map((r) => ({ key: r.shape.key, status: r.m?.status, error: r.m?.error }))} />
      {rows.map((r) =>
        r.report ? (
          <TimelinePanel
            key={r.shape.key}
            title={`${r.shape.key}: ${r.shape.dp} replica${r.shape.dp > 1 ? 's' : ''} × ${r.shape.ranks} rank${r.shape.ranks > 1 ? 's' : ''}`}
            measured={r.report.timeline}
            simulated={r.report.simulatedTimeline}
            mode={mode}
            onModeChange={setMode}
            testId={`dppp-timeline-${r.shape.key}`}
          />
        ) : null,
      )}
    </section>
  );
}
