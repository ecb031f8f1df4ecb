/**
 * The Compare presets' measure control: "▶ Measure …" when the workers are free (its reason when not), "■ Stop
 * measuring" while the preset's runs go on (dp-pp-measure.ts runs them one after another).
 */
import { stopDpPp } from '../../state/dp-pp-measure.ts';

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
