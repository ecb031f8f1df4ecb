/**
 * The hero: a timeline with its mode switch (measured, simulated, both), the
 * bubble and makespan in the corner, and the legend.
 */
import { useId, useMemo, type ReactNode } from 'react';
import { computeOnly, scaleOnto } from '../../state/store/index.ts';
import type { TimelineMode } from '../../state/store/index.ts';
import { isCompute, laneCount, makespan, timelineStats, type CollectiveKind, type CommKind, type Op, type Timeline } from '../../schedule/index.ts';
import { ms, num, pct } from './format.ts';
import { TimelineCanvas } from './TimelineCanvas.tsx';
import { TimelineLegend } from './TimelineLegend.tsx';
import type { Bounds } from './viewport.ts';

export interface TimelinePanelProps {
  title: string;
  measured: Timeline | null;
  simulated: Timeline | null;
  mode: TimelineMode;
  onModeChange?: (m: TimelineMode) => void;
  caption?: ReactNode;
  extent?: Bounds;
  height?: number;
  emptyText?: string;
  /** Extra controls at the right of the header. */
  actions?: ReactNode;
  testId?: string;
  /** Open the view on the actions of micro-batches below this (a long stream's first steps); Fit shows all. */
  openOn?: number;
  /** What a timeline holds, for its badges: a step (default), or a stream (PipeDream, 2BW: the whole run's one window). */
  window?: 'step' | 'stream';
  /** The mesh's replicas when the timeline holds only its first ones (firstReplicas): the label says how many are drawn. */
  replicasInMesh?: number;
}

const MODE_LABEL: Record<TimelineMode, string> = { measured: 'Measured', simulated: 'Simulated', overlay: 'Both' };

function opsIn(t: Timeline | null): Op[] {
  if (!t) return [];
  const seen = new Set<Op>();
  for (const iv of t.intervals) if (isCompute(iv)) seen.add(iv.op);
  return (['F', 'B', 'I', 'W'] as const).filter((o) => seen.has(o));
}

/** What the step's badge adds to the compute: the dp all-reduce(s), tp's collectives, DualPipe's sum over its copies. */
function collectivesLabel(kinds: readonly CollectiveKind[], stream: boolean): string {
  const dp = kinds.some((k) => !k.startsWith('tp-') && !k.startsWith('ep-') && k !== 'copy-sum');
  const main = dp ? (stream ? 'all-reduces' : 'all-reduce') : kinds.some((k) => k.startsWith('tp-')) ? 'tp collectives' : '';
  return [main, kinds.includes('ep-all-to-all') ? 'all-to-alls' : '', kinds.includes('copy-sum') ? 'copies’ sum' : ''].filter(Boolean).join(' and ');
}

