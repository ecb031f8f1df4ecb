/**
 * The Compare presets' measure control: "▶ Measure …" when the workers are free (its reason when not), "■ Stop
 * measuring" while the preset's runs go on (dp-pp-measure.ts runs them one after another).
 */
import { stopDpPp } from '../../state/compare/index.ts';

export function PresetMeasure({ label, comparing, why, onMeasure }: { label: string; comparing: boolean; why: string | null; onMeasure: () => void }) {
  return (
    <>
      <div className="buttons">
        {comparing ? (
          <button type="button" onClick={stopDpPp}>
            ■ Stop measuring
          </button>
        ) : (
          <button type="button" className="primary" disabled={why !== null} onClick={onMeasure}>
            {label}
          </button>
        )}
      </div>
      {why && (
        <p className="muted small" role="status">
          {why}
        </p>
      )}
    </>
  );
}

/** The runs of a preset that failed, each named by its key, on one line (nothing when none failed). */
export function PresetErrors({ rows }: { rows: readonly { key: string; status?: string; error?: string | null }[] }) {
  const failed = rows.filter((r) => r.status === 'error');
  if (failed.length === 0) return null;
  return <p className="run-error">{failed.map((r) => `${r.key}: ${r.error ?? ''}`).join(' · ')}</p>;
}
