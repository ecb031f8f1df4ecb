/**
 * Measured vs simulated vs closed form, side by side: makespan (ms and unit
 * time in rows of their own), bubble, samples per second, the peak
 * activations each stage held, and where the measured bubble's gap to the
 * closed form comes from. Every measured figure says whether it is the step
 * drawn above or the mean of the measured steps.
 */
import { useMemo } from 'react';
import type { RunReport } from '../../runtime/report/index.ts';
import type { RunConfig } from '../../config/run-config.ts';
import { runsAsStream, scheduleKind, timelineStats, type Timeline } from '../../schedule/index.ts';
import { computeOnly } from '../../state/store/index.ts';
import { closedMakespanInPredictionUnits } from '../../state/store/index.ts';
import { GapAttributionTable } from './GapAttribution.tsx';
import { AllReduceRows } from './AllReduceRows.tsx';
import { TpRows } from './TpRows.tsx';
import { CopySumRows } from './CopySumRows.tsx';
import { measuredPeakMicrobatches, type Prediction } from '../../state/store/index.ts';
import { bytes, ms, num, pct, whole } from '../timeline/format.ts';
import { rankMemory, stageStashPeaks } from '../../config/run-limits.ts';

export interface RunNumbersProps {
  config: RunConfig;
  measured: Timeline | null;
  simulated: Timeline | null;
  prediction: Prediction | null;
  report: RunReport | null;
}

/** The steps a report's means cover: the first is left out when there are several (it warms caches); a stream's one window holds them all. */
function meanSteps(report: RunReport): string {
  const n = report.steps.length;
  if (runsAsStream(report.config.schedule)) return `the stream of ${report.losses.length} steps`;
  return n <= 1 ? '1 step' : `steps 2–${n}`;
}

/** Run to first step, and whether the workers started warm (prepared at load or left by a run) or cold. */
function StartLine({ report }: { report: RunReport }) {
  const ranks = report.phases.ranks;
  const compiled = ranks.reduce((a, r) => a + r.compiled, 0);
  const kernels = ranks.reduce((a, r) => a + r.kernels, 0);
  const warm = compiled === 0;
  return (
    <p className="muted small" data-testid="run-start" data-compiled={compiled}>
      Start: first step {ms(report.phases.firstStepMs)} after Run (workers up after {ms(report.phases.startMs)};{' '}
      {warm ? `warm workers, all ${kernels} kernels compiled already` : `${compiled} of ${kernels} kernels compiled now`}
      {report.phases.waitMs && report.phases.waitMs >= 1 ? `, ${ms(report.phases.waitMs)} of it waiting for the workers the page was preparing` : ''}).
    </p>
  );
}

