/**
 * What the model trained on "your text" writes: held-out prompts (muted) and
 * its continuations, updated as it trains, with the temperature it samples at
 * and a button for another draw.
 */
import { useState } from 'react';
import { sampleTextAgain, setSampleTemperature } from '../../state/run/index.ts';
import { usePipeLab } from '../../state/store/index.ts';
import './text.css';

export function SampledText() {
  const samples = usePipeLab((s) => s.textSamples);
  const temperature = usePipeLab((s) => s.sampleTemperature);
  const [draw, setDraw] = useState(1);
  return (
    <div data-testid="text-samples">
      {samples ? (
        <>
          <p className="muted small">After {samples.step} steps: each prompt (grey) is the start of a held-out block; the rest the model wrote.</p>
          <ul className="text-samples" aria-label="Sampled text">
            {samples.samples.map((s, i) => (
              <li key={`${samples.step}:${i}`}>
                <span className="prompt">{s.prompt}</span>
                <span className="continuation">{s.continuation}</span>
              </li>
            ))}
          </ul>
        </>
      ) : (
        <p className="muted">As it trains, text the model writes appears here (every “Eval every” steps).</p>
      )}
      <div className="text-sample-controls">
        <label>
          Temperature <b>{temperature.toFixed(2)}</b>{' '}
          <input
            type="range"
            min={0.1}
            max={2}
            step={0.05}
            value={temperature}
            aria-label="Sampling temperature"
            onChange={(e) => setSampleTemperature(Number(e.currentTarget.value))}
          />
        </label>
        <button
          type="button"
          disabled={!samples}
          onClick={() => {
            setDraw(draw + 1);
            sampleTextAgain(draw);
          }}
        >
          Sample again
        </button>
      </div>
    </div>
  );
}
