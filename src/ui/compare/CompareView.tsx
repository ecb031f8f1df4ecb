/**
 * Compare schedules: the Train configuration under several schedules, their
 * timelines stacked on one time scale and their numbers in one table.
 */
import { Fragment, useMemo, useState } from 'react';
import { runsAsStream, scheduleKind, timelineStats, type RunScheduleName, type Timeline } from '../../schedule/index.ts';
import { cannotMeasureReason, COMPARE_SCHEDULES, FIT_PRESET_BUDGET_MIB, measureAll, measuredConfig, simulateAll, stopMeasuring } from '../../state/compare/index.ts';
import { COMPARE_LIMITS, type CompareParams } from '../../state/store/index.ts';
import { usePipeLab } from '../../state/store/index.ts';
import { CheckboxField, NumberField } from '../controls/fields.tsx';
import { SCHEDULE_LABELS } from '../controls/schedule-labels.ts';
import { compareCsv, compareRow, lastStep, perStep } from '../../state/compare/index.ts';
import { download } from '../exports/export-files.ts';
import { ms, num, pct, pp } from '../timeline/format.ts';
import { TimelinePanel } from '../timeline/TimelinePanel.tsx';
import { MemoryLanes } from '../timeline/MemoryLanes.tsx';
import { DpPpPanel } from './DpPpPanel.tsx';
import { ZeroPanel } from './ZeroPanel.tsx';
import { FitPanel } from './FitPanel.tsx';
import { EpPanel } from './EpPanel.tsx';
import { WhatWinsPanel } from './WhatWinsPanel.tsx';