export function TimelinePanel(props: TimelinePanelProps) {
  const { title, measured, simulated, onModeChange, caption, extent, height, emptyText, actions, testId } = props;
  const groupName = useId();
  const both = measured !== null && simulated !== null;
  const mode: TimelineMode = !measured ? 'simulated' : !simulated ? 'measured' : props.mode;

  const overlay = useMemo(() => {
    if (mode !== 'overlay' || !measured || !simulated) return null;
    return scaleOnto(simulated, measured);
  }, [mode, measured, simulated]);

  const primary = mode === 'simulated' ? simulated : measured;
  // Compute only, as the run report and the numbers table count a step.
  const stats = useMemo(() => (primary ? timelineStats(computeOnly(primary)) : null), [primary]);
  // A data-parallel step also ends with its collectives: say how long the whole step took beside the pipeline's makespan.
  const stepWithCollectives = useMemo(() => (primary && primary.intervals.some((iv) => iv.op === 'collective') ? makespan(primary) : null), [primary]);
  const ops = opsIn(primary ?? simulated);
  const { commKinds, collectiveKinds, epWait } = useMemo(() => {
    const comm = new Set<CommKind>();
    const coll = new Set<CollectiveKind>();
    let epWait = false;
    for (const iv of primary?.intervals ?? []) {
      if (iv.op === 'comm') comm.add(iv.comm ?? 'send');
      if (iv.op === 'collective') coll.add(iv.coll ?? 'reduce-scatter');
      if (iv.wait !== undefined) epWait = true;
    }
    return { commKinds: [...comm], collectiveKinds: [...coll], epWait };
  }, [primary]);
  const chunks = !!primary && primary.stages > primary.ranks;
  const source = mode === 'simulated' ? 'simulated' : 'measured';
  const dp = primary?.dp ?? 1;
  const whole = Math.max(dp, props.replicasInMesh ?? dp);
  const ranks = primary?.ranks ?? 0;
  const tp = primary?.tp ?? 1;
  const ep = primary?.ep ?? 1;
  const tpText = `${ep > 1 ? ` × ${ep} expert-parallel workers` : ''}${tp > 1 ? ` × ${tp} tensor-parallel workers` : ''}`;
  const label =
    `${title}: ${source} timeline, ` +
    (whole > dp
      ? `the first ${dp} of ${whole} replicas (${dp * ranks * ep * tp} of ${whole * ranks * ep * tp} workers; every replica plays the same step) × ${ranks} ranks${tpText}`
      : dp > 1 || tp > 1 || ep > 1
        ? `${dp > 1 ? `${dp} replicas × ` : ''}${ranks} ranks${tpText} = ${primary ? laneCount(primary) : 0} workers`
        : `${ranks} ranks`);

  return (
    <section className="panel timeline-panel" aria-label={title} data-testid={testId}>
      <header className="panel-head">
        <h2>{title}</h2>
        {both && onModeChange && (
          <fieldset className="segmented" aria-label="Timeline source">
            <legend className="visually-hidden">Timeline source</legend>
            {(['measured', 'simulated', 'overlay'] as const).map((m) => (
              <label key={m} className={mode === m ? 'on' : ''}>
                <input type="radio" name={groupName} value={m} checked={mode === m} onChange={() => onModeChange(m)} />
                {MODE_LABEL[m]}
              </label>
            ))}
          </fieldset>
        )}
        {actions}
      </header>
      <div className="timeline-stage">
        {stats && (
          <div className="bubble-badge" aria-live="off">
            <span className="stat">
              <span className="big" data-testid="badge-bubble">{pct(stats.bubble)}</span> bubble{primary?.source === 'measured' ? `, ${props.window ?? 'step'} drawn` : ', simulated'}
            </span>
            <span className="sep" />
            <span className="stat">
              <span data-testid="badge-makespan">{primary?.unit === 'ms' ? ms(stats.makespan) : `${num(stats.makespan)} u`}</span> makespan
            </span>
            {stepWithCollectives !== null && (
              <>
                <span className="sep" />
                <span className="stat">
                  <span data-testid="badge-step">{primary?.unit === 'ms' ? ms(stepWithCollectives) : `${num(stepWithCollectives)} u`}</span> {props.window === 'stream' ? 'the stream with its' : 'step with the'}{' '}
                  {collectivesLabel(collectiveKinds, props.window === 'stream')}
                </span>
              </>
            )}
            {mode === 'overlay' && overlay && (
              <span className="overlay-note">
                simulated outlines scaled ×{overlay.factor.toFixed(2)} to the measured makespan
              </span>
            )}
          </div>
        )}
        <TimelineCanvas timeline={primary} overlay={overlay?.timeline ?? null} label={label} extent={extent} height={height} emptyText={emptyText} openOn={props.openOn} />
      </div>
      <footer className="panel-foot">
        <TimelineLegend ops={ops.length ? ops : ['F', 'B']} commKinds={commKinds} collectiveKinds={collectiveKinds} epWait={epWait} overlay={mode === 'overlay'} chunks={chunks} />
        {caption && <p className="caption">{caption}</p>}
      </footer>
    </section>
  );
}
