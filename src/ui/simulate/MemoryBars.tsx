/** Peak activations held per rank (micro-batches), as bars, with the closed form as ticks. */
import type { RankMemory } from '../../schedule/index.ts';

export function MemoryBars({ memory, closed, title = 'Peak activations per rank' }: { memory: readonly RankMemory[]; closed: readonly number[] | null; title?: string }) {
  const W = 420;
  const H = 150;
  const pad = { l: 34, r: 8, t: 10, b: 22 };
  const max = Math.max(1, ...memory.map((m) => m.peakMicrobatches), ...(closed ?? []));
  const n = memory.length;
  const bw = (W - pad.l - pad.r) / Math.max(1, n);
  const y = (v: number) => pad.t + (1 - v / max) * (H - pad.t - pad.b);
  const every = Math.max(1, Math.ceil(n / 16));
  const first = memory[0]?.peakMicrobatches ?? 0;
  const last = memory[n - 1]?.peakMicrobatches ?? 0;
  return (
    <section className="panel" aria-labelledby="mem-title">
      <h2 id="mem-title">{title}</h2>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`Peak micro-batch activations held: rank 0 holds ${first}, rank ${n - 1} holds ${last}, at most ${max}.`}>
        <line x1={pad.l} x2={W - pad.r} y1={y(0)} y2={y(0)} className="axis" />
        <text x={pad.l - 6} y={y(max)} className="tick" textAnchor="end" dominantBaseline="middle">{max}</text>
        <text x={pad.l - 6} y={y(0)} className="tick" textAnchor="end" dominantBaseline="middle">0</text>
        {memory.map((m, i) => (
          <rect key={m.rank} x={pad.l + i * bw + bw * 0.12} width={Math.max(0.5, bw * 0.76)} y={y(m.peakMicrobatches)} height={y(0) - y(m.peakMicrobatches)} className="bar">
            <title>{`rank ${m.rank}: ${m.peakMicrobatches} micro-batches${closed ? ` (closed form ${closed[i]})` : ''}`}</title>
          </rect>
        ))}
        {closed?.map((c, i) => <line key={i} x1={pad.l + i * bw} x2={pad.l + (i + 1) * bw} y1={y(c)} y2={y(c)} className="closed-tick" />)}
        {memory.map((m, i) => (i % every === 0 ? <text key={`t${i}`} x={pad.l + (i + 0.5) * bw} y={H - 6} className="tick" textAnchor="middle">{m.rank}</text> : null))}
      </svg>
      <p className="muted small">Bars: simulated; {closed ? 'lines: closed form. ' : ''}x axis: rank.</p>
    </section>
  );
}