export function CompareView() {
  const config = usePipeLab((s) => s.config);
  const measurements = usePipeLab((s) => s.compare);
  const session = usePipeLab((s) => s.session);
  const webgpu = usePipeLab((s) => s.webgpu);
  const mode = usePipeLab((s) => s.timelineMode);
  const setMode = usePipeLab((s) => s.setTimelineMode);
  const cp = usePipeLab((s) => s.compareParams);
  const setCp = (patch: Partial<CompareParams>) => usePipeLab.setState((s) => ({ compareParams: { ...s.compareParams, ...patch } }));
  const { schedules: picked, virtual, steps } = cp;
  const setVirtual = (v: number) => setCp({ virtual: v });
  const setSteps = (n: number) => setCp({ steps: n });
  const [sameScale, setSameScale] = useState(true);

  const entries = useMemo(() => simulateAll(config, picked, virtual, steps), [config, picked, virtual, steps]);
  const anyStream = picked.some(runsAsStream);

  const drawn = entries.map((e) => {
    const m = measurements[e.name];
    const measured = m?.timeline ?? null;
    const simulated = e.prediction?.result.timeline ?? null;
    const primary: Timeline | null = measured && mode !== 'simulated' ? measured : simulated;
    // The last measured step's figures, once per row.
    const last = m?.status === 'done' ? lastStep(m) : null;
    return { e, m, last, measured, simulated, primary };
  });
  const extentFor = useMemo(() => {
    const maxEnd: Record<string, number> = {};
    // One step's time scale: a stream (all the measured steps in one window) keeps its own and opens on its first step.
    for (const d of drawn) {
      if (!d.primary || runsAsStream(d.e.name)) continue;
      const st = timelineStats(d.primary);
      maxEnd[d.primary.unit] = Math.max(maxEnd[d.primary.unit] ?? 0, st.start + st.makespan);
    }
    return (t: Timeline | null) => (sameScale && t && maxEnd[t.unit] ? { t0: 0, t1: maxEnd[t.unit] } : undefined);
  }, [drawn, sameScale]);

  // A column for the whole step once any measured step has collectives: the compute makespan alone would hide them
  // (DualPipe's sum over its copies is its own; the replicas' all-reduce is every schedule's).
  const anyCollectives = drawn.some(({ last }) => last?.withCollectives != null);
  const why = session === 'comparing' ? null : cannotMeasureReason();
  const canMeasure = why === null;
  const toggle = (n: RunScheduleName, on: boolean) => setCp({ schedules: on ? COMPARE_SCHEDULES.filter((x) => x === n || picked.includes(x)) : picked.filter((x) => x !== n) });
  const layers = entries[0]?.config.layers ?? config.layers;

  return (
    <div className="layout">
      <aside className="sidebar" aria-label="Comparison settings">
        <form className="config" aria-label="Comparison settings" onSubmit={(e) => e.preventDefault()}>
          <fieldset>
            <legend>Preset</legend>
            <button type="button" className="preset-toggle" aria-pressed={cp.preset === 'dp-pp'} onClick={() => setCp({ preset: cp.preset === 'dp-pp' ? undefined : 'dp-pp' })}>
              dp × tp × pp at 8 workers
            </button>
            <p className="field-hint">
              The Train model on the same 8 workers and global batch as every replicas × tensor-parallel × ranks shape that fits it: bubble against all-reduce against tp’s
              per-layer exchanges (dp × pp on a character MLP when tp does not fit the model).
            </p>
            <button type="button" className="preset-toggle" aria-pressed={cp.preset === 'zero'} onClick={() => setCp({ preset: cp.preset === 'zero' ? undefined : 'zero' })}>
              ZeRO 0 → 3 at dp = 4
            </button>
            <p className="field-hint">The same run with nothing, the optimizer state, the gradients and the weights sharded across 4 replicas: memory per worker against bytes moved.</p>
            <button type="button" className="preset-toggle" aria-pressed={cp.preset === 'wins'} onClick={() => setCp({ preset: cp.preset === 'wins' ? undefined : 'wins' })}>
              What wins here
            </button>
            <p className="field-hint">The picked schedules simulated over the number of micro-batches for this model, under a memory cap: the winner at each m, drawn.</p>
            <button type="button" className="preset-toggle" aria-pressed={cp.preset === 'fit'} onClick={() => setCp({ preset: cp.preset === 'fit' ? undefined : 'fit' })}>
              Make it fit
            </button>
            <p className="field-hint">A GPT its {FIT_PRESET_BUDGET_MIB} MiB budget per worker refuses, run as is and with recomputation, ZeRO-3, swapping and optimizer offload: device peak against the budget, step time, losses.</p>
            <button type="button" className="preset-toggle" aria-pressed={cp.preset === 'ep'} onClick={() => setCp({ preset: cp.preset === 'ep' ? undefined : 'ep' })}>
              Experts across workers
            </button>
            <p className="field-hint">An MoE GPT on 4 workers as dp 2 × pp 2 and ep 2 × pp 2, and ep under DualPipe against 1F1B: the step and the all-to-alls’ share of it, measured and simulated.</p>
          </fieldset>
          <fieldset>
            <legend>Schedules</legend>
            {COMPARE_SCHEDULES.map((n) => (
              <CheckboxField key={n} label={SCHEDULE_LABELS[n]} name={`compare-${n}`} checked={picked.includes(n)} onChange={(on) => toggle(n, on)} />
            ))}
          </fieldset>
          <fieldset>
            <legend>Sizes</legend>
            <NumberField
              label="Stages per rank (interleaved, looped)"
              name="compare-virtual"
              integer
              min={1}
              max={COMPARE_LIMITS.virtual}
              value={virtual}
              onChange={setVirtual}
              hint={`ZB-V always holds 2. Every schedule runs the same ${layers + 1}-block model.`}
            />
            <NumberField label="Steps to measure" name="compare-steps" integer min={1} max={COMPARE_LIMITS.steps} value={steps} onChange={setSteps} hint="per schedule, on the workers" />
            <CheckboxField label="One time scale for all" name="compare-same-scale" checked={sameScale} onChange={setSameScale} />
          </fieldset>
          <div className="buttons">
            {session === 'comparing' ? (
              <button type="button" onClick={stopMeasuring}>
                ■ Stop measuring
              </button>
            ) : (
              <button type="button" className="primary" disabled={!canMeasure || entries.every((e) => e.problem !== null)} onClick={() => void measureAll(entries, steps)}>
                ▶ Measure each
              </button>
            )}
          </div>
          {why && webgpu.state === 'available' && <p className="muted small why-off" role="status">{why}</p>}
          <p className="muted small">
            Configuration from Train: {config.dp > 1 ? `${config.dp} replicas × ` : ''}{config.ranks} ranks, {config.microbatches} micro-batches, batch {config.batchSize}, {config.dataset}, seed {config.seed}.
            {webgpu.state === 'unavailable' && ' Without WebGPU the comparison is simulated only.'}
          </p>
        </form>
      </aside>
      <div className="main-col">
        {cp.preset === 'dp-pp' && <DpPpPanel steps={steps} />}
        {cp.preset === 'zero' && <ZeroPanel steps={steps} />}
        {cp.preset === 'fit' && <FitPanel steps={steps} />}
        {cp.preset === 'ep' && <EpPanel steps={steps} />}
        {cp.preset === 'wins' && <WhatWinsPanel names={picked} virtual={virtual} steps={steps} />}
        <section className="panel" aria-labelledby="compare-title" data-testid="compare-table">
          <h2 id="compare-title">Side by side</h2>
          <div className="table-scroll" tabIndex={0} role="region" aria-label="Comparison table (scrolls sideways on narrow windows)">
          <table className="numbers">
            <thead>
              <tr>
                <th scope="col">schedule</th>
                <th scope="col">v</th>
                <th scope="col">bubble, simulated</th>
                <th scope="col">closed form</th>
                <th scope="col" title="The most micro-batches' activations any rank holds at once">peak activations (micro-batches)</th>
                <th scope="col">bubble, measured (last step)</th>
                <th scope="col">makespan, ms (last step)</th>
                {anyCollectives && (
                  <th scope="col" title="The last step from its first action to its last collective's end: the compute, the replicas' all-reduce, tp's collectives and DualPipe's sum over its copies">
                    step with collectives, ms
                  </th>
                )}
                <th scope="col" title="What adds to the closed-form bubble: uneven stage costs, communication, ranks sharing one device (percentage points; see the Train view for the method)">
                  gap: stages · comm · shared device
                </th>
                <th scope="col">samples/s</th>
                <th scope="col">loss</th>
              </tr>
            </thead>
            <tbody>
              {drawn.map(({ e, m, last }) => (
                <tr key={e.name} data-testid={`compare-row-${e.name}`}>
                  <th scope="row">{SCHEDULE_LABELS[e.name]}</th>
                  <td>{e.config.virtual}</td>
                  <td className="strong">{pct(e.prediction?.result.bubble)}</td>
                  <td>{pct(e.prediction?.closed?.bubble)}</td>
                  <td>{e.prediction ? Math.max(...e.prediction.result.memory.map((x) => x.peakMicrobatches)) : '—'}</td>
                  <td>
                    {m?.status === 'done' ? pct(last?.bubble) : m?.status === 'running' ? 'running…' : m?.status === 'queued' ? 'queued' : m?.status === 'error' ? 'failed' : e.problem ? <span title={e.problem}>cannot run: see its timeline</span> : '—'}
                    {m?.status === 'done' && runsAsStream(e.name) && <span className="formula"> the stream</span>}
                  </td>
                  <td>
                    {ms(perStep(last?.makespan, e.name, e.config.steps))}
                    {m?.status === 'done' && runsAsStream(e.name) && <span className="formula"> stream ÷ {e.config.steps}</span>}
                  </td>
                  {anyCollectives && <td data-testid={`step-${e.name}`}>{ms(perStep(last?.withCollectives ?? last?.makespan, e.name, e.config.steps))}</td>}
                  <td data-testid={`gap-${e.name}`}>{m?.gap ? m.gap.steps.slice(1).map((g) => pp(g.adds)).join(' · ') : '—'}</td>
                  <td>{num(m?.samplesPerSecond, 0)}</td>
                  <td>{num(m?.finalLoss, 4)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          </div>
          <div className="buttons">
            <button
              type="button"
              data-testid="compare-csv"
              title="The table as CSV, a row per schedule with the configuration it is measured with: simulated figures always, measured ones once measured"
              onClick={() =>
                download({
                  name: `pipelab-compare-${config.dataset}-${config.ranks}x${config.microbatches}.csv`,
                  type: 'text/csv',
                  data: compareCsv(drawn.map(({ e, m }) => compareRow(e, m)), new Map(entries.map((e) => [e.name, measuredConfig(e, steps)]))),
                })
              }
            >
              Download the table (CSV)
            </button>
          </div>
          <p className="muted small">Simulated at equal model cost: a rank’s share costs F = 1, B = 2 whatever its number of chunks. Measured: the last of the measured steps, the step its timeline below draws (the same figures as its badge); samples/s: the mean over the measured steps. Gap: how much of the distance from the closed form comes from uneven stage costs, from communication, and from ranks sharing one device (the rest), each from a simulation with the measured op and message times. The synchronous schedules compute the same update, so their losses agree.
            {anyCollectives && ' Step with collectives: the makespan and what follows the compute (the replicas’ all-reduce, tp’s collectives, DualPipe’s sum of its two model copies’ gradients), as the timeline’s badge counts it.'}
            {anyStream &&
              ` PipeDream and PipeDream-2BW run the ${steps} measured step${steps === 1 ? '' : 's'} as one stream, with no flush between them: their bubble (simulated and measured) is the stream's, their makespan the stream's ÷ its steps; their updates read stale weights (PipeDream one version a micro-batch, 2BW one step behind), so their losses differ.`}
          </p>
        </section>
        {drawn.map(({ e, m, measured, simulated }) => (
          <Fragment key={e.name}>
            <TimelinePanel
              key={e.name}
              title={`${SCHEDULE_LABELS[e.name]}${e.config.virtual > 1 ? ` (v = ${e.config.virtual})` : ''}${runsAsStream(e.name) ? ` · ${e.config.steps} step${e.config.steps === 1 ? '' : 's'}, one stream` : ''}`}
              measured={measured}
              simulated={simulated}
              mode={mode}
              onModeChange={setMode}
              extent={runsAsStream(e.name) ? undefined : extentFor(measured && mode !== 'simulated' ? measured : simulated)}
              {...(runsAsStream(e.name) ? { window: 'stream' as const, ...(e.config.steps > 1 ? { openOn: e.config.microbatches } : {}) } : {})}
              emptyText={e.problem ?? 'Nothing to draw.'}
              caption={
                m?.status === 'error' ? (
                  <span className="run-error">Measuring failed: {m.error}</span>
                ) : e.problem ? (
                  <span className="muted">{e.problem}</span>
                ) : runsAsStream(e.name) && e.config.steps > 1 ? (
                  `${scheduleKind(e.name).source}. One stream of ${e.config.steps} steps × ${e.config.microbatches} micro-batches, opened on its first step; Fit draws all.`
                ) : (
                  scheduleKind(e.name).source
                )
              }
              testId={`compare-${e.name}`}
            />
            {m?.memory && <MemoryLanes report={m.memory} testId={`compare-memory-${e.name}`} />}
          </Fragment>
        ))}
      </div>
    </div>
  );
}
