/**
 * Training loss per step (a line) and validation loss (points), in SVG, with
 * labelled axes and the value under the pointer. The y axis starts at 0
 * unless the losses sit far from it.
 */
import { useEffect, useMemo, useRef, useState, type PointerEvent } from 'react';
import { niceStep, ticks } from '../timeline/axis-ticks.ts';

export interface ValidationPoint {
  step: number;
  loss: number;
}

/** A run's event at a step, drawn as a vertical line: a failure, or the checkpoint a recovery restarted from. */
export interface StepMark {
  /** Steps done when it happened (the line sits just after step `step`). */
  step: number;
  kind: 'failure' | 'recovery';
  label: string;
}

export interface LossChartProps {
  losses: readonly number[];
  marks?: readonly StepMark[];
  validation?: readonly ValidationPoint[];
  /** Total steps planned, so the x axis does not rescale as the run goes. */
  steps?: number;
  height?: number;
}

/** The drawing's width in units: at most this, scaled up to a wider box. */
const MAX_W = 420;
const M = { l: 52, r: 12, t: 12, b: 38 };

/**
 * The figure's width in CSS px, so that in a box narrower than MAX_W the chart
 * is drawn at that width (one unit a pixel) instead of shrunk: its labels keep
 * their size on a phone. Null until measured (and where there is no ResizeObserver).
 */
