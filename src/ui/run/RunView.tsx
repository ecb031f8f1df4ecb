/**
 * Train: the configuration on the left; run controls, the live timeline, the
 * numbers, the loss curve, what the model learned and the exports on the right.
 * Before a run the timeline shows the simulator's prediction for the schedule.
 */
import { useMemo } from 'react';
import type { RunConfig } from '../../config/run-config.ts';
import { predict, runWindowSchedule, simulateWithMeasured } from '../../state/store/index.ts';
import { meshOfRun, runsAsStream, scheduleKind, withEpLanes, workerCount } from '../../schedule/index.ts';
import { isActive, usePipeLab } from '../../state/store/index.ts';
import { LossChart } from '../charts/LossChart.tsx';
import { ConfigPanel } from '../controls/ConfigPanel.tsx';
import { scheduleLabel } from '../controls/schedule-labels.ts';
import { ExportPanel } from '../exports/ExportPanel.tsx';
import { NoWebGpuNotice } from '../NoWebGpuNotice.tsx';
import { Intro } from '../onboarding/Intro.tsx';
import { ResultsPanel } from '../results/ResultsPanel.tsx';
import { TimelinePanel } from '../timeline/TimelinePanel.tsx';
import { MemoryLanes } from '../timeline/MemoryLanes.tsx';
import { RunControls } from './RunControls.tsx';
import { RunNumbers } from './RunNumbers.tsx';
import { MoeLoadPanel } from './MoeLoadPanel.tsx';
import { useCheckpoints, type CheckpointView } from '../../state/run/index.ts';
import type { StepMark } from '../charts/LossChart.tsx';

/** The recoveries on the loss curve: where the run failed, and the checkpoint it went back to, for each. */
function recoveryMarks(rs: CheckpointView['recoveries']): StepMark[] {
  return rs.flatMap((r): StepMark[] => [
    { step: r.failedAtStep, kind: 'failure', label: `failed after step ${r.failedAtStep}: ${r.failure}` },
    { step: r.fromStep, kind: 'recovery', label: `recovered from the checkpoint of step ${r.fromStep}` },
  ]);
}

/** Same pipeline, so the same timeline: a stream's (PipeDream, 2BW) is its whole run, so its steps count too. */
/** A stream of more steps than this opens its timeline on this many. */
const STREAM_OPENING_STEPS = 4;

function samePipeline(a: RunConfig, b: RunConfig): boolean {
  return a.schedule === b.schedule && a.ranks === b.ranks && a.microbatches === b.microbatches && a.virtual === b.virtual && (!runsAsStream(a.schedule) || a.steps === b.steps);
}

