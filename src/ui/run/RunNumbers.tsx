/**
 * Measured vs simulated vs closed form, side by side: makespan, bubble,
 * samples per second, and the peak activations each stage held.
 */
import { useMemo } from 'react';
import type { RunReport } from '../../runtime/report-types.ts';
import type { RunConfig } from '../../runtime/run-config.ts';
import { scheduleKind, timelineStats, type Timeline } from '../../schedule/index.ts';
import { measuredPeakMicrobatches, type Prediction } from '../../state/derived.ts';
import { bytes, ms, num, pct } from '../timeline/format.ts';

export interface RunNumbersProps {
  config: RunConfig;
  measured: Timeline | null;
  simulated: Timeline | null;
  prediction: Prediction | null;
  report: RunReport | null;
}

export function RunNumbers({ config, measured, simulated, prediction, report }: RunNumbersProps) {
  const m = useMemo(() => (measured ? timelineStats(measured) : null), [measured]);
  const s = useMemo(() => (simulated ? timelineStats(simulated) : null), [simulated]);
  const heldMeasured = useMemo(() => (measured ? measuredPeakMicrobatches(measured) : null), [measured]);
  const heldSimulated = useMemo(() => (simulated ? measuredPeakMicrobatches(simulated) : null), [simulated]);
  const closed = prediction?.closed ?? null;
  const closedPeak = prediction?.closedPeak ?? null;
  const predictedPeak = prediction?.result.memory.map((x) => x.peakMicrobatches) ?? null;

  const makespanMeasured = report?.makespanMs.measured ?? m?.makespan ?? null;
  const makespanSimulated = report?.makespanMs.simulated ?? s?.makespan ?? null;
  const bubbleMeasured = report?.bubble.measured ?? m?.bubble ?? null;
  const bubbleSimulated = report?.bubble.simulated ?? s?.bubble ?? prediction?.result.bubble ?? null;
  const bubbleClosed = report?.bubble.closedForm ?? closed?.bubble ?? null;
  const sps = (makespan: number | null) => (makespan && makespan > 0 ? (config.batchSize / makespan) * 1000 : null);
  const ranks = (measured ?? simulated ?? prediction?.result.timeline)?.ranks ?? config.ranks;
  const stagesPerRank = scheduleKind(config.schedule).virtualFor(config.virtual);
  const stageBytes = (r: number): number | null => {
    if (!report) return null;
    let sum = 0;
    let any = false;
    for (let st = 0; st < config.ranks * stagesPerRank; st++) {
      if (report.schedule.stageToRank[st] !== r) continue;
      const b = report.peakStashBytes[st];
      if (b !== undefined) {
        sum += b;
        any = true;
      }
    }
    return any ? sum : null;
  };

  return (
    <section className="panel" aria-labelledby="numbers-title" data-testid="run-numbers">
      <h2 id="numbers-title">Measured · simulated · closed form</h2>
      <table className="numbers">
        <thead>
          <tr>
            <th scope="col" />
            <th scope="col">measured</th>
            <th scope="col">simulated</th>
            <th scope="col">closed form</th>
          </tr>
        </thead>
        <tbody>
          <tr>
            <th scope="row">{report ? "Makespan per step (mean)" : "Makespan per step"}</th>
            <td>{ms(makespanMeasured)}</td>
            <td>{simulated ? ms(makespanSimulated) : prediction ? `${num(prediction.result.makespan)} u` : '—'}</td>
            <td>{closed ? `${num(closed.makespan)} u` : '—'}</td>
          </tr>
          <tr>
            <th scope="row">Bubble</th>
            <td className="strong">{pct(bubbleMeasured)}</td>
            <td>{pct(bubbleSimulated)}</td>
            <td>
              {pct(bubbleClosed)}
              {closed && <span className="formula"> {closed.formula}</span>}
            </td>
          </tr>
          <tr>
            <th scope="row">Samples per second</th>
            <td>{num(report?.samplesPerSecond ?? sps(makespanMeasured), 0)}</td>
            <td>{simulated ? num(sps(makespanSimulated), 0) : '—'}</td>
            <td>—</td>
          </tr>
          {Array.from({ length: ranks }, (_, r) => (
            <tr key={r} className={r === 0 ? 'group-start' : ''}>
              <th scope="row">
                {r === 0 && <span className="group-label">Peak activations held</span>}
                {stagesPerRank === 1 ? `stage ${r}` : `rank ${r}`}
              </th>
              <td>
                {heldMeasured ? `${heldMeasured[r]} mb` : '—'}
                {stageBytes(r) !== null && <span className="muted"> · {bytes(stageBytes(r))}</span>}
              </td>
              <td>{heldSimulated ? `${heldSimulated[r]} mb` : predictedPeak ? `${predictedPeak[r]} mb` : '—'}</td>
              <td>{closedPeak ? `${closedPeak[r]} mb` : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="muted small">
        Simulated: the schedule played with {report || measured ? 'the measured mean time of each op' : 'unit costs (F = 1, B = 2) before a run'}, links free. Closed form:
        identical stages, F = 1, B = 2 units (u). mb: micro-batches’ activations{report ? '; bytes: the largest stash measured' : ''}.
      </p>
    </section>
  );
}
