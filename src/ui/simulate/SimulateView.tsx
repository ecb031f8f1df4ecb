/**
 * Simulate only: any schedule at sizes no browser could train (64 ranks × 512
 * micro-batches and beyond), played against the cost model and drawn at once,
 * with the closed form beside it.
 */
import { useMemo } from 'react';
import { SCHEDULE_NAMES, SCHEDULES, type ScheduleName } from '../../schedule/index.ts';
import { patchSim } from '../../state/config-actions.ts';
import { SIM_LIMITS } from '../../state/sim-params.ts';
import { runSimulation, type SimOutcome } from '../../state/simulation.ts';
import { usePipeLab } from '../../state/store.ts';
import { CheckboxField, NumberField, SelectField } from '../controls/fields.tsx';
import { SCHEDULE_LABELS, SCHEDULE_MENU_LABELS } from '../controls/schedule-labels.ts';
import { num, pct } from '../timeline/format.ts';
import { TimelinePanel } from '../timeline/TimelinePanel.tsx';
import { ExportPanel } from '../exports/ExportPanel.tsx';
import { MemoryBars } from './MemoryBars.tsx';
import { PlanPanel } from '../plan/PlanPanel.tsx';

function useSimulation(): { outcome: SimOutcome | null; error: string | null } {
  const sim = usePipeLab((s) => s.sim);
  const problem = usePipeLab((s) => s.simProblem);
  return useMemo(() => {
    if (problem) return { outcome: null, error: problem.message };
    try {
      return { outcome: runSimulation(sim), error: null };
    } catch (e) {
      return { outcome: null, error: e instanceof Error ? e.message : String(e) };
    }
  }, [sim, problem]);
}

