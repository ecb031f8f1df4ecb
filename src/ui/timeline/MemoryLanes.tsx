/**
 * The memory lanes: under the timeline, one lane per worker, its allocator-tracked bytes over the step (the
 * worker's count, nn/memory-ledger.ts), stacked by what they hold (parameters, gradients, optimizer state,
 * activations kept for a backward, temporaries, communication staging, the GPU's uniform ring), its peak marked: all
 * its live bytes at the peak, then the part the formula counts (all but staging, the ring and bucket slack: measured.comparable)
 * beside the formula's (config/memory-budget.ts plannedPeaks, the report's formula.peak); where the worker keeps bytes in host memory (swapping,
 * offload), a dashed line of them apart from the device's stack. WebGPU reports no device memory: these are the bytes PipeLab's
 * allocator hands out, not what the driver holds.
 */
import { memoryLanes, LANE_SERIES, type RunReport } from '../../runtime/report/index.ts';
import { bytes } from './format.ts';

const COLORS = ['#4e79a7', '#f28e2b', '#76b7b2', '#e15759', '#bab0ac'];
const HOST_COLOR = '#b07aa1';
const W = 640;
const LANE_H = 44;
const LEFT = 116;

export function MemoryLanes({ report, testId = 'memory-lanes' }: { report: Pick<RunReport, 'memory' | 'heldBytesPerWorker'>; testId?: string }) {
  if (!report.memory || report.memory.length === 0) return null;
  const lanes = memoryLanes(report.memory);
  const end = Math.max(1e-9, ...lanes.flatMap((l) => l.points.map((p) => p.t)));
  const top = Math.max(1, ...lanes.map((l) => Math.max(l.peak.bytes, l.hostPeak)));
  const anyHost = lanes.some((l) => l.hostPeak > 0);
  const x = (t: number) => LEFT + ((W - LEFT - 8) * t) / end;
  const H = lanes.length * LANE_H + 18;
  return (
    <figure className="memory-lanes" data-testid={testId}>
      <svg viewBox={`0 0 ${W} ${H}`} width="100%" role="img" aria-label="Memory per worker over the step, stacked by kind">
        {lanes.map((lane) => {
          const y0 = lane.worker * LANE_H + LANE_H - 4;
          const y = (b: number) => y0 - ((LANE_H - 10) * b) / top;
          const held = report.heldBytesPerWorker[lane.worker];
          // A report saved before the comparable count: its whole peak.
          const comparable = held?.measured?.comparable ?? held?.measured?.peak ?? lane.peak.bytes;
          // Cumulative stacks, bottom first; each series an area between its lower and upper bound (steps: a count holds until the next sample).
          const cum = lane.points.map((p) => p.stack.reduce<number[]>((acc, v) => [...acc, (acc[acc.length - 1] ?? 0) + v], []));
          return (
            <g key={lane.worker} data-testid="memory-lane" data-worker={lane.worker} data-peak={lane.peak.bytes} data-comparable={comparable ?? ''} data-formula-peak={held?.formula.peak ?? ''} data-host-peak={lane.hostPeak}>
              <text x={4} y={y0 - 18} fontSize={10} fill="currentColor">
                worker {lane.worker} · {bytes(lane.peak.bytes)}
              </text>
              <text x={4} y={y0 - 6} fontSize={9} fill="currentColor" opacity={0.7}>
                {held ? `${bytes(comparable)} / ${bytes(held.formula.peak)}` : ''}
                <title>the peak less communication staging, the uniform ring and the pool&apos;s bucket rounding (which the formula leaves out) / the formula&apos;s peak</title>
              </text>
              {LANE_SERIES.map((s, k) => {
                const upper: string[] = [];
                const lower: string[] = [];
                lane.points.forEach((p, i) => {
                  const next = lane.points[i + 1]?.t ?? p.t;
                  const hi = cum[i][k], lo = k > 0 ? cum[i][k - 1] : 0;
                  upper.push(`${x(p.t)},${y(hi)}`, `${x(next)},${y(hi)}`);
                  lower.unshift(`${x(next)},${y(lo)}`, `${x(p.t)},${y(lo)}`);
                });
                return <polygon key={s.name} points={[...upper, ...lower].join(' ')} fill={COLORS[k]} opacity={0.85}><title>{s.name}</title></polygon>;
              })}
              {lane.hostPeak > 0 && (
                // Host memory, apart from the device's stack: bytes leaving (swap-out) and returning (swap-in), an offloaded optimizer's state.
                <polyline
                  data-testid="memory-lane-host"
                  points={lane.points.flatMap((p, i) => [`${x(p.t)},${y(p.host)}`, `${x(lane.points[i + 1]?.t ?? p.t)},${y(p.host)}`]).join(' ')}
                  fill="none"
                  stroke={HOST_COLOR}
                  strokeWidth={1.5}
                  strokeDasharray="4 2"
                >
                  <title>{`host memory, at most ${bytes(lane.hostPeak)}`}</title>
                </polyline>
              )}
              <line x1={x(lane.peak.t)} x2={x(lane.peak.t)} y1={y(lane.peak.bytes) - 3} y2={y0} stroke="currentColor" strokeDasharray="2 2" />
              <circle cx={x(lane.peak.t)} cy={y(lane.peak.bytes)} r={2.5} fill="currentColor">
                <title>{`peak ${bytes(lane.peak.bytes)} at ${lane.peak.t.toFixed(1)} ms`}</title>
              </circle>
            </g>
          );
        })}
      </svg>
      <figcaption className="muted small">
        Memory per worker over the step (allocator-tracked bytes: what PipeLab&apos;s buffers hold, not the driver&apos;s own; WebGPU
        reports no device memory), stacked:{' '}
        {LANE_SERIES.map((s, k) => (
          <span key={s.name}>
            <span style={{ color: COLORS[k] }}>■</span> {s.name}{' '}
          </span>
        ))}
        {anyHost && (
          <span>
            <span style={{ color: HOST_COLOR }}>╌</span> host memory, apart from the device (swapped activations leaving and returning, an offloaded optimizer){' '}
          </span>
        )}
        ; ● each worker&apos;s peak: all its live bytes, then those the formula counts (all but staging, the uniform ring and the pool&apos;s bucket rounding) / the formula.
      </figcaption>
    </figure>
  );
}
