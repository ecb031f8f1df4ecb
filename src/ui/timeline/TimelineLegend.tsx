/** What the colours and marks of the timeline mean. */
import type { Op } from '../../schedule/index.ts';
import { COMM_COLORS, OP_COLORS, OP_NAMES } from './colors.ts';

export interface TimelineLegendProps {
  ops: readonly Op[];
  comm?: boolean;
  overlay?: boolean;
  chunks?: boolean;
}

export function TimelineLegend({ ops, comm = false, overlay = false, chunks = false }: TimelineLegendProps) {
  return (
    <ul className="legend" aria-label="Timeline legend">
      {ops.map((op) => (
        <li key={op}>
          <span className="swatch" style={{ background: OP_COLORS[op] }} aria-hidden="true" />
          <b>{op}</b> {OP_NAMES[op]}
        </li>
      ))}
      <li>
        <span className="swatch hatch" aria-hidden="true" />
        idle (the bubble)
      </li>
      {chunks && <li className="muted">lighter shade: a rank’s second (fourth, …) model chunk</li>}
      {comm && (
        <li>
          <span className="swatch thin" style={{ background: COMM_COLORS.transfer }} aria-hidden="true" />
          <span className="swatch thin" style={{ background: COMM_COLORS['recv-wait'] }} aria-hidden="true" />
          communication (thin lane: in flight, waiting)
        </li>
      )}
      {overlay && (
        <li>
          <span className="swatch outline" aria-hidden="true" />
          simulated (dashed outline)
        </li>
      )}
    </ul>
  );
}
