/**
 * The table, sentence and timelines the mesh presets share (DpPpPanel: dp × pp; DpTpPpPanel: dp × tp × pp):
 * one row per shape, measured beside the simulator (bubble, all-reduce share, with tp the tp collectives'
 * share, step time), memory per worker, the runs that failed, and each shape's timeline once measured.
 */
import { useMemo } from 'react';
import type { DpPpFigures } from '../../state/compare/index.ts';
import type { RunReport } from '../../runtime/report/index.ts';
import type { RunConfig } from '../../config/run-config.ts';
import { cannotMeasureReason } from '../../state/compare/index.ts';
import { predictRun } from '../../state/store/index.ts';
import { useDpPpRuns, type DpPpMeasurement as Measurement } from '../../state/compare/index.ts';
import { usePipeLab } from '../../state/store/index.ts';
import { PresetErrors } from './PresetMeasure.tsx';
import { bytes, ms, pct } from '../timeline/format.ts';
import { TimelinePanel } from '../timeline/TimelinePanel.tsx';

export interface ShapeRow {
  key: string;
  /** The shape's timeline title, e.g. "2×2×2: 2 replicas × 2 tp × 2 ranks". */
  title: string;
  microbatches: number;
  m: Measurement | undefined;
  report: RunReport | null;
  measured: Figures | null;
  simulated: Figures | null;
  memory: number | null;
  predictedBubble: number | null;
}

type Figures = DpPpFigures & { tpShare?: number };

/**
 * The preset's rows as its runs stand (queued, running, done with a report), read with the preset's own figures,
 * and whether the workers are free to measure (`why` says why not).
 */
export function useShapeRows<S extends { key: string; config: RunConfig }>(
  shapes: readonly S[],
  title: (s: S) => string,
  figures: { measured(r: RunReport): Figures; simulated(r: RunReport): Figures; memory(r: RunReport): number | null },
): { rows: (ShapeRow & { shape: S })[]; comparing: boolean; why: string | null } {
  const runs = useDpPpRuns((s) => s.runs);
  const session = usePipeLab((s) => s.session);
  // Re-render when WebGPU's state is known and when the session changes (cannotMeasureReason reads both).
  usePipeLab((s) => s.webgpu);
  const predicted = useMemo(() => shapes.map((s) => predictRun(s.config)?.result.bubble ?? null), [shapes]);
  const rows = shapes.map((s, i) => {
    const m = runs[s.key];
    const report = m?.status === 'done' ? m.report : null;
    return {
      shape: s,
      key: s.key,
      title: title(s),
      microbatches: s.config.microbatches,
      m,
      report,
      measured: report ? figures.measured(report) : null,
      simulated: report ? figures.simulated(report) : null,
      memory: report ? figures.memory(report) : null,
      predictedBubble: predicted[i],
    };
  });
  const comparing = session === 'comparing';
  return { rows, comparing, why: comparing ? null : cannotMeasureReason() };
}

interface Props {
  /** The shape column's heading and the table's name: "dp×pp" or "dp×tp×pp". */
  axes: string;
  rows: readonly ShapeRow[];
  /** Whether to show the tp collectives' share. */
  tp: boolean;
  memoryTitle: string;
  sentence: string | null;
  /** What the figures are, shown until the sentence can be read off them. */
  explain: string;
}

function status(m: Measurement | undefined): string {
  return m?.status === 'running' ? 'running…' : m?.status === 'queued' ? 'queued' : m?.status === 'error' ? 'failed' : '—';
}

export function MeshShapesTable({ axes, rows, tp, memoryTitle, sentence, explain }: Props) {
  const mode = usePipeLab((s) => s.timelineMode);
  const setMode = usePipeLab((s) => s.setTimelineMode);
  return (
    <>
      <div className="table-scroll" tabIndex={0} role="region" aria-label={`${axes.replaceAll('×', ' × ')} table (scrolls sideways on narrow windows)`}>
        <table className="numbers">
          <thead>
            <tr>
              <th scope="col" className="nowrap">{axes}</th>
              <th scope="col">micro-batches per replica</th>
              <th scope="col">bubble, measured</th>
              <th scope="col">bubble, simulated</th>
              <th scope="col">all-reduce share, measured</th>
              <th scope="col">all-reduce share, simulated</th>
              {tp && (
                <>
                  <th scope="col" title="The tp exchanges themselves (each collective's least-waiting member), as a share of the step">
                    tp share, measured
                  </th>
                  <th scope="col" title="The tp collectives priced by the α–β line fitted to the run's own">
                    tp share, simulated
                  </th>
                </>
              )}
              <th scope="col">step, ms measured</th>
              <th scope="col">step, ms simulated</th>
              <th scope="col" title={memoryTitle}>
                memory per worker
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.key} data-testid={`dppp-row-${r.key}`}>
                <th scope="row">{r.key}</th>
                <td>{r.microbatches}</td>
                <td className="strong">{r.measured ? pct(r.measured.bubble) : status(r.m)}</td>
                <td>{pct(r.simulated?.bubble ?? r.predictedBubble)}</td>
                <td>{r.measured ? pct(r.measured.allReduceShare) : '—'}</td>
                <td>{pct(r.simulated?.allReduceShare)}</td>
                {tp && (
                  <>
                    <td>{r.measured ? pct(r.measured.tpShare) : '—'}</td>
                    <td>{pct(r.simulated?.tpShare)}</td>
                  </>
                )}
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
        <p className="muted small">{explain}</p>
      )}
      <PresetErrors rows={rows.map((r) => ({ key: r.key, status: r.m?.status, error: r.m?.error }))} />
      {rows.map((r) =>
        r.report ? (
          <TimelinePanel
            key={r.key}
            title={r.title}
            measured={r.report.timeline}
            simulated={r.report.simulatedTimeline}
            mode={mode}
            onModeChange={setMode}
            testId={`dppp-timeline-${r.key}`}
          />
        ) : null,
      )}
    </>
  );
}
