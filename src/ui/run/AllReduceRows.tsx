/**
 * The data-parallel rows of the run's numbers: the step time with its
 * collectives, each stage's all-reduce (time and the bytes of gradients it
 * summed), the share of the step the collectives were not hidden behind
 * compute (each beside the simulator's, fed with the run's own op times and
 * the α–β ring fitted to its collectives), and the optimizer state each worker held (ZeRO-1 divides it by dp).
 */
import type { RunReport } from '../../runtime/report-types.ts';
import { bytes, ms, pct } from '../timeline/format.ts';

/** The range of a list of byte counts, as `a` or `a – b`. */
function byteRange(xs: readonly number[]): string {
  if (xs.length === 0) return '—';
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  return lo === hi ? bytes(lo) : `${bytes(lo)} – ${bytes(hi)}`;
}

export function AllReduceRows({ report }: { report: RunReport }) {
  const ar = report.allReduce;
  if (!ar) return null;
  const { dp, zero, overlap } = report.config;
  return (
    <>
      <tr className="group-start" data-testid="allreduce-step">
        <th scope="row">
          <span className="group-label">Data parallel (dp = {dp})</span>
          Step time with the all-reduce, ms{overlap ? '' : ' (after every worker is done)'}
        </th>
        <td>{ms(ar.stepMs)}</td>
        <td>{ar.simulated ? ms(ar.simulated.stepMs) : '—'}</td>
        <td>—</td>
      </tr>
      {ar.perStage.map((s, i) => (
        <tr key={i} data-testid="allreduce-stage">
          <th scope="row">
            {zero ? 'ZeRO-1 update' : 'All-reduce'} of stage {i}
          </th>
          <td>
            {ms(s.ms)} <span className="muted">· {bytes(s.bytes)}</span>
          </td>
          <td>{ar.simulated ? ms(ar.simulated.perStageMs[i]) : '—'}</td>
          <td>—</td>
        </tr>
      ))}
      <tr data-testid="allreduce-exposed">
        <th scope="row">All-reduce not hidden behind compute (share of the step)</th>
        <td>
          {ms(ar.exposedMs)} <span className="muted">· {pct(ar.share)}</span>
        </td>
        <td>{ar.simulated ? pct(ar.simulated.share) : '—'}</td>
        <td>—</td>
      </tr>
      <tr data-testid="optimizer-bytes">
        <th scope="row">Optimizer state per worker{zero ? ' (ZeRO-1: a 1/dp shard)' : ''}</th>
        <td>{byteRange(report.optimizerBytesPerWorker)}</td>
        <td>—</td>
        <td>—</td>
      </tr>
    </>
  );
}
