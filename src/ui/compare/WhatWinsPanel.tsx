/**
 * Compare's "what wins here" sweep: for the Train configuration's model, each
 * compared schedule simulated over the number of micro-batches m (the global
 * batch fixed), drawn as two plots — the step against m, and the activations a
 * rank holds against m with the memory cap — the winner at each m (the fastest
 * that fits), and, at the configuration's own m, the winner measured on the
 * workers (Compare's measurements) beside the simulated one. PipeDream and
 * PipeDream-2BW take part with their stream's steady step (what-wins.ts).
 */
import { useMemo, useState } from 'react';
import { runsAsStream, type RunScheduleName } from '../../schedule/index.ts';
import { usePipeLab } from '../../state/store/index.ts';
import { measuredWinner, sweepMicrobatches, sweepSentence, whatWins, type Sweep } from '../../state/compare/index.ts';
import { NumberField } from '../controls/fields.tsx';
import { SCHEDULE_LABELS } from '../controls/schedule-labels.ts';
import { bytes, pct } from '../timeline/format.ts';

const PALETTE = ['#60a5fa', '#f59e0b', '#a78bfa', '#34d399', '#f472b6', '#facc15', '#22d3ee', '#fb7185'];

interface PlotProps {
  sweep: Sweep;
  names: readonly RunScheduleName[];
  value: (p: Sweep['points'][number]) => number;
  label: string;
  format: (x: number) => string;
  /** A horizontal line (the memory cap), in the value's units. */
  line?: number;
  testId: string;
}

/** One line per schedule over m (a log axis: the sweep's m grow by factors, k·p for k up to 8), hollow markers where the schedule does not fit the cap. */
function SweepPlot({ sweep, names, value, label, format, line, testId }: PlotProps) {
  const W = 520, H = 220, L = 64, R = 12, T = 12, B = 36;
  const ys = sweep.points.map(value);
  const top = Math.max(1e-12, ...ys, line ?? 0);
  const mLo = Math.min(...sweep.ms), mHi = Math.max(...sweep.ms);
  const x = (m: number) => L + (mHi === mLo ? (W - L - R) / 2 : ((W - L - R) * Math.log(m / mLo)) / Math.log(mHi / mLo));
  const y = (v: number) => T + (H - T - B) * (1 - v / top);
  return (
    <svg viewBox={`0 0 ${W} ${H}`} width="100%" style={{ maxWidth: W }} role="img" aria-label={label} data-testid={testId}>
      <line x1={L} x2={W - R} y1={H - B} y2={H - B} stroke="#475569" />
      <line x1={L} x2={L} y1={T} y2={H - B} stroke="#475569" />
      {[0, 0.5, 1].map((f) => (
        <text key={f} x={L - 6} y={y(f * top) + 4} fontSize="10" textAnchor="end" fill="currentColor">
          {format(f * top)}
        </text>
      ))}
      {sweep.ms.map((m) => (
        <text key={m} x={x(m)} y={H - B + 14} fontSize="10" textAnchor="middle" fill="currentColor">
          {m}
        </text>
      ))}
      <text x={(L + W - R) / 2} y={H - 4} fontSize="11" textAnchor="middle" fill="currentColor">
        micro-batches m (the global batch fixed; log scale)
      </text>
      {line !== undefined && line > 0 && <line x1={L} x2={W - R} y1={y(line)} y2={y(line)} stroke="#ef4444" strokeDasharray="4 3" data-testid={`${testId}-cap`} />}
      {names.map((n, i) => {
        const pts = sweep.points.filter((p) => p.schedule === n);
        if (pts.length === 0) return null;
        const color = PALETTE[i % PALETTE.length];
        return (
          <g key={n} data-schedule={n}>
            <polyline points={pts.map((p) => `${x(p.m)},${y(value(p))}`).join(' ')} fill="none" stroke={color} strokeWidth={1.5} />
            {pts.map((p) => (
              <circle key={p.m} cx={x(p.m)} cy={y(value(p))} r={3.5} fill={p.fits ? color : 'none'} stroke={color}>
                <title>{`${SCHEDULE_LABELS[n]}, m = ${p.m}: ${format(value(p))}${p.fits ? '' : ' (over the cap)'}`}</title>
              </circle>
            ))}
          </g>
        );
      })}
    </svg>
  );
}