export function RunNumbers({ config, measured, simulated, prediction, report }: RunNumbersProps) {
  // Compute only, as the report counts it (a step's trailing messages are not part of its makespan).
  const m = useMemo(() => (measured ? timelineStats(computeOnly(measured)) : null), [measured]);
  const s = useMemo(() => (simulated ? timelineStats(computeOnly(simulated)) : null), [simulated]);
  const heldMeasured = useMemo(() => (measured ? measuredPeakMicrobatches(measured) : null), [measured]);
  const heldSimulated = useMemo(() => (simulated ? measuredPeakMicrobatches(simulated) : null), [simulated]);
  // The memory limit's estimate of each rank's stash (config/run-limits.ts), summed over its stages' own peaks as the
  // measured bytes are; for `auto`, planned from the model, its bound (its cap of micro-batches); none for a
  // configuration it cannot read (a text not loaded here).
  const stashEstimate = useMemo((): { bytes: number[]; bound: boolean } | null => {
    try {
      if (scheduleKind(config.schedule).fromStageCosts) return { bytes: rankMemory(config).map((x) => x.stash), bound: true };
      const e = stageStashPeaks(config);
      if (!e) return null;
      const out = new Array<number>(config.ranks).fill(0);
      e.peaks.forEach((b, s) => (out[e.stageToRank[s]] += b));
      return { bytes: out, bound: false };
    } catch {
      return null;
    }
  }, [config]);
  const closed = prediction?.closed ?? null;
  const closedPeak = prediction?.closedPeak ?? null;
  const predictedPeak = prediction?.result.memory.map((x) => x.peakMicrobatches) ?? null;

  const makespanMeasured = report?.makespanMs.measured ?? m?.makespan ?? null;
  const makespanSimulated = report?.makespanMs.simulated ?? s?.makespan ?? null;
  const bubbleMeasured = report?.bubble.measured ?? m?.bubble ?? null;
  const bubbleSimulated = report?.bubble.simulated ?? s?.bubble ?? prediction?.result.bubble ?? null;
  const bubbleClosed = report?.bubble.closedForm ?? closed?.bubble ?? null;
  // A stream (PipeDream, 2BW) is one window of all the run's steps: its makespan carries steps batches, not one.
  const stream = runsAsStream(config.schedule);
  // Its steps: the run's, or those a Stop kept (the stream ends at a step boundary: stream-end.ts).
  const streamSteps = stream && report ? report.losses.length : config.steps;
  const batchesPerWindow = stream ? streamSteps : 1;
  const sps = (makespan: number | null) => (makespan && makespan > 0 ? ((config.batchSize * batchesPerWindow) / makespan) * 1000 : null);
  const ranks = (measured ?? simulated ?? prediction?.result.timeline)?.ranks ?? config.ranks;
  // Stages a rank holds: its virtual stages, of each model copy (DualPipe: two).
  const stagesPerRank = scheduleKind(config.schedule).virtualFor(config.virtual) * scheduleKind(config.schedule).copies;
  const stageBytes = (r: number): number | null => {
    if (!report) return null;
    let sum = 0;
    let any = false;
    for (let st = 0; st < report.schedule.stageToRank.length; st++) {
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
    <section className="panel numbers-panel" aria-labelledby="numbers-title" data-testid="run-numbers">
      <h2 id="numbers-title">Measured · simulated · closed form</h2>
      <div className="table-scroll">
      <table className="numbers">
        <thead>
          <tr>
            <th scope="col" />
            <th scope="col">
              measured
              <span className="col-note">{report ? (stream ? meanSteps(report) : `mean of ${meanSteps(report)}`) : measured ? (stream ? 'the stream drawn' : 'step drawn') : ''}</span>
            </th>
            <th scope="col">simulated</th>
            <th scope="col">closed form</th>
          </tr>
        </thead>
        <tbody>
          <tr>
            <th scope="row">{stream ? `Makespan of the stream (${streamSteps} steps), ms` : 'Makespan per step, ms'}</th>
            <td>{ms(makespanMeasured)}</td>
            <td>{simulated ? ms(makespanSimulated) : '—'}</td>
            <td>—</td>
          </tr>
          <tr>
            <th scope="row">Makespan, unit time</th>
            <td>—</td>
            <td>{prediction ? `${num(prediction.result.makespan)} u` : '—'}</td>
            <td>{closed && prediction ? `${num(closedMakespanInPredictionUnits(closed, prediction.schedule))} u` : '—'}</td>
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
          {report && m && !stream && (
            <tr>
              <th scope="row">Bubble, step drawn above</th>
              <td>{pct(m.bubble)}</td>
              <td>{s ? pct(s.bubble) : '—'}</td>
              <td>—</td>
            </tr>
          )}
          <tr>
            <th scope="row">{stream ? 'Samples per second (steps × batch ÷ makespan)' : 'Samples per second (batch ÷ makespan)'}</th>
            <td>{num(sps(makespanMeasured), 0)}</td>
            <td>{simulated ? num(sps(makespanSimulated), 0) : '—'}</td>
            <td>—</td>
          </tr>
          {report?.stepEnd && (
            <tr data-testid="step-end">
              <th
                scope="row"
                title="From the first worker's start to the last worker's end of its update: after its last action (and collectives) each worker reads the step's losses back (the ranks holding a last stage) and updates its weights, which the timeline does not draw. Simulated: each rank's measured time after its last action or collective, played after its simulated last one"
              >
                {stream ? 'The stream on the workers’ clocks, ms' : 'Step on the workers’ clocks, ms (to the last update)'}
              </th>
              <td className="wrap">
                {ms(report.stepEnd.wallMs)} <span className="muted">· +{whole(ms(report.stepEnd.afterMs))} after the timeline</span>
              </td>
              <td className="wrap" data-testid="step-end-simulated">
                {report.stepEnd.simulated ? (
                  <>
                    {ms(report.stepEnd.simulated.wallMs)} <span className="muted">· +{whole(ms(report.stepEnd.simulated.afterMs))}</span>
                  </>
                ) : (
                  '—'
                )}
              </td>
              <td>—</td>
            </tr>
          )}
          {Array.from({ length: ranks }, (_, r) => (
            <tr key={r} className={r === 0 ? 'group-start' : ''}>
              <th scope="row">
                {r === 0 && <span className="group-label">Peak activations held</span>}
                {stagesPerRank === 1 ? `stage ${r}` : `rank ${r}`}
              </th>
              <td>
                {heldMeasured ? microbatches(heldMeasured[r]) : '—'}
                {stageBytes(r) !== null && <span className="muted"> · {bytes(stageBytes(r))}</span>}
              </td>
              <td>
                {heldSimulated ? microbatches(heldSimulated[r]) : predictedPeak ? microbatches(predictedPeak[r]) : '—'}
                {stashEstimate && stashEstimate.bytes[r] !== undefined && (
                  <span
                    className="muted"
                    data-testid="stash-estimate"
                    title={
                      stashEstimate.bound
                        ? 'The memory limit’s bound for auto, whose order is planned from the model: its cap of micro-batches on a rank (memCap; 0: 1F1B’s p), each at most what it keeps before its I or what its W reads after'
                        : 'The memory limit’s estimate: what each micro-batch in flight keeps for its backward, at each of this rank’s stages’ peak in the schedule'
                    }
                  >
                    {' '}
                    · {stashEstimate.bound ? '≤ ' : ''}
                    {bytes(stashEstimate.bytes[r])}
                  </span>
                )}
              </td>
              <td>{closedPeak ? microbatches(closedPeak[r]) : '—'}</td>
            </tr>
          ))}
          {report?.weightStash &&
            Object.entries(report.weightStash).map(([stage, w], i) => (
              // PipeDream stashes a version per in-flight micro-batch; PipeDream-2BW holds at most two.
              <tr key={`ws-${stage}`} className={i === 0 ? 'group-start' : ''} data-testid="weight-versions">
                <th scope="row">
                  {i === 0 && <span className="group-label">Weight versions kept (most at once; bytes: the copies beside the live weights)</span>}
                  stage {stage}
                </th>
                <td>
                  {w.versions} <span className="muted">· {bytes(w.bytes)}</span>
                </td>
                <td>—</td>
                <td>—</td>
              </tr>
            ))}
          {report && <AllReduceRows report={report} />}
          {report && <TpRows report={report} />}
          {report && <CopySumRows report={report} />}
        </tbody>
      </table>
      </div>
      <p className="muted small">
        {report
          ? stream
            ? `Measured: ${meanSteps(report)}, one window with no flush, the timeline above. `
            : `Measured: mean of ${meanSteps(report)}; the timeline and its badge show the last step. `
          : measured
            ? 'Measured: the step drawn above. '
            : ''}
        Simulated: the schedule played with {report || measured ? 'the measured mean time of each op' : 'unit costs (F = 1, B = 2 per rank) before a run'}
        {report ? ' and the measured time per message' : ', links free'}
        {report?.stepEnd?.simulated ? ', each rank’s end of step (losses read, update) at its measured time after its last action' : ''}. Closed form: identical stages, F = 1, B = 2, free links. Unit time (u): a
        rank’s share of the model costs F = 1, B = 2. Peak activations: how many micro-batches’ activations a rank holds at once; bytes: {report ? 'the largest stash measured, and ' : ''}the estimate the run’s memory limit checks, what each micro-batch in flight keeps at the schedule’s peak{stagesPerRank > 1 ? ' (a rank of several stages: each stage’s own peak, summed)' : ''}{stashEstimate?.bound ? ' (auto, whose order is planned from the model: a bound, ≤, its cap of micro-batches each at its most)' : ''}.
      </p>
      {report && <StartLine report={report} />}
      {report && <GapAttributionTable report={report} closedBubble={bubbleClosed} />}
    </section>
  );
}

/** A count of micro-batches in words ("mb" reads as megabytes to most people). */
function microbatches(n: number): string {
  return `${n} micro-batch${n === 1 ? '' : 'es'}`;
}