function useBoxWidth() {
  const ref = useRef<HTMLElement>(null);
  const [width, setWidth] = useState<number | null>(null);
  useEffect(() => {
    const el = ref.current;
    if (!el || typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(([e]) => setWidth(Math.round(e.contentRect.width)));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  return [ref, width] as const;
}

export function LossChart({ losses, validation = [], marks = [], steps, height = 180 }: LossChartProps) {
  const [box, boxWidth] = useBoxWidth();
  const W = boxWidth !== null && boxWidth > 0 && boxWidth < MAX_W ? Math.max(240, boxWidth) : MAX_W;
  const plot = useMemo(() => {
    const H = height;
    const xs = Math.max(steps ?? 0, losses.length, ...validation.map((v) => v.step + 1), 2);
    const all = [...losses, ...validation.map((v) => v.loss)].filter(Number.isFinite);
    let lo = all.length ? Math.min(...all) : 0;
    let hi = all.length ? Math.max(...all) : 1;
    if (lo > 0 && lo < hi * 0.6) lo = 0;
    if (hi - lo < 1e-6) {
      hi += 0.5;
      lo = Math.max(0, lo - 0.5);
    }
    const pad = (hi - lo) * 0.06;
    hi += pad;
    lo = Math.max(lo === 0 ? 0 : lo - pad, lo === 0 ? 0 : -Infinity);
    const x = (i: number) => M.l + (i / Math.max(1, xs - 1)) * (W - M.l - M.r);
    const y = (v: number) => M.t + (1 - (v - lo) / (hi - lo)) * (H - M.t - M.b);
    const path = losses
      .map((v, i) => (Number.isFinite(v) ? `${i === 0 ? 'M' : 'L'}${x(i).toFixed(1)},${y(v).toFixed(1)}` : ''))
      .join('');
    const yTicks = ticks(lo, hi, 4);
    const xStep = Math.max(1, niceStep(xs - 1, 5));
    const xTicks = ticks(0, xs - 1, 5).filter((t) => Number.isInteger(t) || xStep < 1);
    return { H, x, y, path, yTicks, xTicks, lo, hi, xs };
  }, [losses, validation, steps, height, W]);

  // The step under the pointer (0-based), snapped to the nearest step that has a loss.
  const [hover, setHover] = useState<number | null>(null);
  const onMove = (e: PointerEvent<SVGSVGElement>) => {
    const r = e.currentTarget.getBoundingClientRect();
    if (r.width <= 0 || losses.length === 0) return;
    const vx = ((e.clientX - r.left) / r.width) * W;
    const i = Math.round(((vx - M.l) / (W - M.l - M.r)) * Math.max(1, plot.xs - 1));
    setHover(Math.min(losses.length - 1, Math.max(0, i)));
  };
  const hovered = hover !== null && hover < losses.length ? hover : null;
  const hoverVal = hovered !== null ? validation.find((v) => v.step === hovered) : undefined;

  const last = losses.length ? losses[losses.length - 1] : null;
  const first = losses.length ? losses[0] : null;
  const lastVal = validation.length ? validation[validation.length - 1] : null;
  const summary =
    first !== null && last !== null
      ? `Training loss from ${first.toFixed(3)} at step 1 to ${last.toFixed(3)} at step ${losses.length}${lastVal ? `; validation loss ${lastVal.loss.toFixed(3)}` : ''}.`
      : 'No loss yet: start a run.';

  return (
    <figure ref={box} className={W < MAX_W ? 'loss-chart narrow' : 'loss-chart'} data-losses={losses.map((l) => l.toPrecision(6)).join(',')}>
      <svg viewBox={`0 0 ${W} ${plot.H}`} role="img" aria-label={`Loss curve. ${summary}`} onPointerMove={onMove} onPointerLeave={() => setHover(null)}>
        {plot.yTicks.map((t) => (
          <g key={`y${t}`}>
            <line x1={M.l} x2={W - M.r} y1={plot.y(t)} y2={plot.y(t)} className="grid" />
            <text x={M.l - 6} y={plot.y(t)} className="tick" textAnchor="end" dominantBaseline="middle">
              {Number(t.toPrecision(3))}
            </text>
          </g>
        ))}
        {plot.xTicks.map((t) => (
          <text key={`x${t}`} x={plot.x(t)} y={plot.H - 22} className="tick" textAnchor="middle">
            {t + 1}
          </text>
        ))}
        <text x={(M.l + W - M.r) / 2} y={plot.H - 4} className="axis-label" textAnchor="middle">
          step
        </text>
        <text x={12} y={(M.t + plot.H - M.b) / 2} className="axis-label" textAnchor="middle" transform={`rotate(-90 12 ${(M.t + plot.H - M.b) / 2})`}>
          loss (nats)
        </text>
        <path d={plot.path} className="train" />
        {marks.map((m) => {
          const mx = plot.x(Math.max(0, m.step - 0.5));
          return (
            <g key={`${m.kind}${m.step}`} className={`step-mark ${m.kind}`} data-testid={`mark-${m.kind}`}>
              <title>{m.label}</title>
              <line x1={mx} x2={mx} y1={M.t} y2={plot.H - M.b} />
              <text x={mx + 3} y={M.t + (m.kind === 'failure' ? 10 : 22)} className="tick">
                {m.kind === 'failure' ? '✕ failure' : '↺ recovery'}
              </text>
            </g>
          );
        })}
        {hovered !== null && Number.isFinite(losses[hovered]) && (
          <g className="hover-mark">
            <line x1={plot.x(hovered)} x2={plot.x(hovered)} y1={M.t} y2={plot.H - M.b} />
            <circle cx={plot.x(hovered)} cy={plot.y(losses[hovered])} r={4} />
          </g>
        )}
        {validation.map((v) => (
          <circle key={v.step} cx={plot.x(v.step)} cy={plot.y(v.loss)} r={3.5} className="val" />
        ))}
      </svg>
      <figcaption>
        <span className="key train">training</span>
        {validation.length > 0 && <span className="key val">validation</span>}
        {hovered !== null ? (
          <span className="hover-value" data-testid="loss-hover">
            step {hovered + 1}: training loss {losses[hovered].toFixed(4)}
            {hoverVal ? `, validation ${hoverVal.loss.toFixed(4)}` : ''}
          </span>
        ) : (
          <span className="muted">{summary}</span>
        )}
      </figcaption>
    </figure>
  );
}
