/** Run, pause/resume, single-step and stop, with the progress bar, speed and time left. */
import { cannotRunReason, stepRun, stopRun } from '../../state/run/index.ts';
import { isActive, usePipeLab } from '../../state/store/index.ts';
import { duration, num } from '../timeline/format.ts';
import { toggleRun } from './run-shortcut.ts';
import { runsAsStream } from '../../schedule/registry.ts';
import { scheduleLabel } from '../controls/schedule-labels.ts';
import { SpeedEstimate } from './SpeedEstimate.tsx';
import { CheckpointControls } from './CheckpointControls.tsx';

export function RunControls() {
  const run = usePipeLab((s) => s.run);
  const lastLoss = usePipeLab((s) => (s.losses.length ? s.losses[s.losses.length - 1] : null));
  const lastAux = usePipeLab((s) => (s.auxLosses.length ? s.auxLosses[s.auxLosses.length - 1] : null));
  // Re-render when any input of the reason changes.
  usePipeLab((s) => [s.webgpu.state, s.configProblem?.message, s.run.status, s.session].join('|'));
  const reason = cannotRunReason();
  const activeRun = isActive(run.status);
  const paused = run.status === 'paused';
  const frac = run.steps > 0 ? run.step / run.steps : 0;
  // PipeDream and 2BW run all their steps as one window: Pause holds every worker between its actions, there is no step
  // to step through, and Stop ends it at a step boundary.
  const formSchedule = usePipeLab((s) => s.config.schedule);
  const shownSchedule = run.config?.schedule ?? formSchedule;
  const stream = runsAsStream(shownSchedule);
  const streamNote = `${scheduleLabel(shownSchedule)} runs all its steps as one stream, with no step between to step through; ❚❚ Pause holds every worker before its next action, ■ Stop ends the stream at the next step boundary`;

  return (
    <div className="run-controls" id="run-controls" tabIndex={-1} aria-label="Run controls" role="group">
      <div className="buttons">
        {/* One button element whatever it says, never disabled while a run holds the workers, so focus stays on it after Run. */}
        <button
          type="button"
          className={!activeRun || paused ? 'primary' : ''}
          onClick={() => toggleRun()}
          disabled={!activeRun && reason !== null}
          aria-disabled={activeRun && !paused && run.status !== 'running' ? true : undefined}
          aria-keyshortcuts="R"
          title={!activeRun ? (reason ?? 'Train with this configuration (R)') : paused ? 'Resume (R)' : stream ? 'Hold every worker before its next action (R)' : 'Pause after the step in flight (R)'}
        >
          {!activeRun ? '▶ Run' : paused ? '▶ Resume' : '❚❚ Pause'}
        </button>
        <button
          type="button"
          onClick={() => !stream && (!activeRun || paused) && stepRun()}
          disabled={(!activeRun && reason !== null) || (stream && !activeRun)}
          aria-disabled={activeRun && (!paused || stream) ? true : undefined}
          title={stream ? streamNote : 'Run exactly one step, then hold'}
        >
          Step
        </button>
        <button
          type="button"
          onClick={() => activeRun && run.status !== 'stopping' && stopRun()}
          disabled={!activeRun}
          aria-disabled={run.status === 'stopping' ? true : undefined}
          title={stream ? 'End the stream at the next step boundary, keeping the steps done' : 'Stop after the step in flight, keeping the steps done'}
        >
          ■ Stop
        </button>
        <span className="shortcut-hint muted small" data-testid="run-hint">
          {/* While a stream runs, what its pause and stop do is said here, not only in a tooltip. */}
          {stream && activeRun && !paused ? (
            <>One stream: ❚❚ Pause holds every worker between actions; ■ Stop ends it at the next step boundary</>
          ) : (
            <>
              <kbd>R</kbd> runs, pauses, resumes
            </>
          )}
        </span>
      </div>
      <div className="progress">
        <div
          className="bar"
          role="progressbar"
          aria-label="Training progress"
          aria-valuemin={0}
          aria-valuemax={run.steps || 1}
          aria-valuenow={run.step}
          aria-valuetext={run.steps ? `step ${run.step} of ${run.steps}` : 'not started'}
        >
          <div className={`fill ${run.status}`} style={{ width: `${(frac * 100).toFixed(2)}%` }} />
        </div>
        <dl className="progress-stats">
          <div>
            <dt>step</dt>
            <dd>
              {run.step}
              {run.steps ? ` / ${run.steps}` : ''}
            </dd>
          </div>
          <div>
            <dt>steps/s</dt>
            <dd>{num(run.stepsPerSecond, 1)}</dd>
          </div>
          <div>
            <dt>time left</dt>
            <dd>{activeRun && !paused ? duration(run.etaMs) : '—'}</dd>
          </div>
          <div>
            <dt>loss</dt>
            <dd>{num(lastLoss, 4)}</dd>
          </div>
          {lastAux !== null && (
            <div title="The MoE blocks’ load-balancing loss of the last step (α · experts · Σ f·P, summed over the blocks): added to the gradient, not to the loss beside it (the cross-entropy).">
              <dt>aux loss</dt>
              <dd data-testid="aux-loss">{num(lastAux, 4)}</dd>
            </div>
          )}
        </dl>
      </div>
      {!activeRun && <SpeedEstimate />}
      <CheckpointControls />
      {reason && !activeRun && run.status !== 'error' && <p className="muted small why-off">{reason}</p>}
      {run.status === 'error' && (
        <p className="run-error" role="alert">
          <b>The run stopped:</b> {run.error}
        </p>
      )}
    </div>
  );
}
