/** The run's status in words, in a role="status" live region that screen readers announce. */
import { scheduleLabel } from './controls/schedule-labels.ts';
import { usePipeLab, type PipeLabState } from '../state/store/index.ts';
import { runsAsStream } from '../schedule/registry.ts';

/** The workers the page prepared at load, in words (nothing once a run has used them). */
function workersText(s: PipeLabState): string {
  const w = s.workers;
  if (w.state === 'preparing') return ` Preparing ${w.ranks} workers (devices, kernels)…`;
  if (w.state === 'ready') return ` ${w.ranks} workers warm (prepared in ${(w.ms / 1000).toFixed(1)} s).`;
  return '';
}

function statusText(s: PipeLabState): string {
  const r = s.run;
  const cfg = r.config ?? s.config;
  const tp = cfg.tp ?? 1;
  const what = `${scheduleLabel(cfg.schedule)} on ${cfg.dp > 1 ? `${cfg.dp} replicas × ` : ''}${cfg.ranks} ranks${tp > 1 ? ` × tp ${tp}` : ''} × ${cfg.microbatches} micro-batches`;
  switch (r.status) {
    case 'idle':
      if (s.webgpu.state === 'unavailable') return 'WebGPU is not available: simulation only.';
      if (s.webgpu.state === 'checking') return 'Looking for WebGPU…';
      if (s.configProblem) return `Not ready: ${s.configProblem.message}`;
      return `Ready to train ${what}.${workersText(s)}`;
    case 'starting':
      return `Starting ${cfg.dp * (cfg.ep ?? 1) * (cfg.tp ?? 1) * cfg.ranks} workers for ${what}…`;
    case 'running':
      return `Training ${what}.`;
    case 'paused':
      return runsAsStream(cfg.schedule) ? `Paused at step ${r.step} of ${r.steps}: every worker holds before its next action.` : `Paused after step ${r.step} of ${r.steps}.`;
    case 'stopping':
      return runsAsStream(cfg.schedule) ? 'Stopping the stream at the next step boundary (its micro-batches in flight finish)…' : 'Stopping after the step in flight…';
    case 'done':
      return `Done: ${r.step} steps${s.losses.length ? `, final loss ${s.losses[s.losses.length - 1].toFixed(4)}` : ''}.`;
    case 'stopped':
      return r.step === 0 ? 'Stopped before the first step.' : `Stopped after ${r.step} of ${r.steps} steps.`;
    case 'error':
      return `Run failed: ${r.error ?? 'unknown error'}`;
  }
}

/**
 * The line at the foot of every view. It is the Train view's run, so on the
 * other views it says so ("Train view:"), outside the live region: switching
 * views announces nothing and the live text stays the run's own.
 */
export function StatusRegion() {
  const text = usePipeLab(statusText);
  const status = usePipeLab((s) => s.run.status);
  const elsewhere = usePipeLab((s) => s.view !== 'run');
  return (
    <div className={`status-line ${status}`} data-testid="status-line">
      {elsewhere && <span className="status-scope">Train view: </span>}
      <span role="status" aria-live="polite" data-status={status}>
        {text}
      </span>
    </div>
  );
}
