/**
 * The cuts side by side: by block count, by FLOPs and by measured time, each
 * with its per-stage cost bars under the profile; "Use this cut" sets the run
 * configuration to that cut (partition 'cut'); "Run each cut" trains the
 * current configuration for a few steps once per distinct cut and fills in
 * the measured makespan and bubble beside the planned costs (src/state/compare/cut-runs.ts).
 */
import type { SplitView } from '../../plan/splits.ts';
import { cutOfRanges, cutText } from '../../config/explicit-cut.ts';
import type { RunConfig } from '../../config/run-config.ts';
import { runsAsStream } from '../../schedule/registry.ts';
import { cannotMeasureReason } from '../../state/compare/index.ts';
import { applyCut, CUT_RUN_STEPS, cutMismatch, cutRunKey, cutRunSteps, distinctCuts, runEachCut, stopCutRuns } from '../../state/compare/index.ts';
import { usePipeLab, type CutMeasurement } from '../../state/store/index.ts';
import { num, pct } from '../timeline/format.ts';
import { Bars } from './Bar.tsx';

function rangesText(s: SplitView): string {
  return s.ranges.map(([a, b]) => (b - a === 1 ? `${a}` : `${a}–${b - 1}`)).join(' | ');
}

function measuredCell(m: CutMeasurement | undefined, what: 'makespan' | 'bubble', meanOf: number, stream: boolean): string {
  if (!m) return '—';
  if (m.status === 'queued') return 'queued';
  if (m.status === 'running') return 'running…';
  if (m.status === 'error') return 'failed';
  const ran = `${m.meanOf} step${m.meanOf === 1 ? '' : 's'}`;
  const fewer = m.meanOf !== meanOf ? ` (${stream ? `the stream of ${ran}` : `mean of ${ran}`}: stopped early)` : '';
  return (what === 'makespan' ? `${num(m.makespanMs, 2)} ms` : pct(m.bubble, 1)) + fewer;
}

export interface CutsTableProps {
  splits: SplitView[];
  config: RunConfig;
  /** The stages the cuts were planned for (the panel's "Ranks to plan for"). */
  plannedStages: number;
  profileBlocks: number;
  /** The panel's profiling pass is going (it uses the workers too). */
  profiling: boolean;
  /** Where the profile's times come from, in words ("the FLOPs estimate", "the profiling pass", …): the third cut's. */
  profileName: string;
}

/** A cut's row header: by block count, by FLOPs, or by the profile's times (measured only when the profile is). */
function cutByLabel(by: string, profileName: string): string {
  if (by === 'blocks') return 'block count';
  if (by === 'flops') return 'FLOPs';
  return `times of ${profileName}`;
}

export function CutsTable({ splits, config, plannedStages, profileBlocks, profiling, profileName }: CutsTableProps) {
  const session = usePipeLab((s) => s.session);
  const runs = usePipeLab((s) => s.cutRuns);
  usePipeLab((s) => s.webgpu.state); // re-render when WebGPU turns out available
  const mismatch = cutMismatch(config, plannedStages, profileBlocks);
  const max = Math.max(...splits.flatMap((s) => s.stageTime));
  const runOf = (s: SplitView) => (mismatch ? undefined : runs[cutRunKey(config, s.ranges)]);
  const running = session === 'planning';
  const why = running ? null : cannotMeasureReason();
  const steps = cutRunSteps(config);
  // A stream runs its steps as one window: its makespan is that window's ÷ its steps, none left out.
  const stream = runsAsStream(config.schedule);
  const meanOf = stream ? steps : steps > 1 ? steps - 1 : 1;
  const inUse = config.partition === 'cut' && config.cut ? cutText(config.cut) : null;
  const failures = splits.map((s) => ({ s, m: runOf(s) })).filter(({ m }) => m?.status === 'error');
  const shown = new Set<string>();

  return (
    <>
      <div className="table-scroll" tabIndex={0} role="region" aria-label="Cuts table (scrolls sideways on narrow windows)">
        <table className="numbers plan-table" data-testid="plan-splits">
          <thead>
            <tr>
              <th scope="col">cut by</th>
              <th scope="col">stages (blocks)</th>
              <th scope="col">slowest stage</th>
              <th scope="col">per-stage time</th>
              <th scope="col">{stream ? `measured makespan per step (the stream of ${steps} ÷ ${steps})` : `measured makespan (mean of ${meanOf} step${meanOf === 1 ? '' : 's'})`}</th>
              <th scope="col">{stream ? 'measured bubble (the stream)' : 'measured bubble'}</th>
              <th scope="col">run configuration</th>
            </tr>
          </thead>
          <tbody>
            {splits.map((s) => {
              const m = runOf(s);
              const text = cutText(cutOfRanges(s.ranges));
              return (
                <tr key={s.by} data-testid={`plan-cut-${s.by}`}>
                  <th scope="row">{cutByLabel(s.by, profileName)}</th>
                  <td>{rangesText(s)}</td>
                  <td>{num(s.bottleneck, 3)}</td>
                  <td>
                    <Bars bars={s.stageTime.map((t, i) => ({ value: t, label: `stage ${i}: ${num(t, 3)}` }))} max={max} />
                  </td>
                  <td data-testid={`plan-cut-makespan-${s.by}`} data-ms={m?.status === 'done' ? m.makespanMs ?? '' : ''} data-stage-blocks={m?.stageBlocks ? JSON.stringify(m.stageBlocks) : ''}>
                    {measuredCell(m, 'makespan', meanOf, stream)}
                  </td>
                  <td data-testid={`plan-cut-bubble-${s.by}`}>{measuredCell(m, 'bubble', meanOf, stream)}</td>
                  <td>
                    {inUse === text ? (
                      <span className="muted small">in use (cut={text})</span>
                    ) : (
                      <button type="button" disabled={mismatch !== null || running} onClick={() => applyCut(config, s.ranges)} data-testid={`plan-use-${s.by}`}>
                        Use this cut
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {mismatch && (
        <p className="muted small" role="status" data-testid="plan-cut-mismatch">
          {mismatch}
        </p>
      )}
      <div className="buttons">
        {running ? (
          <button type="button" onClick={stopCutRuns} data-testid="plan-run-cuts-stop">
            ■ Stop running cuts
          </button>
        ) : (
          <button type="button" disabled={mismatch !== null || why !== null || profiling} onClick={() => void runEachCut(config, distinctCuts(splits).map((d) => d.ranges))} data-testid="plan-run-cuts">
            ▶ Run each cut
          </button>
        )}
      </div>
      <p className="muted small">
        “Run each cut” trains the run configuration ({config.ranks} ranks, {config.schedule}, {config.microbatches} micro-batches) for min(steps, {CUT_RUN_STEPS}) = {steps} step
        {steps === 1 ? '' : 's'} once per distinct cut, one cut after the other;{' '}
        {stream
          ? `${config.schedule} runs them as one stream: the measured makespan is the stream's ÷ its steps, the bubble the stream's.`
          : 'the measured makespan and bubble are the means over the steps after the first (which warms caches).'}{' '}
        Rows with the same cut share one run.
      </p>
      {why && !mismatch && (
        <p className="muted small why-off" role="status">
          {why}
        </p>
      )}
      {failures.map(({ s, m }) => {
        const key = m?.error ?? '';
        if (shown.has(key)) return null;
        shown.add(key);
        return (
          <p key={s.by} className="config-problem" role="alert" data-testid="plan-cut-error">
            Running the cut by {s.by} failed: {m?.error}
          </p>
        );
      })}
    </>
  );
}