export function RunView() {
  const formConfig = usePipeLab((s) => s.config);
  const run = usePipeLab((s) => s.run);
  const lastLive = usePipeLab((s) => s.liveTimeline);
  const lastReport = usePipeLab((s) => s.report);
  const losses = usePipeLab((s) => s.losses);
  const liveLoads = usePipeLab((s) => s.moeLoads);
  const validation = usePipeLab((s) => s.validation);
  const mode = usePipeLab((s) => s.timelineMode);
  const setMode = usePipeLab((s) => s.setTimelineMode);
  const webgpu = usePipeLab((s) => s.webgpu);
  const setView = usePipeLab((s) => s.setView);
  const configProblem = usePipeLab((s) => s.configProblem);
  const recoveries = useCheckpoints((s) => s.recoveries);

  // The run on screen while it runs, and after it while the form still asks for the same pipeline;
  // edit the pipeline and the view turns to the simulator's prediction for the new one.
  const showRun = run.config !== null && (isActive(run.status) || samePipeline(run.config, formConfig));
  const config = showRun && run.config ? run.config : formConfig;
  const report = showRun ? lastReport : null;
  const live = showRun ? lastLive : null;
  const stream = runsAsStream(config.schedule);
  // A stream's window is its whole run: the prediction plays every step's micro-batches, as the run does (a stopped
  // stream's: the steps it kept).
  const windowSteps = stream ? (report ? report.losses.length : config.steps) : 1;
  // The schedule that ran, or that a run would plan (auto: from the model's FLOPs within memCap); the prediction plays it.
  // Keyed by what it depends on, so typing a learning rate does not replay a long stream.
  const scheduleKey = scheduleKind(config.schedule).fromStageCosts ? JSON.stringify(config) : [config.schedule, config.ranks, config.microbatches, config.virtual, windowSteps].join('|');
  const schedule = useMemo(() => {
    try {
      return report?.schedule ?? runWindowSchedule(config, windowSteps);
    } catch {
      return null;
    }
  }, [report, scheduleKey]);
  const prediction = useMemo(
    () => (schedule ? predict({ schedule: config.schedule, ranks: config.ranks, microbatches: config.microbatches, virtual: config.virtual, dp: config.dp, tp: config.tp }, schedule) : null),
    [schedule, config.schedule, config.ranks, config.microbatches, config.virtual, config.dp, config.tp],
  );
  const simulated = useMemo(() => {
    if (report) return report.simulatedTimeline;
    if (live && prediction) return simulateWithMeasured(prediction.schedule, live);
    // The ep workers of a rank run its actions alike: the prediction drawn on each of their lanes.
    return prediction ? withEpLanes(prediction.result.timeline, config.ep ?? 1) : null;
  }, [report, live, prediction, config.ep]);
  const measured = report?.timeline ?? live;

  // A long stream opens on its first steps, where its lack of a flush shows; Fit draws all of it.
  const opensOnFirstSteps = stream && windowSteps > STREAM_OPENING_STEPS;
  const tp = config.tp ?? 1;
  const workers = workerCount(meshOfRun(config));
  const title = `${scheduleLabel(config.schedule)} · ${config.dp > 1 ? `${config.dp} replicas × ` : ''}${config.ranks} ranks${(config.ep ?? 1) > 1 ? ` × ep ${config.ep}` : ''}${tp > 1 ? ` × tp ${tp}` : ''} × ${config.microbatches} micro-batches${stream ? ` × ${config.steps} steps, one stream` : ''}`;
  const caption = measured
    ? `${stream ? `The stream of ${run.step} steps${run.step < run.steps ? ` (of ${run.steps}: stopped at a step boundary)` : ''}: what each worker did, ms from its start.` : `Step ${run.step} of ${run.steps}: what each worker did, ms from the step’s start.`}${report ? ' Simulated: the schedule replayed with the measured mean op times.' : ''}`
    : `Predicted by the simulator${stream ? ` over the whole run, ${config.steps} steps × ${config.microbatches} micro-batches with no flush between them` : ''} (a rank’s share of the model: F = 1, B = 2 units${tp > 1 ? `; each rank’s ${tp} tp workers run its actions together, their collectives measured in the run` : ''}). ${isActive(run.status) ? `Measuring it on ${workers} WebGPU workers${stream ? ': a stream’s timeline comes at its end' : ''}.` : `Press Run to measure it on ${workers} WebGPU workers.`}`;

  const opening = opensOnFirstSteps ? ` Opened on its first ${STREAM_OPENING_STEPS} steps; Fit draws all ${windowSteps}.` : '';

  return (
    <div className="layout run-layout">
      <div className="run-bar">
        {webgpu.state === 'unavailable' && <NoWebGpuNotice support={webgpu} onSimulate={() => setView('simulate')} />}
        <RunControls />
      </div>
      <div className="run-intro">
        <Intro />
      </div>
      <aside className="sidebar" aria-label="Configuration">
        <ConfigPanel disabled={isActive(run.status)} />
      </aside>
      <div className="main-col">
        <TimelinePanel
          title={title}
          measured={measured}
          simulated={simulated}
          mode={mode}
          onModeChange={setMode}
          caption={caption + opening}
          emptyText={configProblem ? configProblem.message : 'This schedule cannot be drawn at these sizes.'}
          testId="run-timeline"
          window={stream ? 'stream' : 'step'}
          openOn={opensOnFirstSteps ? STREAM_OPENING_STEPS * config.microbatches : undefined}
        />
        {report && <MemoryLanes report={report} />}
        {(config.experts ?? 0) > 0 && <MoeLoadPanel steps={showRun ? (report?.moeLoad ?? liveLoads) : []} running={isActive(run.status)} />}
        <div className="cards">
          <RunNumbers config={config} measured={measured} simulated={measured ? simulated : null} prediction={prediction} report={report} />
          <section className="panel" aria-labelledby="loss-title" data-testid="loss-panel" data-validation={JSON.stringify(validation)}>
            <h2 id="loss-title">Loss</h2>
            <LossChart losses={losses} validation={validation} marks={recoveryMarks(recoveries)} steps={run.steps || config.steps} />
            {validation.length > 0 && (
              <p className="muted small" data-testid="validation-note">
                Validation: mean loss on the held-out split, with the initial weights
                {stream
                  ? ' and after the last step (inside a stream its stages never hold one step’s weights at the same moment)'
                  : `${config.evalEvery > 0 ? `, every ${config.evalEvery === 1 ? 'step' : `${config.evalEvery} steps`}` : ''} and after the last step`}
                .
              </p>
            )}
          </section>
          <ResultsPanel />
          <ExportPanel title={`${config.schedule}-${config.ranks}x${config.microbatches}`} timeline={measured ?? simulated} schedule={schedule} report={lastReport} config={config} />
        </div>
      </div>
    </div>
  );
}