export function SimulateView() {
  const sim = usePipeLab((s) => s.sim);
  const problem = usePipeLab((s) => s.simProblem);
  const { outcome, error } = useSimulation();
  const kind = SCHEDULES[sim.schedule];
  const errorFor = (f: string) => (problem && problem.field === `sim.${f}` ? problem.message : null);
  const r = outcome?.result;
  const actions = outcome ? outcome.schedule.order.reduce((n, l) => n + l.length, 0) : 0;
  const peak = r ? Math.max(...r.memory.map((m) => m.peakMicrobatches)) : null;
  const closedPeak = outcome?.closedPeak ? Math.max(...outcome.closedPeak) : null;

  return (
    <div className="layout">
      <aside className="sidebar" aria-label="Simulation settings">
        <form className="config" aria-label="Simulation settings" onSubmit={(e) => e.preventDefault()}>
          {problem && (
            <p className="config-problem" role="alert">
              <b>Not valid:</b> {problem.message}
            </p>
          )}
          <fieldset>
            <legend>Schedule</legend>
            <SelectField<ScheduleName>
              label="Schedule"
              name="sim.schedule"
              value={sim.schedule}
              options={SCHEDULE_NAMES.map((s) => ({ value: s, label: SCHEDULE_MENU_LABELS[s] }))}
              onChange={(schedule) => patchSim({ schedule })}
              hint={`${kind.title}. ${kind.source}.`}
            />
            <div className="row2">
              <NumberField label="Ranks" name="sim.ranks" integer min={1} max={SIM_LIMITS.ranks} value={sim.ranks} onChange={(ranks) => patchSim({ ranks })} error={errorFor('ranks')} />
              <NumberField label="Micro-batches" name="sim.microbatches" integer min={1} max={SIM_LIMITS.microbatches} value={sim.microbatches} onChange={(microbatches) => patchSim({ microbatches })} error={errorFor('microbatches')} />
            </div>
            <NumberField
              label="Virtual stages per rank"
              name="sim.virtual"
              integer
              min={1}
              max={SIM_LIMITS.virtual}
              value={sim.virtual}
              onChange={(virtual) => patchSim({ virtual })}
              error={errorFor('virtual')}
              disabled={!kind.acceptsVirtual}
            />
          </fieldset>
          <fieldset>
            <legend>Cost model (per rank’s share of the model)</legend>
            <div className="row2">
              <NumberField label="F time" name="sim.costF" min={0} step={0.1} value={sim.costF} onChange={(costF) => patchSim({ costF })} error={errorFor('costF')} />
              <NumberField label="B time" name="sim.costB" min={0} step={0.1} value={sim.costB} onChange={(costB) => patchSim({ costB })} error={errorFor('costB')} />
            </div>
            {kind.splitBackward && (
              <div className="row2">
                <NumberField label="I time" name="sim.costI" min={0} step={0.1} value={sim.costI} onChange={(costI) => patchSim({ costI })} error={errorFor('costI')} hint="input gradient" />
                <NumberField label="W time" name="sim.costW" min={0} step={0.1} value={sim.costW} onChange={(costW) => patchSim({ costW })} error={errorFor('costW')} hint="weight gradient" />
              </div>
            )}
            <NumberField label="Link latency" name="sim.latency" min={0} step={0.1} value={sim.latency} onChange={(latency) => patchSim({ latency })} error={errorFor('latency')} hint="between ranks, same units" />
          </fieldset>
          <fieldset>
            <legend>Data parallel</legend>
            <NumberField
              label="Replicas (dp)"
              name="sim.dp"
              integer
              min={1}
              max={SIM_LIMITS.dp}
              value={sim.dp}
              onChange={(dp) => patchSim({ dp, zero: dp > 1 && sim.zero })}
              error={errorFor('dp')}
              hint={`${sim.dp} × ${sim.ranks} = ${(sim.dp * sim.ranks).toLocaleString('en-US')} workers; each stage's gradients are summed by a ring all-reduce over its ${sim.dp} replicas`}
            />
            <NumberField label="Gradients per rank, MB" name="sim.gradMB" min={0} step={1} value={sim.gradMB} onChange={(gradMB) => patchSim({ gradMB })} error={errorFor('gradMB')} disabled={sim.dp === 1} hint="split over its stages like its compute" />
            <div className="row2">
              <NumberField label="All-reduce latency, ms" name="sim.arLatencyMs" min={0} step={0.01} value={sim.arLatencyMs} onChange={(arLatencyMs) => patchSim({ arLatencyMs })} error={errorFor('arLatencyMs')} disabled={sim.dp === 1} hint="α, per chunk exchange" />
              <NumberField label="Bandwidth, MB/s" name="sim.arBandwidthMBs" min={0} step={100} value={sim.arBandwidthMBs} onChange={(arBandwidthMBs) => patchSim({ arBandwidthMBs })} error={errorFor('arBandwidthMBs')} disabled={sim.dp === 1} hint="β, one link" />
            </div>
            <CheckboxField label="Overlap the all-reduce with the backward" name="sim.overlap" checked={sim.overlap} onChange={(overlap) => patchSim({ overlap })} disabled={sim.dp === 1} />
            <CheckboxField label="ZeRO-1 (same volume: reduce-scatter + all-gather)" name="sim.zero" checked={sim.zero} onChange={(zero) => patchSim({ zero })} disabled={sim.dp === 1} />
            {errorFor('overlap') && <p className="field-error">{errorFor('overlap')}</p>}
            {errorFor('zero') && <p className="field-error">{errorFor('zero')}</p>}
            <p className="muted small">The all-reduce reads one time unit of the cost model as 1 ms.</p>
          </fieldset>
        </form>
      </aside>
      <div className="main-col">
        <TimelinePanel
          title={outcome ? `${SCHEDULE_LABELS[sim.schedule]}: ${sim.dp > 1 ? `${sim.dp} replicas × ` : ''}${sim.ranks} ranks × ${sim.microbatches} micro-batches` : 'Simulation'}
          measured={null}
          simulated={outcome?.result.timeline ?? null}
          mode="simulated"
          emptyText={error ?? 'Nothing to simulate.'}
          testId="sim-timeline"
          caption={
            outcome ? (
              <>
                {(actions * sim.dp).toLocaleString('en-US')} actions{sim.dp > 1 ? ` on ${(sim.dp * sim.ranks).toLocaleString('en-US')} workers` : ''} simulated and drawn in {outcome.tookMs.toFixed(0)} ms. Zoom in with the wheel to see single
                micro-batches.
              </>
            ) : undefined
          }
        />
        <div className="cards">
          <section className="panel" aria-labelledby="sim-numbers">
            <h2 id="sim-numbers">Simulated vs closed form</h2>
            <div className="table-scroll">
            <table className="numbers">
              <thead>
                <tr>
                  <th scope="col" />
                  <th scope="col">simulated</th>
                  <th scope="col">closed form</th>
                </tr>
              </thead>
              <tbody>
                <tr>
                  <th scope="row">Makespan (units)</th>
                  <td>{num(r?.makespan)}</td>
                  <td>{num(outcome?.closed?.makespan)}</td>
                </tr>
                <tr>
                  <th scope="row">Bubble</th>
                  <td>{pct(r?.bubble, 2)}</td>
                  <td>
                    {pct(outcome?.closed?.bubble, 2)}
                    {outcome?.closed && <span className="formula"> {outcome.closed.formula}</span>}
                  </td>
                </tr>
                <tr>
                  <th scope="row">Peak activations (micro-batches, worst rank)</th>
                  <td>{num(peak)}</td>
                  <td>{num(closedPeak)}</td>
                </tr>
                {sim.dp > 1 && (
                  <>
                    <tr data-testid="sim-step">
                      <th scope="row">Step with the all-reduce (units)</th>
                      <td>{num(r?.makespan)}</td>
                      <td>
                        {num(outcome?.closedMesh?.step)}
                        {outcome?.closedMesh && <span className="formula"> {outcome.closedMesh.formula}</span>}
                      </td>
                    </tr>
                    <tr data-testid="sim-allreduce">
                      <th scope="row">All-reduce per stage (units)</th>
                      <td>{num(r?.dp ? Math.max(...r.dp.allReduceTime) : null, 3)}</td>
                      <td>{num(outcome?.closedMesh?.allReduce, 3)}</td>
                    </tr>
                    <tr data-testid="sim-allreduce-share">
                      <th scope="row">All-reduce not hidden (share of the step)</th>
                      <td>{pct(r?.dp?.allReduceShare, 2)}</td>
                      <td>{pct(outcome?.closedMesh?.allReduceShare, 2)}</td>
                    </tr>
                  </>
                )}
                <tr>
                  <th scope="row">Micro-batches per unit time</th>
                  <td>{r ? num((sim.dp * sim.microbatches) / r.makespan, 3) : '—'}</td>
                  <td>{outcome?.closed && (sim.dp === 1 || outcome.closedMesh) ? num((sim.dp * sim.microbatches) / (outcome.closedMesh?.step ?? outcome.closed.makespan), 3) : '—'}</td>
                </tr>
              </tbody>
            </table>
            </div>
            {!outcome?.closed && outcome && <p className="muted small">The closed forms assume F = 1, B = 2 (I = W = 1) and free links; change the costs back to compare.</p>}
          </section>
          {r && <MemoryBars memory={r.memory} closed={outcome?.closedPeak ?? null} />}
          <ExportPanel title={`${sim.schedule}-${sim.dp > 1 ? `${sim.dp}x` : ''}${sim.ranks}x${sim.microbatches}-simulated`} timeline={r?.timeline ?? null} schedule={outcome?.schedule ?? null} />
          <PlanPanel />
        </div>
      </div>
    </div>
  );
}
