/**
 * The Compare preset "Experts across workers" (state/compare/ep-preset.ts): one MoE GPT on 4 workers as dp 2 × pp 2,
 * ep 2 × pp 2 under 1F1B and ep 2 × pp 2 under DualPipe, measured one after another: a table of the step measured
 * beside the simulator's (fed with the run's own times), the all-to-alls' share of the step measured (all of it, and
 * the rounds themselves) beside the simulator's, the final losses; a sentence read off the numbers; each run's
 * timeline (the all-to-alls in orange on every ep worker's lane).
 */
import { useMemo } from 'react';
import { EP_PRESET_WORKERS, epRunFigures, epSentence, epShapes, measureDpPp } from '../../state/compare/index.ts';
import { PresetErrors, PresetMeasure } from './PresetMeasure.tsx';
import { usePresetRuns } from './use-preset-runs.ts';
import { ms, pct } from '../timeline/format.ts';
import { TimelinePanel } from '../timeline/TimelinePanel.tsx';

export function EpPanel({ steps }: { steps: number }) {
  const shapes = useMemo(() => epShapes(steps), [steps]);
  const { rows, done, allDone, comparing, why, status, mode, setMode } = usePresetRuns(shapes, epRunFigures);
  const sentence = allDone ? epSentence(done) : null;
  const cfg = shapes[0].config;
  const testKey = (s: (typeof shapes)[number]) => `${s.dp}-${s.ep}-${s.config.schedule}`;

  return (
    <section className="panel" aria-labelledby="ep-title" data-testid="ep-table">
      <h2 id="ep-title">Experts across workers: {EP_PRESET_WORKERS} workers</h2>
      <p className="muted small">
        An MoE GPT ({cfg.layers} blocks of width {cfg.width}, {cfg.experts} experts, top-{cfg.topK}) on {EP_PRESET_WORKERS} workers, batch {cfg.batchSize}, {steps} steps: 2 replicas × 2 ranks (every worker
        holds every expert; the replicas take half the micro-batches each), and 2 expert-parallel workers × 2 ranks (each holds half the experts; the tokens go to them by an all-to-all and come back by
        another) under 1F1B and under DualPipe. The same micro-batches throughout, so the same training.
      </p>
      <PresetMeasure label="▶ Measure the three runs" comparing={comparing} why={why} onMeasure={() => void measureDpPp(shapes)} />
      <div className="table-scroll" tabIndex={0} role="region" aria-label="Experts across workers table (scrolls sideways on narrow windows)">
        <table className="numbers">
          <thead>
            <tr>
              <th scope="col">run</th>
              <th scope="col" title="first start to last end, collectives included (the mean of the measured steps after the first)">step, ms</th>
              <th scope="col" title="the simulator fed with the run's own op times and the α–β line fitted to its all-to-alls (or ring)">simulated, ms</th>
              <th scope="col" title="a worker's time in ep-all-to-all intervals over the step, waits for the other ep worker included">all-to-all share</th>
              <th scope="col" title="each round at its least-waiting member's time: what the simulator prices">the rounds themselves</th>
              <th scope="col">simulated share</th>
              <th scope="col" title="the simulator with each forward and backward pair costing max(compute, all-to-alls): DualPipe's overlap on a GPU that runs a pair at once (the tab's workers run one action at a time)">simulated, all-to-alls overlapped, ms</th>
              <th scope="col">final loss</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.shape.key} data-testid={`ep-row-${testKey(r.shape)}`}>
                <th scope="row" className="nowrap">
                  {r.shape.key}
                </th>
                <td className="strong">{r.f ? ms(r.f.stepMs) : status(r)}</td>
                <td>{ms(r.f?.simStepMs)}</td>
                <td>{r.f ? pct(r.f.a2aShare) : '—'}</td>
                <td>{r.f ? pct(r.f.a2aOwnShare) : '—'}</td>
                <td>{r.f ? pct(r.f.simA2aShare) : '—'}</td>
                <td>{r.f && r.shape.ep > 1 ? ms(r.f.simOverlapStepMs) : '—'}</td>
                <td>{r.f ? r.f.loss.toFixed(6) : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {sentence ? (
        <p className="dppp-sentence" data-testid="ep-sentence">
          {sentence}
        </p>
      ) : (
        <p className="muted small">The shares are read off each run’s timeline: the time a worker spent in ep all-to-all intervals over the step, measured and simulated alike.</p>
      )}
      <PresetErrors rows={rows.map((r) => ({ key: r.shape.key, status: r.m?.status, error: r.m?.error }))} />
      {rows.map((r) =>
        r.report ? (
          <TimelinePanel key={r.shape.key} title={r.shape.key} measured={r.report.timeline} simulated={r.report.simulatedTimeline} mode={mode} onModeChange={setMode} testId={`ep-timeline-${testKey(r.shape)}`} />
        ) : null,
      )}
    </section>
  );
}