/** `names`: the picked schedules; `steps`: Compare's measured steps (a stream runs them as one window). */
export function WhatWinsPanel({ names, virtual, steps }: { names: readonly RunScheduleName[]; virtual: number; steps: number }) {
  const config = usePipeLab((s) => s.config);
  const measurements = usePipeLab((s) => s.compare);
  const [capKiB, setCapKiB] = useState(0);
  const ms = useMemo(() => sweepMicrobatches(config), [config]);
  const sweep = useMemo(() => whatWins(config, names, virtual, ms, capKiB * 1024), [config, names, virtual, ms, capKiB]);
  const here = sweep.ms.indexOf(config.microbatches);
  const simulatedHere = here >= 0 ? sweep.winners[here] : null;
  const measured = measuredWinner(measurements, names, steps);
  const streams = names.filter(runsAsStream);
  const label = (n: RunScheduleName) => SCHEDULE_LABELS[n];
  return (
    <section className="panel" aria-labelledby="wins-title" data-testid="what-wins">
      <h2 id="wins-title">What wins here</h2>
      <p className="muted small">
        {config.model === 'gpt' ? 'The GPT' : 'The model'} of the Train view on {config.ranks} ranks, batch {config.batchSize} cut into m micro-batches, each schedule simulated with the model’s
        own stage costs (FLOPs and activation bytes per micro-batch); a memory cap leaves out the schedules whose ranks would hold more activations.
        {streams.length > 0 &&
          ` ${streams.map((n) => SCHEDULE_LABELS[n]).join(' and ')} never ${streams.length === 1 ? 'flushes' : 'flush'}: ${streams.length === 1 ? 'its' : 'their'} step is the stream's steady state (two steps' stream less one, no fill or drain of its own), and ${streams.length === 1 ? 'its' : 'their'} updates read stale weights, so a win there is in speed, not the same training.`}
      </p>
      <div className="row2" style={{ maxWidth: 420 }}>
        <NumberField label="Memory cap, KiB of activations per rank" name="wins.cap" min={0} value={capKiB} onChange={setCapKiB} hint={capKiB > 0 ? `${bytes(capKiB * 1024)}` : '0: no cap'} />
      </div>
      <div className="wins-plots">
        <figure>
          <figcaption className="small">Step (simulated, FLOP-time units)</figcaption>
          <SweepPlot sweep={sweep} names={names} value={(p) => p.step} label="Simulated step against m, one line per schedule" format={(v) => v.toExponential(1)} testId="wins-step" />
        </figure>
        <figure>
          <figcaption className="small">Peak activations a rank holds</figcaption>
          <SweepPlot sweep={sweep} names={names} value={(p) => p.peakBytes} label="Peak activation bytes against m, one line per schedule, the cap dashed" format={(v) => bytes(v)} line={capKiB * 1024} testId="wins-memory" />
        </figure>
      </div>
      <ul className="legend" aria-label="Schedules in the plots">
        {names.map((n, i) => (
          <li key={n}>
            <span className="swatch" style={{ background: PALETTE[i % PALETTE.length] }} aria-hidden="true" /> {label(n)}
          </li>
        ))}
      </ul>
      <div className="table-scroll" tabIndex={0} role="region" aria-label="The winner at each m (scrolls sideways on narrow windows)">
        <table className="numbers">
          <thead>
            <tr>
              <th scope="col">m</th>
              <th scope="col">winner (simulated)</th>
              <th scope="col">its bubble</th>
              <th scope="col">its peak activations</th>
            </tr>
          </thead>
          <tbody>
            {sweep.ms.map((m, i) => {
              const w = sweep.winners[i];
              const p = w ? sweep.points.find((q) => q.schedule === w && q.m === m) : undefined;
              return (
                <tr key={m} data-testid={`wins-m-${m}`} className={m === config.microbatches ? 'strong' : undefined}>
                  <th scope="row">
                    {m}
                    {m === config.microbatches ? ' (this run)' : ''}
                  </th>
                  <td>{w ? label(w) : 'nothing fits'}</td>
                  <td>{p ? pct(p.bubble) : '—'}</td>
                  <td>{p ? bytes(p.peakBytes) : '—'}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <p className="dppp-sentence" data-testid="wins-sentence">
        {sweepSentence(sweep, label)}
      </p>
      <p data-testid="wins-measured">
        At m = {config.microbatches}: simulated winner <b>{simulatedHere ? label(simulatedHere) : 'none'}</b>;{' '}
        {measured ? (
          <>
            measured winner <b>{label(measured.name)}</b> ({measured.ms.toFixed(1)} ms a step, of the schedules measured below{capKiB > 0 ? ', without the cap' : ''}).
          </>
        ) : (
          <>press “▶ Measure each” to train each schedule on the workers and see the measured winner here.</>
        )}
      </p>
    </section>
  );
}
