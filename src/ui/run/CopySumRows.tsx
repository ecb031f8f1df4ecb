/**
 * DualPipe's rows in the run's numbers (report-copies.ts): each model stage's
 * sum over its copies (the ranks of its ring, the bytes a member sent, the
 * ring's time from its last member's start to its last member's end, and the
 * members' wait for the last to start), then the step with the sum and what
 * the sum added to it (not with ZeRO, where it runs inside the replicas'
 * collectives), measured beside the simulator's, which plays each ring at that
 * measured time once both its ranks are done (schedule/simulate-copies.ts):
 * the steps agree when the pairs wait as the simulator says.
 */
import type { RunReport } from '../../runtime/report/index.ts';
import { bytes, ms, whole } from '../timeline/format.ts';

/** The two step rows: measured beside simulated. */
const TOTALS = {
  stepMs: { label: 'Step with the copies’ sum, ms', title: "The whole step: compute, collectives and the copies' sum (the timeline's badge)" },
  addedMs: {
    label: 'Added by the copies’ sum, ms',
    title:
      "The step less the step without the copies' sum: the sums and each pair's wait for its later rank. Measured, it also holds what a rank does between its last action and the sum, which the simulator does not play (the ranks holding a last stage read the step's losses back first)",
  },
} as const;

export function CopySumRows({ report }: { report: RunReport }) {
  const cs = report.copySum;
  if (!cs) return null;
  // With ZeRO the sum runs between a stage's reduce-scatter and its shard's update: the step without it cannot be
  // measured (the update and all-gather still follow), so what it adds is not shown; the replicas' step holds it.
  const inside = cs.insideReplicas;
  const { zero } = report.config;
  return (
    <>
      {cs.perModelStage.map((x, j) => (
        <tr key={j} className={j === 0 ? 'group-start' : ''} data-testid="copy-sum-stage">
          <th scope="row" title="One ring per model stage over the ranks holding its copies: read-back, the ring and write-back; from its last member's start to its last member's end, + the members' mean wait for the last to start">
            {j === 0 && <span className="group-label">Sum over the {cs.copies} model copies (DualPipe)</span>}
            model stage {j}, ranks {x.ranks.join(' ↔ ')}
          </th>
          <td className="wrap">
            {ms(x.ownMs)}{' '}
            <span className="muted">
              +{whole(ms(x.waitMs))} wait · {whole(bytes(x.bytes))}
            </span>
          </td>
          <td title="The simulator is given this time and plays each ring when both its ranks are done">{ms(x.ownMs)}</td>
          <td>—</td>
        </tr>
      ))}
      {(['stepMs', 'addedMs'] as const).filter((key) => key === 'stepMs' || !inside).map((key) => (
        <tr key={key} data-testid={key === 'stepMs' ? 'copy-sum-step' : 'copy-sum-added'}>
          <th scope="row" title={TOTALS[key].title}>
            {TOTALS[key].label}
          </th>
          <td>{ms(cs[key])}</td>
          <td>{cs.simulated ? ms(cs.simulated[key]) : '—'}</td>
          <td>—</td>
        </tr>
      ))}
      {inside && (
        <tr data-testid="copy-sum-inside">
          <th scope="row" colSpan={4} className="muted">
            With ZeRO-{zero} each owned chunk is summed between its reduce-scatter and its update, inside the step with the
            replicas’ collectives above.
          </th>
        </tr>
      )}
    </>
  );
}
