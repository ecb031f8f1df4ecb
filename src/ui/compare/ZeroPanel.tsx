/**
 * The Compare preset "ZeRO 0 → 3 at dp = 4": the same run with each sharding,
 * measured one after another; a picture of what each worker held by kind
 * (bars, with the ZeRO paper's formula marked), a table of the figures with
 * the ring's bytes and the step time, a sentence read off them, and each
 * run's timeline (ZeRO-3's all-gathers fill it).
 */
import { useMemo } from 'react';
import { measureDpPp } from '../../state/compare/index.ts';
import { PresetErrors, PresetMeasure } from './PresetMeasure.tsx';
import { usePresetRuns } from './use-preset-runs.ts';
import { ZERO_PRESET_DP, ZERO_PRESET_RANKS, zeroFigures, zeroSentence, zeroShapes, type ZeroFigures } from '../../state/compare/index.ts';
import { bytes, ms } from '../timeline/format.ts';
import { TimelinePanel } from '../timeline/TimelinePanel.tsx';

const KINDS = [
  { key: 'weights', label: 'weights', color: '#60a5fa' },
  { key: 'grads', label: 'gradients', color: '#f59e0b' },
  { key: 'optimizer', label: 'optimizer state', color: '#a78bfa' },
  { key: 'stash', label: 'stashed activations', color: '#34d399' },
  { key: 'transient', label: 'transient (gathered weights, a backward’s gradient)', color: '#64748b' },
] as const;

/** Horizontal stacked bars, one per measured setting, on one scale; a white tick at the formula's model states. */
function MemoryBars({ rows }: { rows: readonly { key: string; f: ZeroFigures }[] }) {
  const width = 640, label = 150, barH = 18, gap = 10;
  const total = (f: ZeroFigures) => KINDS.reduce((s, k) => s + f[k.key], 0);
  const scale = Math.max(1, ...rows.map((r) => Math.max(total(r.f), r.f.formula)));
  const x = (b: number) => label + ((width - label - 10) * b) / scale;
  const height = rows.length * (barH + gap) + 4;
  return (
    <figure className="zero-bars" data-testid="zero-bars">
      <svg viewBox={`0 0 ${width} ${height}`} width="100%" style={{ maxWidth: width }} role="img" aria-label={`Bytes held per worker by kind: ${rows.map((r) => `${r.key} ${bytes(total(r.f))}`).join('; ')}`}>
        {rows.map((r, i) => {
          const y = i * (barH + gap) + 2;
          let at = 0;
          return (
            <g key={r.key} data-testid={`zero-bar-${r.key}`}>
              <text x={label - 8} y={y + barH - 5} textAnchor="end" fontSize="12" fill="currentColor">
                {r.key}
              </text>
              {KINDS.map((k) => {
                const w = x(at + r.f[k.key]) - x(at);
                const rect = <rect key={k.key} x={x(at)} y={y} width={Math.max(0, w)} height={barH} fill={k.color} opacity={k.key === 'transient' ? 0.6 : 1} />;
                at += r.f[k.key];
                return rect;
              })}
              <line x1={x(r.f.formula)} x2={x(r.f.formula)} y1={y - 2} y2={y + barH + 2} stroke="#fff" strokeWidth={2} />
            </g>
          );
        })}
      </svg>
      <figcaption className="legend">
        {KINDS.map((k) => (
          <span key={k.key} className="legend-item">
            <span className="swatch" style={{ background: k.color }} aria-hidden="true" /> {k.label}
          </span>
        ))}
        <span className="legend-item">│ the ZeRO paper’s formula (weights + gradients + optimizer at rest)</span>
      </figcaption>
    </figure>
  );
}

export function ZeroPanel({ steps }: { steps: number }) {
  const shapes = useMemo(() => zeroShapes(steps), [steps]);
  const { rows, done, allDone, comparing, why, status, mode, setMode } = usePresetRuns(shapes, zeroFigures);
  const sentence = allDone ? zeroSentence(done) : null;
  const cfg = shapes[0].config;

  return (
    <section className="panel" aria-labelledby="zero-title" data-testid="zero-table">
      <h2 id="zero-title">ZeRO 0 → 3 at dp = {ZERO_PRESET_DP}</h2>
      <p className="muted small">
        The same character MLP ({cfg.layers + 1} blocks of width {cfg.hidden}), {ZERO_PRESET_DP} replicas × {ZERO_PRESET_RANKS} ranks, 1F1B, batch {cfg.batchSize} in {cfg.microbatches} micro-batches per replica,
        {steps} steps, with each sharding: off; the optimizer state (ZeRO-1); + gradients (ZeRO-2); + weights (ZeRO-3), gathered once a step or again for every action.
      </p>
      <PresetMeasure label="▶ Measure the five settings" comparing={comparing} why={why} onMeasure={() => void measureDpPp(shapes)} />
      {done.length > 0 && <MemoryBars rows={done} />}
      <div className="table-scroll" tabIndex={0} role="region" aria-label="ZeRO table (scrolls sideways on narrow windows)">
        <table className="numbers">
          <thead>
            <tr>
              <th scope="col">sharding</th>
              <th scope="col">weights</th>
              <th scope="col">gradients</th>
              <th scope="col">optimizer</th>
              <th scope="col" title="weights + gradients + optimizer state at rest, by the ZeRO paper's formula">formula</th>
              <th scope="col">stash</th>
              <th scope="col">transient</th>
              <th scope="col" title="bytes one worker sent over its ring in a step">ring bytes / step</th>
              <th scope="col">step, ms</th>
              <th scope="col">final loss</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.shape.key} data-testid={`zero-row-${r.shape.zero}-${r.shape.reshard}`}>
                <th scope="row" className="nowrap">
                  {r.shape.key}
                </th>
                <td className="strong">{r.f ? bytes(r.f.weights) : status(r)}</td>
                <td>{r.f ? bytes(r.f.grads) : '—'}</td>
                <td>{r.f ? bytes(r.f.optimizer) : '—'}</td>
                <td>{r.f ? bytes(r.f.formula) : '—'}</td>
                <td>{r.f ? bytes(r.f.stash) : '—'}</td>
                <td>{r.f ? bytes(r.f.transient) : '—'}</td>
                <td>{r.f ? bytes(r.f.ringBytes) : '—'}</td>
                <td>{ms(r.f?.stepMs)}</td>
                <td>{r.f ? r.f.loss.toFixed(6) : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {sentence ? (
        <p className="dppp-sentence" data-testid="zero-sentence">
          {sentence}
        </p>
      ) : (
        <p className="muted small">Each worker’s bytes are the most any worker held, by kind (4 bytes a value); the formula is the ZeRO paper’s for its model states.</p>
      )}
      <PresetErrors rows={rows.map((r) => ({ key: r.shape.key, status: r.m?.status, error: r.m?.error }))} />
      {rows.map((r) =>
        r.report ? (
          <TimelinePanel key={r.shape.key} title={r.shape.key} measured={r.report.timeline} simulated={r.report.simulatedTimeline} mode={mode} onModeChange={setMode} testId={`zero-timeline-${r.shape.zero}-${r.shape.reshard}`} />
        ) : null,
      )}
    </section>
  );
}
