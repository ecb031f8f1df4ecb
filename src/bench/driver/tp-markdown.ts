/** The tp suite's tables (tp-suite.ts): the grid's steps measured beside simulated, its tp collectives, and the micro-benchmark. */
import type { AlphaBeta } from '../../plan/allreduce-fit.ts';
import { shapeLabel, type TpGridRow, type TpMicroRow } from '../tp-suite.ts';
import type { SuiteResult } from './suites.ts';

const f = (x: number, d = 1) => x.toFixed(d);
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
const signed = (x: number) => `${x >= 0 ? '+' : ''}${pct(x)}`;
const size = (b: number) => (b >= 1 << 20 ? `${f(b / (1 << 20), b % (1 << 20) ? 2 : 0)} MiB` : `${f(b / 1024, b % 1024 ? 1 : 0)} KiB`);

/** β of the run's fit: ∞ where it read α alone (one size) or the larger size came out no slower (β at its clamp). */
function beta(fit: { bytesPerMs: number | null; sizes: number }): string {
  if (fit.bytesPerMs === null || !Number.isFinite(fit.bytesPerMs) || fit.bytesPerMs >= 1e11) return fit.sizes > 1 ? '∞ (no slower with size)' : '∞ (one size)';
  return `${f(fit.bytesPerMs / 1000, 0)} MB/s`;
}

function table(head: string[], rows: string[][]): string {
  return [`| ${head.join(' | ')} |`, `|${' --- |'.repeat(head.length)}`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

export function tpTable(res: SuiteResult): string {
  const rows = res.rows as TpGridRow[];
  const target = (res.meta?.target as number | undefined) ?? 0.1;
  const grid = table(
    ['model', 'dp × tp × pp', 'm per replica', 'step ms measured', 'step ms simulated', 'simulated − measured', `within ${f(100 * target, 0)}%`, 'compute-only makespan: simulated − measured', 'bubble', 'tp collectives per worker per step (per split layer and micro-batch)', 'tp share of the step measured (own; simulated)', 'tp own ms in the run by tensor (micro-benchmark model)', "run's α–β fit", 'samples/s'],
    rows.map((r) => {
      const tp = r.tp;
      const perLayer = tp ? [...new Set(tp.perStage.filter((s) => s.splitLayers > 0).map((s) => f(s.perLayer, 1)))].join(', ') : '';
      const fit = tp?.fit;
      return [
        r.model,
        shapeLabel(r.shape).replace(/×/g, ' × '),
        String(r.m),
        f(r.mesh?.stepMs ?? r.makespanMeasuredMs),
        f(r.mesh?.stepSimulatedMs ?? r.makespanSimulatedMs),
        signed(r.error),
        Math.abs(r.error) <= target ? 'yes' : '**no**',
        signed(r.computeError),
        pct(r.bubbleMeasured),
        tp ? `${f(tp.perWorker.count, 0)} (${perLayer})` : '—',
        tp ? `${pct(tp.share)} (${pct(tp.ownShare)}; ${tp.simulated ? pct(tp.simulated.share) : 'n/a'})` : '—',
        r.tpSizes?.length ? r.tpSizes.map((x) => `${size(x.bytes)}: ${f(x.runMs, 2)} (${f(x.benchMs, 3)})`).join(', ') : '—',
        fit ? `α ${f(fit.latencyMs, 2)} ms, β ${beta(fit)}` : '—',
        f(r.samplesPerSecond, 0),
      ];
    }),
  );
  const micro = (res.meta?.micro as TpMicroRow[] | undefined) ?? [];
  const fits = (res.meta?.fits as Record<number, AlphaBeta> | undefined) ?? {};
  const bench = table(
    ['t', 'tensor', 'measured ms (median)', 'sent per member MB/s', 'α–β model ms', 'model − measured'],
    micro.map((r) => [String(r.t), `${size(r.bytes)}${r.block ? ' (GPT block)' : ''}`, f(r.medianMs, 3), f(r.sendMBps, 0), f(r.modelMs, 3), signed((r.modelMs - r.medianMs) / r.medianMs)]),
  );
  const fitLine = Object.entries(fits).map(([t, a]) => `t = ${t}: α = ${f(a.latencyMs, 3)} ms per round, β = ${f(a.bytesPerMs / 1000, 0)} MB/s`).join('; ');
  return `${grid}\n\nThe tp all-reduce micro-benchmark (one round of direct exchange; ${fitLine}):\n\n${bench}`;
}
