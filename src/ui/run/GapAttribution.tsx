/**
 * Where the measured bubble's distance from the closed form comes from, in
 * steps a person can check: each row adds one measured effect to a simulation
 * (see state/store/explain.ts), the last row is what is left.
 */
import { useMemo } from 'react';
import type { RunReport } from '../../runtime/report/index.ts';
import { attributeGap } from '../../state/store/index.ts';
import { ms, pct, pp } from '../timeline/format.ts';


export function GapAttributionTable({ report, closedBubble }: { report: RunReport; closedBubble: number | null }) {
  const gap = useMemo(() => attributeGap(report, closedBubble), [report, closedBubble]);
  if (!gap) return null;
  return (
    <div className="gap" data-testid="gap-attribution">
      <h3>Why measured ≠ closed form</h3>
      <div className="table-scroll">
      <table className="numbers gap-table">
        <thead>
          <tr>
            <th scope="col">adding</th>
            <th scope="col">adds</th>
            <th scope="col">bubble</th>
          </tr>
        </thead>
        <tbody>
          {gap.steps.map((g) => (
            <tr key={g.id} data-gap={g.id}>
              <th scope="row">{g.label}</th>
              <td>{g.id === 'closed' ? '' : pp(g.adds)}</td>
              <td>{pct(g.bubble)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      </div>
      <p className="muted small">
        Check it: measured compute per stage (F + B + I + W, mean) {gap.stageMs.map((x) => ms(x)).join(' · ')}; mean time per message between ranks{' '}
        {ms(gap.commMsPerCrossing)}. Each row re-runs the simulator with one more measured effect; “the rest” is what the simulator cannot
        explain: here every rank’s worker shares one GPU, so ops of different ranks queue behind one another.
      </p>
    </div>
  );
}
