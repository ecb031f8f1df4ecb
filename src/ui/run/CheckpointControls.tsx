/** "Resume run from step k" for the last checkpoint of the form's configuration, Download checkpoint, Load checkpoint, how a failed run recovers, and what the saves said. */
import { useEffect } from 'react';
import { patchConfig } from '../../state/store/index.ts';
import { fewerWorkers, meshText } from '../../run-state/recut.ts';
import { recoveryOf, RECOVERY_MODES, type RecoveryMode, type RunConfig } from '../../config/run-config.ts';
import { SelectField } from '../controls/fields.tsx';
import { downloadCheckpoint, loadCheckpointFile, refreshCheckpoints, useCheckpoints } from '../../state/run/index.ts';
import { cannotRunReason, startRun } from '../../state/run/index.ts';
import { checkpointKey } from '../../run-state/checkpoint-store.ts';
import { isActive, usePipeLab } from '../../state/store/index.ts';
import { savesCheckpoints } from '../../schedule/index.ts';
import { SCHEDULE_LABELS } from '../controls/schedule-labels.ts';

const RECOVERY_LABELS: Record<RecoveryMode, string> = { fresh: 'a fresh worker in its place', fewer: 'the workers that remain' };

/** One line: what a failure after a step does with `config`'s recovery choice (before the first checkpoint, the last checkpoint is the run's start). */
function recoveryHint(config: RunConfig): string {
  // PipeDream's stream saves no checkpoint inside it: a failure in it restarts it from its start.
  const from = savesCheckpoints(config.schedule) ? 'the last checkpoint (or the start)' : 'the start (PipeDream’s stream saves no checkpoint inside it)';
  if (recoveryOf(config) === 'fresh') return `Restarts from ${from} on fresh workers, the same mesh.`;
  try {
    const r = fewerWorkers(config);
    return `Restarts from ${from} on ${r.after.workers} worker${r.after.workers === 1 ? '' : 's'} (${r.how}); the same losses.`;
  } catch (e) {
    return `${e instanceof Error ? e.message : String(e)}: a failure ends the run.`;
  }
}

export function CheckpointControls() {
  const config = usePipeLab((s) => s.config);
  const status = usePipeLab((s) => s.run.status);
  const view = useCheckpoints();
  const report = usePipeLab((s) => s.report);
  const key = checkpointKey(config);
  useEffect(() => {
    void refreshCheckpoints(config);
    // Only a change of what the checkpoints are stored under matters.
  }, [key]);
  const active = isActive(status);
  const latest = view.key === key ? view.latestStep : null;
  const canResume = !active && latest !== null && latest < config.steps && cannotRunReason() === null;

  return (
    <div className="checkpoint-controls" role="group" aria-label="Checkpoints">
      {canResume && (
        <button type="button" className="primary" onClick={() => void startRun({ resume: true })}>
          Resume run from step {latest}
        </button>
      )}
      <button type="button" onClick={() => void downloadCheckpoint()} disabled={latest === null} title={
          latest !== null
            ? `The checkpoint of step ${latest} as a file PyTorch reads`
            : !savesCheckpoints(config.schedule)
              ? `${SCHEDULE_LABELS[config.schedule]} runs all its steps as one stream, a weight version per micro-batch in flight: it saves no checkpoint`
              : 'No checkpoint is stored for this configuration'
        }>
        Download checkpoint
      </button>
      <input
        id="checkpoint-file"
        type="file"
        accept=".safetensors,application/octet-stream"
        className="visually-hidden"
        disabled={active}
        onChange={(e) => {
          const f = e.currentTarget.files?.[0];
          e.currentTarget.value = '';
          if (f) void loadCheckpointFile(f);
        }}
      />
      {/* The file input's own label (after it, so its focus shows on the label), styled as a button: clicking it opens the file chooser. */}
      <label htmlFor="checkpoint-file" className={`file-button${active ? ' disabled' : ''}`} title="Continue a checkpoint file (this page's or train.py's)">
        Load checkpoint
      </label>
      <SelectField<RecoveryMode>
        label="If a worker dies, continue on"
        name="recovery"
        value={recoveryOf(config)}
        options={RECOVERY_MODES.map((m) => ({ value: m, label: RECOVERY_LABELS[m] }))}
        onChange={(m) => patchConfig({ recovery: m === 'fresh' ? undefined : m })}
        disabled={active}
        hint={recoveryHint(config)}
      />
      {report?.recovery && (
        <p className="muted small" data-testid="recovery-note">
          {(report.recoveries?.length ?? 1) > 1 ? `Recovered ${report.recoveries!.length} times; the last: ` : 'Recovered: '}a failure at step {report.recovery.failedAtStep} ({report.recovery.failure}); restarted from the checkpoint of step {report.recovery.fromStep}{' '}
          {report.recovery.mode === 'fewer' ? `on fewer workers: ${meshText(report.recovery.meshBefore)} → ${meshText(report.recovery.meshAfter)}` : 'on fresh workers'}, {report.recovery.stepsRedone} step
          {report.recovery.stepsRedone === 1 ? '' : 's'} redone, {(report.recovery.recoveryMs / 1000).toFixed(2)} s to the first step after it.
        </p>
      )}
      {report?.stateReads && (
        <p className="muted small" data-testid="save-figures">
          Checkpoints: {report.stateReads.count} state read{report.stateReads.count === 1 ? '' : 's'} of {report.stateReads.meanMs.toFixed(1)} ms on the workers' path (longest {report.stateReads.maxMs.toFixed(1)} ms)
          {report.checkpointSaves ? `; encode ${report.checkpointSaves.meanEncodeMs.toFixed(1)} ms and store ${report.checkpointSaves.meanStoreMs.toFixed(1)} ms beside training, ${(report.checkpointSaves.bytes / 1024).toFixed(0)} KiB each` : ''}.
        </p>
      )}
      {view.note && (
        <p className={view.refused ? 'run-error small' : 'muted small'} aria-live={view.refused ? 'assertive' : 'polite'} data-testid="checkpoint-note">
          {view.note}
        </p>
      )}
    </div>
  );
}
