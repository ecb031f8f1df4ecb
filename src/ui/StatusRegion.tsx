/** The run's status in words, in a role="status" live region that screen readers announce. */
import { scheduleLabel } from './controls/schedule-labels.ts';
import { usePipeLab, type PipeLabState } from '../state/store.ts';

function statusText(s: PipeLabState): string {
  const r = s.run;
  const cfg = r.config ?? s.config;
  const what = `${scheduleLabel(cfg.schedule)} on ${cfg.ranks} ranks × ${cfg.microbatches} micro-batches`;
  switch (r.status) {
    case 'idle':
      return s.webgpu.state === 'unavailable' ? 'WebGPU is not available: simulation only.' : `Ready to train ${what}.`;
    case 'starting':
      return `Starting ${cfg.ranks} workers for ${what}…`;
    case 'running':
      return `Training ${what}.`;
    case 'paused':
      return `Paused after step ${r.step} of ${r.steps}.`;
    case 'stopping':
      return 'Stopping after the step in flight…';
    case 'done':
      return `Done: ${r.step} steps${s.losses.length ? `, final loss ${s.losses[s.losses.length - 1].toFixed(4)}` : ''}.`;
    case 'stopped':
      return `Stopped after ${r.step} of ${r.steps} steps.`;
    case 'error':
      return `Run failed: ${r.error ?? 'unknown error'}`;
  }
}

export function StatusRegion() {
  const text = usePipeLab(statusText);
  const status = usePipeLab((s) => s.run.status);
  return (
    <div className={`status-line ${status}`} role="status" aria-live="polite" data-status={status}>
      {text}
    </div>
  );
}
