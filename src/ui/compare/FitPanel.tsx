/**
 * The Compare preset "Make it fit": a GPT that its memory budget refuses, run as is and with each way to fit
 * (recomputation, ZeRO-3, swapping, optimizer offload), measured one after another: a table of what each worker's
 * device held by kind against the budget, the host's share, the budget's verdict on its plan, the step time and the
 * final loss; a sentence read off the numbers; each run's timeline (swapping's and offload's intervals fill it).
 */
import { useMemo } from 'react';
import { FIT_PRESET_BUDGET_MIB, fitFigures, fitSentence, fitShapes, measureDpPp } from '../../state/compare/index.ts';
import { PresetErrors, PresetMeasure } from './PresetMeasure.tsx';
import { usePresetRuns } from './use-preset-runs.ts';
import { bytes, ms } from '../timeline/format.ts';
import { TimelinePanel } from '../timeline/TimelinePanel.tsx';

export function FitPanel({ steps }: { steps: number }) {
  const shapes = useMemo(() => fitShapes(steps), [steps]);
  const { rows, done, allDone, comparing, why, status, mode, setMode } = usePresetRuns(shapes, fitFigures);
  const sentence = allDone ? fitSentence(done) : null;
  const cfg = shapes[0].config;
  const budget = FIT_PRESET_BUDGET_MIB * 1024 * 1024;

  return (
    <section className="panel" aria-labelledby="fit-title" data-testid="fit-table">
      <h2 id="fit-title">Make it fit: {FIT_PRESET_BUDGET_MIB} MiB a worker</h2>
      <p className="muted small">
        A GPT ({cfg.layers} blocks of width {cfg.width}, {cfg.heads} heads, {cfg.blockSize} positions) on {cfg.ranks} ranks, GPipe, batch {cfg.batchSize} in {cfg.microbatches} micro-batches, AdamW,
        {steps} steps: as is its plan passes the budget of {bytes(budget)}, so a run with the budget is refused. Each way to fit runs here without the budget, so that every one is measured; the
        budget’s verdict on its plan stands beside it.
      </p>
      <PresetMeasure label="▶ Measure the five runs" comparing={comparing} why={why} onMeasure={() => void measureDpPp(shapes)} />
      <div className="table-scroll" tabIndex={0} role="region" aria-label="Make it fit table (scrolls sideways on narrow windows)">
        <table className="numbers">
          <thead>
            <tr>
              <th scope="col">run</th>
              <th scope="col" title="the budget's plan for the run, and whether it admits it">plan, budget says</th>
              <th scope="col" title="the most one worker's device held: weights + gradients + optimizer state + stash + transient">device peak</th>
              <th scope="col">weights</th>
              <th scope="col">gradients</th>
              <th scope="col">optimizer</th>
              <th scope="col">stash</th>
              <th scope="col" title="optimizer state offloaded and stashes swapped out, the most one worker held">host</th>
              <th scope="col">step, ms</th>
              <th scope="col">final loss</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.shape.key} data-testid={`fit-row-${r.shape.key}`}>
                <th scope="row" className="nowrap">
                  {r.shape.key}
                </th>
                <td>
                  {bytes(r.shape.planned)}, {r.shape.admitted ? 'fits' : 'refused'}
                </td>
                <td className={r.f && r.f.peak > budget ? 'strong warn' : 'strong'}>{r.f ? bytes(r.f.peak) : status(r)}</td>
                <td>{r.f ? bytes(r.f.weights) : '—'}</td>
                <td>{r.f ? bytes(r.f.grads) : '—'}</td>
                <td>{r.f ? bytes(r.f.optimizer) : '—'}</td>
                <td>{r.f ? bytes(r.f.stash) : '—'}</td>
                <td>{r.f ? bytes(r.f.host) : '—'}</td>
                <td>{ms(r.f?.stepMs)}</td>
                <td>{r.f ? r.f.loss.toFixed(6) : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {sentence ? (
        <p className="dppp-sentence" data-testid="fit-sentence">
          {sentence}
        </p>
      ) : (
        <p className="muted small">Device bytes are the most any worker held, by kind (4 bytes a value); host bytes are apart.</p>
      )}
      <PresetErrors rows={rows.map((r) => ({ key: r.shape.key, status: r.m?.status, error: r.m?.error }))} />
      {rows.map((r) =>
        r.report ? (
          <TimelinePanel key={r.shape.key} title={r.shape.key} measured={r.report.timeline} simulated={r.report.simulatedTimeline} mode={mode} onModeChange={setMode} testId={`fit-timeline-${r.shape.key}`} />
        ) : null,
      )}
    </section>
  );
}
