/**
 * Simulate only: any schedule at sizes no browser could train (64 ranks × 512
 * micro-batches and beyond), played against the cost model and drawn at once,
 * with the closed form beside it.
 */
import { useMemo } from 'react';
import { RUN_SCHEDULE_NAMES, runsAsStream, SCHEDULES, type RunScheduleName } from '../../schedule/index.ts';
import { patchSim } from '../../state/store/index.ts';
import { SIM_LIMITS, simWindowMicrobatches } from '../../state/store/index.ts';
import { runSimulation, type SimOutcome } from '../../state/simulation.ts';
import { usePipeLab } from '../../state/store/index.ts';
import { NumberField, SelectField } from '../controls/fields.tsx';
import { SCHEDULE_LABELS, SCHEDULE_MENU_LABELS } from '../controls/schedule-labels.ts';
import { num, pct } from '../timeline/format.ts';
import { TimelinePanel } from '../timeline/TimelinePanel.tsx';
import { ExportPanel } from '../exports/ExportPanel.tsx';
import { MemoryBars } from './MemoryBars.tsx';
import { SimMeshFields } from './SimMeshFields.tsx';
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
  const collName = sim.zero >= 2 ? `ZeRO-${sim.zero} collectives` : 'all-reduce';
  const stream = runsAsStream(sim.schedule);
  /** The micro-batches played: one step's, or a stream's steps × m. */
  const window = simWindowMicrobatches(sim);

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
            <SelectField<RunScheduleName>
              label="Schedule"
              name="sim.schedule"
              value={sim.schedule}
              options={RUN_SCHEDULE_NAMES.map((s) => ({ value: s, label: SCHEDULE_MENU_LABELS[s] }))}
              onChange={(schedule) => patchSim({ schedule })}
              hint={`${kind.title}. ${kind.source}.`}
            />
            <div className="row2">
              <NumberField label="Ranks" name="sim.ranks" integer min={1} max={SIM_LIMITS.ranks} value={sim.ranks} onChange={(ranks) => patchSim({ ranks })} error={errorFor('ranks')} />
              <NumberField label="Micro-batches" name="sim.microbatches" integer min={1} max={SIM_LIMITS.microbatches} value={sim.microbatches} onChange={(microbatches) => patchSim({ microbatches })} error={errorFor('microbatches')} hint={stream ? 'per step' : undefined} />
            </div>
            {stream && (
              <NumberField
                label="Steps in the stream"
                name="sim.steps"
                integer
                min={1}
                max={SIM_LIMITS.steps}
                value={sim.steps}
                onChange={(steps) => patchSim({ steps })}
                error={errorFor('steps')}
                hint={`no flush between steps: ${window.toLocaleString('en-US')} micro-batches in one order, the fill and drain paid once`}
              />
            )}
            <NumberField
              label="Virtual stages per rank"
              name="sim.virtual"
              integer
              min={kind.virtualStep}
              max={SIM_LIMITS.virtual}
              step={kind.virtualStep}
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
          <SimMeshFields sim={sim} errorFor={errorFor} />
        </form>
      </aside>
      <div className="main-col">
        <TimelinePanel
          title={
            outcome
              ? `${SCHEDULE_LABELS[sim.schedule]}: ${sim.dp > 1 ? `${sim.dp} replicas × ` : ''}${sim.ranks} ranks${sim.tp > 1 ? ` × tp ${sim.tp}` : ''} × ${sim.microbatches} micro-batches${stream ? ` × ${sim.steps} step${sim.steps === 1 ? '' : 's'}, one stream` : ''}`
              : 'Simulation'
          }
          measured={null}
          simulated={outcome?.result.timeline ?? null}
          mode="simulated"
          window={stream ? 'stream' : 'step'}
          emptyText={error ?? 'Nothing to simulate.'}
          testId="sim-timeline"
          caption={
            outcome ? (
              <>
                {(actions * sim.dp * sim.tp).toLocaleString('en-US')} actions{sim.dp * sim.tp > 1 ? ` on ${(sim.dp * sim.ranks * sim.tp).toLocaleString('en-US')} workers` : ''} simulated and drawn in {outcome.tookMs.toFixed(0)} ms. Zoom in with the wheel to see single
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
                  <td>{num(r?.dp?.computeMakespan ?? r?.copySum?.before ?? r?.makespan)}</td>
                  <td>{num(outcome?.closed?.makespan ?? outcome?.closedTp?.step)}</td>
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
                      <th scope="row">{stream ? `The stream with its ${collName}s (units)` : `Step with the ${collName} (units)`}</th>
                      <td>{num(r?.copySum?.before ?? r?.makespan)}</td>
                      <td>
                        {num(outcome?.closedMesh?.step)}
                        {outcome?.closedMesh && <span className="formula"> {outcome.closedMesh.formula}</span>}
                      </td>
                    </tr>
                    <tr data-testid="sim-allreduce">
                      <th scope="row">{sim.zero >= 2 ? 'ZeRO collectives per stage (units)' : stream ? `All-reduce per stage (units, its ${sim.steps} block${sim.steps === 1 ? '' : 's'})` : 'All-reduce per stage (units)'}</th>
                      <td>{num(r?.dp ? Math.max(...r.dp.allReduceTime) : null, 3)}</td>
                      <td>{num(outcome?.closedMesh ? outcome.closedMesh.allReduce * outcome.closedMesh.blocks : null, 3)}</td>
                    </tr>
                    <tr data-testid="sim-allreduce-share">
                      <th scope="row">{sim.zero >= 2 ? 'ZeRO collectives not hidden' : 'All-reduce not hidden'} (share of the {stream ? 'stream' : 'step'})</th>
                      <td>{pct(r?.dp?.allReduceShare, 2)}</td>
                      <td>{pct(outcome?.closedMesh?.allReduceShare, 2)}</td>
                    </tr>
                  </>
                )}
                {r?.copySum && (
                  <tr data-testid="sim-copy-sum">
                    <th scope="row" title="After its step each rank sums its stages' gradients with its partner's (r and p − 1 − r), a ring of 2 over the pipeline link: 2 × (latency + bytes / 2 / bandwidth) per model stage">
                      Step with the copies’ sum (units; {num(Math.max(...r.copySum.time), 3)} per model stage)
                    </th>
                    <td>{num(r.makespan)}</td>
                    <td>—</td>
                  </tr>
                )}
                {r?.tp && (
                  <tr data-testid="sim-tp-share">
                    <th scope="row">tp collectives (share of the step, none hidden)</th>
                    <td>{pct(r.tp.share, 2)}</td>
                    <td>{pct(outcome?.closedTp?.share, 2)}</td>
                  </tr>
                )}
                <tr>
                  <th scope="row">Micro-batches per unit time</th>
                  <td>{r ? num((sim.dp * window) / r.makespan, 3) : '—'}</td>
                  <td>{outcome?.closed && (sim.dp === 1 || outcome.closedMesh) ? num((sim.dp * window) / (outcome.closedMesh?.step ?? outcome.closed.makespan), 3) : outcome?.closedTp ? num(window / outcome.closedTp.step, 3) : '—'}</td>
                </tr>
              </tbody>
            </table>
            </div>
            {!outcome?.closed && !outcome?.closedTp && outcome && <p className="muted small">The closed forms assume F = 1, B = 2 (I = W = 1) and free links{sim.tp > 1 ? '; with tp, GPipe and 1F1B at one stage per rank and dp = 1' : ''}; change the costs back to compare.</p>}
          </section>
          {r && <MemoryBars memory={r.memory} closed={outcome?.closedPeak ?? null} />}
          <ExportPanel title={`${sim.schedule}-${sim.dp > 1 ? `${sim.dp}x` : ''}${sim.ranks}x${sim.tp > 1 ? `tp${sim.tp}x` : ''}${sim.microbatches}${stream ? `x${sim.steps}steps` : ''}-simulated`} timeline={r?.timeline ?? null} schedule={outcome?.schedule ?? null} />
          <PlanPanel />
        </div>
      </div>
    </div>
  );
}
