/** Names the trained character model makes up, with a button to draw more. */
import { useState } from 'react';
import { deriveResults } from '../../state/run/index.ts';
import { usePipeLab } from '../../state/store/index.ts';

export function SampledNames({ names }: { names: readonly string[] }) {
  const report = usePipeLab((s) => s.report);
  const [draw, setDraw] = useState(1);
  return (
    <div className="names">
      <ul className="name-list" aria-label="Sampled names">
        {names.map((n, i) => (
          <li key={`${i}:${n}`}>{n === '' ? <span className="muted">(empty)</span> : n}</li>
        ))}
      </ul>
      <button
        type="button"
        disabled={!report}
        onClick={() => {
          if (!report) return;
          setDraw(draw + 1);
          void deriveResults(report, report.config.seed + draw * 7919);
        }}
      >
        Sample again
      </button>
    </div>
  );
}
