/**
 * The tensor-parallel rows of the run's numbers (report-tp.ts): the tp
 * collectives per split layer and micro-batch beside Megatron's count, each
 * stage's collectives (how many per micro-batch, the bytes a worker sent in
 * one, its own time beside the price of the α–β fit), the time the workers
 * spent in them (waits for the group included, and the exchanges alone beside
 * the simulator's priced share) and the fit itself.
 */
import type { RunReport } from '../../runtime/report/index.ts';
import { tpExchangeTime, tpLayerMessages } from '../../schedule/tp-cost.ts';
import { bytes, ms, pct } from '../timeline/format.ts';

/** The fitted line as text: α, and β in MB/s (or "α only" when one message size could not separate them). */
export function tpFitText(fit: { latencyMs: number; bytesPerMs: number | null; sizes: number }): string {
  const alpha = `α = ${fit.latencyMs < 0.1 ? fit.latencyMs.toFixed(3) : fit.latencyMs.toFixed(2)} ms`;
  const beta = fit.bytesPerMs;
  if (beta === null || !Number.isFinite(beta)) return `${alpha}, no β (${fit.sizes === 1 ? 'one size' : 'time flat in size'}: all α)`;
  return `${alpha}, β = ${(beta / 1000).toFixed(beta < 1e5 ? 1 : 0)} MB/s`;
}

export function TpRows({ report }: { report: RunReport }) {
  const tp = report.tensorParallel;
  if (!tp) return null;
  const isGpt = report.config.model === 'gpt';
  // Megatron's count per split layer and micro-batch: forward + backward.
  const paper = isGpt ? tpLayerMessages({ kind: 'gpt-block', width: 1, sequenceParallel: report.config.sequenceParallel ?? false }, 1, tp.t) : tpLayerMessages({ kind: 'linear', in: 1, out: tp.t }, 1, tp.t);
  const perLayer = [...new Set(tp.perStage.filter((s) => s.splitLayers > 0).map((s) => s.perLayer))];
  const price = (b: number) => tpExchangeTime(b / Math.max(1, tp.t - 1), tp.t, tp.fit.latencyMs, tp.fit.bytesPerMs ?? Infinity);
  return (
    <>
      <tr className="group-start" data-testid="tp-per-layer">
        <th scope="row">
          <span className="group-label">Tensor parallel (tp = {tp.t})</span>
          <span title={report.config.sequenceParallel ? "Forward and backward, on one worker; closed form: the count of this tab's sequence-parallel block (2 all-gathers and 2 reduce-scatters forward; backward, dy gathered with both LayerNorm outputs in one exchange, dx1 gathered, 2 reduce-scatters). The LayerNorms' gradients are summed apart, once per stage where its update reads them (the stage rows)" : "Forward and backward, on one worker; closed form: Megatron's count"}>tp collectives per {isGpt ? 'block' : 'linear'} and micro-batch</span>
        </th>
        <td>{perLayer.length > 0 ? perLayer.map((x) => x.toFixed(x % 1 ? 2 : 0)).join(' · ') : '—'}</td>
        <td>—</td>
        <td>{paper.forward.length + paper.backward.length}</td>
      </tr>
      {tp.perStage.map((s, i) =>
        s.splitLayers > 0 ? (
          <tr key={i} data-testid="tp-stage">
            <th scope="row" title={`${s.splitLayers} split layer${s.splitLayers > 1 ? 's' : ''}: collectives per micro-batch by op, bytes a worker sent in one, its own time (the least-waiting member's) and the others' wait; simulated: the fitted price`}>
              tp, stage {i}
            </th>
            <td className="wrap">
              {Object.entries(s.perMicrobatch)
                .filter(([, n]) => (n ?? 0) > 0)
                .map(([op, n]) => `${op} ${(n ?? 0).toFixed((n ?? 0) % 1 ? 1 : 0)}`)
                .join(', ')}{' '}
              <span className="muted">
                · {bytes(s.bytes)} · {ms(s.ownMs)} +{ms(s.waitMs)} wait
                {s.gradSumsPerStep !== undefined ? ` · LayerNorm gradients summed ${s.gradSumsPerStep.toFixed(s.gradSumsPerStep % 1 ? 1 : 0)}× a step` : ''}
              </span>
            </td>
            <td>{ms(price(s.bytes))}</td>
            <td>—</td>
          </tr>
        ) : null,
      )}
      <tr data-testid="tp-exposed">
        <th scope="row" title="Nothing overlaps a tp collective: a layer waits for the sum before its next kernel. Each is timed from the moment the device finished the kernels before it (the layer's compute is not tp time) to the moment its result is on the device. Waits for a slower member of the group included.">
          tp time per worker, waits included
        </th>
        <td>
          {ms(tp.exposedMs)} <span className="muted">· {pct(tp.share)}</span>
        </td>
        <td>—</td>
        <td>—</td>
      </tr>
      <tr data-testid="tp-own">
        <th scope="row" title="The exchanges themselves: each collective's least-waiting member's time, per worker and step, and its share of the step">
          tp exchanges alone
        </th>
        <td>
          {ms(tp.perWorker.ownMs)} <span className="muted">· {pct(tp.ownShare)}</span>
        </td>
        <td>{tp.simulated ? `${ms(tp.simulated.exposedMs)} · ${pct(tp.simulated.share)}` : '—'}</td>
        <td>—</td>
      </tr>
      <tr data-testid="tp-fit">
        <th scope="row" title={`One tp collective takes α + (t − 1)·bytes/β, fitted to this run's own times (${tp.fit.points} collectives)`}>
          tp α–β fit
        </th>
        <td className="wrap">{tpFitText(tp.fit)}</td>
        <td>—</td>
        <td>—</td>
      </tr>
    </>
  );
}
