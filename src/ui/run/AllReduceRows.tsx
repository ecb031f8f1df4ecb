/**
 * The data-parallel rows of the run's numbers: the step time with its
 * collectives, each stage's all-reduce (time and the bytes of gradients it
 * summed), the share of the step the collectives were not hidden behind
 * compute (each beside the simulator's, fed with the run's own op times and
 * the α–β ring fitted to its collectives), and what each worker held by kind
 * (weights, gradients, optimizer state at rest; stashed activations; ZeRO-2/3's
 * transient buffers) beside the ZeRO paper's formula in the closed-form column.
 */
import type { RunReport } from '../../runtime/report/index.ts';
import { runsAsStream } from '../../schedule/registry.ts';
import { copiesOf, copyOfStage, modelStage } from '../../schedule/copies.ts';
import { bytes, ms, pct } from '../timeline/format.ts';

/** The range of a list of byte counts, as `a` or `a – b`. */
function byteRange(xs: readonly number[]): string {
  if (xs.length === 0) return '—';
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  // Shards differ by a value or two: a range that reads the same at both ends is one figure.
  return bytes(lo) === bytes(hi) ? bytes(lo) : `${bytes(lo)} – ${bytes(hi)}`;
}

export function AllReduceRows({ report }: { report: RunReport }) {
  const ar = report.allReduce;
  if (!ar) return null;
  const { dp, zero, overlap } = report.config;
  /** PipeDream-2BW on replicas: one window, an all-reduce per stage and block (step) inside it. */
  const stream = runsAsStream(report.config.schedule);
  // The blocks it ran (a stream stopped early ran fewer than its configuration's steps).
  const steps = Math.round(report.schedule.microbatches / report.config.microbatches);
  const held = report.heldBytesPerWorker ?? [];
  const kinds = [
    { key: 'weights', label: 'Weights' },
    { key: 'grads', label: 'Gradients' },
    { key: 'optimizer', label: 'Optimizer state' },
  ] as const;
  const sharded = (k: (typeof kinds)[number]['key']) => (k === 'optimizer' ? zero >= 1 : k === 'grads' ? zero >= 2 : zero >= 3);
  const collective = ['All-reduce', 'ZeRO-1 update', 'ZeRO-2 collectives', 'ZeRO-3 collectives'][zero];
  return (
    <>
      <tr className="group-start" data-testid="allreduce-step">
        <th scope="row">
          <span className="group-label">Data parallel (dp = {dp})</span>
          {stream ? `The stream's time with its all-reduces (${steps} blocks), ms` : <>Step time with the {zero >= 2 ? 'collectives' : 'all-reduce'}, ms{overlap || zero >= 2 ? '' : ' (after every worker is done)'}</>}
        </th>
        <td>{ms(ar.stepMs)}</td>
        <td>{ar.simulated ? ms(ar.simulated.stepMs) : '—'}</td>
        <td>—</td>
      </tr>
      {ar.perStage.map((s, i) => (
        <tr key={i} data-testid="allreduce-stage">
          <th scope="row">
            {collective} of stage {i}
            {copiesOf(report.schedule) > 1 && copyOfStage(report.schedule, i) > 0 ? ` (copy ${copyOfStage(report.schedule, i)} of stage ${modelStage(report.schedule, i)})` : ''}
            {zero >= 2 ? ' (their ring time in the step)' : stream ? ' (mean per block)' : ''}
          </th>
          <td>
            {ms(s.ms)} <span className="muted">· {bytes(s.bytes)}</span>
          </td>
          <td>{ar.simulated ? ms(ar.simulated.perStageMs[i]) : '—'}</td>
          <td>—</td>
        </tr>
      ))}
      <tr data-testid="allreduce-exposed">
        <th scope="row">{zero >= 2 ? 'Collectives' : 'All-reduce'} not hidden behind compute (share of the {stream ? 'stream' : 'step'})</th>
        <td>
          {ms(ar.exposedMs)} <span className="muted">· {pct(ar.share)}</span>
        </td>
        <td>{ar.simulated ? pct(ar.simulated.share) : '—'}</td>
        <td>—</td>
      </tr>
      <tr data-testid="ring-bytes">
        <th scope="row">Bytes each worker sent over its ring {stream ? `in the stream (${steps} blocks)` : 'per step'}</th>
        <td>{bytes(ar.ringBytesPerWorker ?? 0)}</td>
        <td>—</td>
        <td>{ar.ringBytesFormula !== undefined ? bytes(ar.ringBytesFormula) : '—'}</td>
      </tr>
      {kinds.map(({ key, label }) => (
        // The optimizer row keeps the test id it had when it was the only memory row.
        <tr key={key} data-testid={key === 'optimizer' ? 'optimizer-bytes' : `held-${key}`}>
          <th scope="row">
            {label} per worker{sharded(key) ? ` (ZeRO-${zero}: 1/${dp})` : ''}
          </th>
          <td>{byteRange(key === 'optimizer' && held.length === 0 ? report.optimizerBytesPerWorker : held.map((w) => w[key]))}</td>
          <td>—</td>
          <td>{held.length > 0 ? byteRange(held.map((w) => Math.round(w.formula[key]))) : '—'}</td>
        </tr>
      ))}
      <tr data-testid="held-stash">
        <th scope="row">Stashed activations per worker (peak)</th>
        <td>{byteRange(held.map((w) => w.stash))}</td>
        <td>—</td>
        <td>—</td>
      </tr>
      {zero >= 2 && (
        <tr data-testid="held-transient">
          <th scope="row" title="the peak of buffers that live only around an action: a micro-batch’s whole gradient before its reduce-scatter, and with ZeRO-3 the gathered weights">
            Transient per worker (peak: {zero === 3 ? 'gathered weights, ' : ''}a backward’s gradient)
          </th>
          <td>{byteRange(held.map((w) => w.transient))}</td>
          <td>—</td>
          <td>—</td>
        </tr>
      )}
    </>
  );
}
