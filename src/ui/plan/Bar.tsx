/**
 * Horizontal bars for costs beside their peers (the Plan panel's profile and
 * cut tables). A row of bars is a grid of tracks from 1.2em to 6em
 * (layout.css, .plan-bars): at full size where the table has room, narrower
 * before the table runs off the panel.
 */
export interface BarValue {
  value: number;
  label: string;
}

export function Bars({ bars, max }: { bars: readonly BarValue[]; max: number }) {
  return (
    <span className="plan-bars" style={{ gridTemplateColumns: `repeat(${bars.length}, minmax(1.2em, 6em))` }}>
      {bars.map((b, i) => (
        <span key={i} className="plan-bar" title={b.label} aria-label={b.label}>
          <span className="plan-bar-fill" style={{ width: `${max > 0 ? (100 * b.value) / max : 0}%` }} />
        </span>
      ))}
    </span>
  );
}
