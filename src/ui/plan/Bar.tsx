/** A horizontal bar for a cost beside its peers (the Plan panel's profile and cut tables). */
const BAR_TRACK = { display: 'inline-block', width: '6em', height: '0.7em', marginRight: '0.3em', background: 'rgba(127,127,127,0.2)', borderRadius: 2 } as const;
const BAR_FILL = { display: 'block', height: '100%', background: '#5b9cff', borderRadius: 2 } as const;

export function Bar({ value, max, label }: { value: number; max: number; label: string }) {
  return (
    <span className="plan-bar" title={label} aria-label={label} style={BAR_TRACK}>
      <span style={{ ...BAR_FILL, width: `${max > 0 ? (100 * value) / max : 0}%` }} />
    </span>
  );
}
