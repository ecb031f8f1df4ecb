/**
 * Run, pause, resume, single-step and stop, over runInBrowser. A run is the
 * store's 'training' session (its abort, step gate and meter are the store's
 * `control`), so it does not start while Compare measures, and the reverse;
 * its progress, losses and live timeline go into the store as steps land (at
 * most every 100 ms, off the path between two steps: live-writes.ts), the
 * report and what is derived from the trained weights at the end.
 */
import { runInBrowser } from '../../runtime/browser-run.ts';
import { runDurably } from '../../run-state/durable-run.ts';
import { pageCheckpoints } from '../../run-state/page-checkpoints.ts';
import { noteRecovery, noteSave, refreshCheckpoints, useCheckpoints } from './checkpoint-actions.ts';
import type { RunReport } from '../../runtime/report/index.ts';
import type { RunConfig } from '../../config/run-config.ts';
import { isTwoD } from '../../data/datasets.ts';
import { runsAsStream } from '../../schedule/registry.ts';
import { ProgressMeter } from '../store/index.ts';
import { StepGate } from '../store/index.ts';
import { beginSession, endSession, idleProgress, noRunResults, sessionBusyReason, usePipeLab, type RunProgress, type SessionControl } from '../store/index.ts';
import { decisionBoundary, sampleTrainedNames, sampleTrainedText, type WeightMap } from './trained-model.ts';
import { LiveWrites } from './live-writes.ts';
import { validationLossOffThread } from './eval-off-thread.ts';
import type { PipeLabState } from '../store/index.ts';

/** The shortest time between two writes of a run's live figures (loss, timeline, progress) to the store: live-writes.ts. */
const LIVE_WRITE_MS = 100;

interface ActiveRun extends SessionControl {
  readonly kind: 'training';
  readonly gate: StepGate;
  readonly meter: ProgressMeter;
}

/** The training run in progress, from the store. */
function activeRun(): ActiveRun | null {
  const c = usePipeLab.getState().control;
  return c && c.kind === 'training' ? (c as ActiveRun) : null;
}

function patchRun(patch: Partial<RunProgress>): void {
  usePipeLab.setState((s) => ({ run: { ...s.run, ...patch } }));
}

/** Why the run button is off, or null when a run can start. */
export function cannotRunReason(): string | null {
  const s = usePipeLab.getState();
  if (s.session === 'training') return 'A run is in progress.';
  const busy = sessionBusyReason();
  if (busy) return `Cannot train now: ${busy}.`;
  if (s.webgpu.state === 'checking') return 'Still looking for WebGPU.';
  if (s.webgpu.state === 'unavailable') return 'WebGPU is not available in this browser; the simulator still works.';
  if (s.configProblem) return `Fix the configuration first: ${s.configProblem.message}`;
  return null;
}

/**
 * Starts a run of the current configuration; `paused` starts it held, running
 * one step (single-step from idle); `resume` starts it from the
 * configuration's last checkpoint. The run saves its state every
 * checkpointEvery steps and at its end or stop, and recovers (up to 3 times) from its
 * last checkpoint when it fails (src/run-state/durable-run.ts).
 */
/** Steps of MoE routing counts the store keeps while a run goes on. */
const LIVE_MOE_LOAD_STEPS = 500;

export async function startRun(opts: { paused?: boolean; resume?: boolean } = {}): Promise<void> {
  if (cannotRunReason() !== null) return;
  const config: RunConfig = usePipeLab.getState().config;
  const run: ActiveRun = { kind: 'training', abort: new AbortController(), gate: new StepGate(opts.paused ?? false, opts.paused ? 1 : 0), meter: new ProgressMeter() };
  beginSession(run);
  useCheckpoints.setState({ recoveries: [] });
  const t0 = performance.now();
  const stream = runsAsStream(config.schedule);
  // Each step's figures, written off the path from one step to the next (a write renders the page).
  const live = new LiveWrites<PipeLabState>((f) => usePipeLab.setState(f), LIVE_WRITE_MS);
  usePipeLab.setState({
    run: { ...idleProgress(), status: 'starting', steps: config.steps, config },
    ...noRunResults(),
  });
  // The held-out loss of the untrained model (the seed's initial weights): the validation curve's first point, asked for
  // once the first step has landed (not at Run, where the workers start), so that a long run's curve starts with it.
  let untrainedAsked = false;
  const showUntrained = () => {
    if (untrainedAsked) return;
    untrainedAsked = true;
    void validationLossOffThread(config, null).then(
      (loss) => {
        const now = activeRun();
        if (now === run || now === null) addValidation(0, loss);
      },
      (e: unknown) => console.warn('PipeLab: validation loss of the initial weights failed:', e),
    );
  };
  try {
    const report = await runDurably(config, {
      signal: run.abort.signal,
      readWeights: true,
      // A validation curve: every evalEvery steps the weights come back and the
      // held-out loss is computed from them on the CPU reference.
      weightsEvery: config.evalEvery,
      onWeights: (step, w) => {
        // The decision boundary follows the training (2-D sets), drawn from the same weights.
        if (isTwoD(config.dataset)) {
          void decisionBoundary(config, w).then(
            (boundary) => {
              if (activeRun() === run) usePipeLab.setState({ boundary });
            },
            (e: unknown) => console.warn('PipeLab: decision boundary failed:', e),
          );
        }
        // Text: samples follow the training, from the same weights.
        // Late samples still count, unless a newer run has started (it reset them).
        if (config.dataset === 'text') {
          void showTextSamples(config, step + 1, w, () => {
            const now = activeRun();
            return now === run || now === null;
          });
        }
        void validationLossOffThread(config, w).then(
          (loss) => {
            // Late results still count, unless a newer run has started (it reset the curve).
            const now = activeRun();
            if (now === run || now === null) addValidation(step, loss);
          },
          (e: unknown) => console.warn('PipeLab: validation loss failed:', e),
        );
      },
      onStarted: (_plan, adapter) => patchRun({ adapter, status: 'running' }),
      // A stream has no step to pause at: its workers watch the gate and hold between their actions.
      pause: run.gate,
      // A pause saves the run's state first (as a stop does at the end).
      progressNow: () => run.gate.wouldHold && !run.abort.signal.aborted,
      beforeStep: async () => {
        if (run.gate.wouldHold && !run.abort.signal.aborted) {
          run.meter.reset();
          live.flush(); // the step it holds after, shown
          if (usePipeLab.getState().run.status !== 'stopping') patchRun({ status: 'paused' });
        }
        await run.gate.wait(run.abort.signal);
        // Written only when it changes: a write renders the page, here between two steps.
        if (!run.abort.signal.aborted && usePipeLab.getState().run.status !== 'running') {
          live.flush();
          patchRun({ status: 'running' });
        }
      },
      onStep: (p) => {
        showUntrained();
        const now = performance.now();
        run.meter.mark(now, p.step + 1);
        live.push((s) => {
          // A stream's onStep calls all land at its end, after its steps were told done (onStreamProgress) and their
          // losses drawn (onStreamLoss, the same numbers): the count stays, a loss already drawn is not drawn twice.
          const step = stream ? Math.max(s.run.step, p.step + 1) : p.step + 1;
          const est = run.meter.estimate(step, p.steps);
          return {
            losses: stream && s.losses.length > p.step ? s.losses.map((l, k) => (k === p.step ? p.loss : l)) : [...s.losses, p.loss],
            ...(p.auxLoss === undefined ? {} : { auxLosses: [...s.auxLosses, p.auxLoss] }),
            // The expert load's slider reaches this many steps back while the run goes on; the report keeps every step.
            ...(p.moeLoad === undefined ? {} : { moeLoads: [...s.moeLoads.slice(-(LIVE_MOE_LOAD_STEPS - 1)), p.moeLoad] }),
            liveTimeline: p.timeline,
            run: { ...s.run, step, steps: p.steps, elapsedMs: now - t0, stepsPerSecond: est.stepsPerSecond, etaMs: est.etaMs },
          };
        });
      },
      // A stream's losses as they land, while its one window runs: the curve and the loss figure move.
      onStreamLoss: (p) => {
        showUntrained();
        usePipeLab.setState((s) => (s.losses.length === p.step ? { losses: [...s.losses, p.loss] } : {}));
      },
      // A stream's steps as they are done, while its one window runs: the bar, steps/s and time left move.
      onStreamProgress: (p) => {
        const now = performance.now();
        run.meter.mark(now, p.stepsDone);
        usePipeLab.setState((s) => {
          if (p.stepsDone <= s.run.step) return {};
          const est = run.meter.estimate(p.stepsDone, p.steps);
          return { run: { ...s.run, step: p.stepsDone, steps: p.steps, elapsedMs: now - t0, stepsPerSecond: est.stepsPerSecond, etaMs: est.etaMs } };
        });
      },
    }, {
      store: pageCheckpoints,
      resume: opts.resume,
      onResumed: (state) => usePipeLab.setState((s) => ({ losses: [...state.losses], run: { ...s.run, step: state.stepsDone } })),
      onSaved: noteSave,
      onRecovery: (r) => {
        live.flush();
        noteRecovery({ ...r, failedAtStep: usePipeLab.getState().run.step });
        // The steps after the checkpoint are redone: the curve goes back to it.
        usePipeLab.setState((s) => ({ losses: s.losses.slice(0, r.fromStep), run: { ...s.run, step: r.fromStep } }));
      },
    }, runInBrowser);
    live.flush();
    finishRun(run, report, performance.now() - t0);
  } catch (e) {
    live.flush();
    // Stopped before the first step landed (e.g. while the workers started): a stop, not a failure.
    if (run.abort.signal.aborted) {
      patchRun({ status: 'stopped', error: null, stepsPerSecond: null, etaMs: null });
      return;
    }
    const message = e instanceof Error ? e.message : String(e);
    patchRun({ status: 'error', error: message, stepsPerSecond: null, etaMs: null });
  } finally {
    endSession(run);
    void refreshCheckpoints(config);
  }
}

function finishRun(run: ActiveRun, report: RunReport, elapsedMs: number): void {
  const stopped = run.abort.signal.aborted;
  const last = report.losses.length;
  usePipeLab.setState((s) => ({
    report,
    liveTimeline: report.timeline,
    losses: report.losses.length >= s.losses.length ? [...report.losses] : s.losses,
    run: { ...s.run, status: stopped ? 'stopped' : 'done', step: last, elapsedMs, etaMs: null, adapter: report.adapter },
  }));
  void deriveResults(report);
}

/** Adds a validation point unless one is there for that step. */
function addValidation(step: number, loss: number): void {
  usePipeLab.setState((s) => (s.validation.some((v) => v.step === step) ? s : { validation: [...s.validation, { step, loss }].sort((a, b) => a.step - b.step) }));
}

/**
 * Decision boundary (2-D sets) or sampled names (names) from the weights the
 * run read back, and the validation loss before training (same seed, same
 * initial weights) and after it, on the CPU reference.
 */
export async function deriveResults(report: RunReport, seed = report.config.seed): Promise<void> {
  const w = report.weights;
  if (!w || report.losses.length === 0) return;
  try {
    if (isTwoD(report.config.dataset)) {
      const boundary = await decisionBoundary(report.config, w);
      if (usePipeLab.getState().report === report) usePipeLab.setState({ boundary });
    } else if (report.config.dataset === 'text') {
      await showTextSamples(report.config, report.losses.length, w, () => usePipeLab.getState().report === report, seed);
    } else {
      const names = await sampleTrainedNames(report.config, w, 16, seed);
      if (usePipeLab.getState().report === report) usePipeLab.setState({ names });
    }
    if (seed === report.config.seed && usePipeLab.getState().report === report) {
      const last = report.losses.length - 1;
      addValidation(last, await validationLossOffThread(report.config, w));
      // The untrained model's point is usually there already (asked for at the first step): not computed twice.
      if (!usePipeLab.getState().validation.some((v) => v.step === 0)) addValidation(0, await validationLossOffThread(report.config, null));
    }
  } catch (e) {
    console.warn('PipeLab: could not derive results from the trained weights:', e);
  }
}

/** Held-out prompts the page continues. */
const TEXT_SAMPLES = 3;
/** The weights text was last asked to be sampled from (to sample again at another temperature). */
interface TextSampling {
  config: RunConfig;
  step: number;
  weights: WeightMap;
  current: () => boolean;
  seed: number;
}
let lastTextWeights: TextSampling | null = null;
let sampling = false;

/**
 * Samples the text model's weights at the page's temperature and shows them
 * while `current()` holds. One sampling at a time: weights that come while one
 * is drawn wait, and when it ends the latest weights asked for (or the same
 * ones at a temperature that moved meanwhile) are drawn next, so the last
 * weights of a run are always shown.
 */
async function showTextSamples(config: RunConfig, step: number, weights: WeightMap, current: () => boolean, seed = config.seed + step): Promise<void> {
  lastTextWeights = { config, step, weights, current, seed };
  if (sampling) return;
  sampling = true;
  try {
    let job: TextSampling | null = lastTextWeights;
    while (job) {
      const temperature = usePipeLab.getState().sampleTemperature;
      try {
        const samples = await sampleTrainedText(job.config, job.weights, TEXT_SAMPLES, job.seed, temperature);
        const shown = usePipeLab.getState().textSamples;
        if (job.current() && (!shown || shown.step <= job.step)) usePipeLab.setState({ textSamples: { step: job.step, samples } });
      } catch (e) {
        console.warn('PipeLab: could not sample text:', e);
      }
      const next: TextSampling | null = lastTextWeights;
      job = next !== job || usePipeLab.getState().sampleTemperature !== temperature ? next : null;
    }
  } finally {
    sampling = false;
  }
}

/** Samples the last weights again (another draw, or the temperature changed). */
export function sampleTextAgain(draw: number): void {
  const last = lastTextWeights;
  if (!last) return;
  void showTextSamples(last.config, last.step, last.weights, last.current, last.config.seed + last.step + draw * 7919);
}

/** Sets the temperature text is sampled at, and samples again at it. */
export function setSampleTemperature(t: number): void {
  usePipeLab.setState({ sampleTemperature: t });
  sampleTextAgain(0);
}

export function pauseRun(): void {
  const active = activeRun();
  if (!active) return;
  active.gate.pause();
  // The status turns to 'paused' when the step in flight ends and the gate holds; a stream's workers hold at once,
  // each before its next action.
  const { run } = usePipeLab.getState();
  if (run.status === 'running' && runsAsStream(run.config?.schedule ?? usePipeLab.getState().config.schedule)) {
    active.meter.reset();
    patchRun({ status: 'paused' });
  }
}

export function resumeRun(): void {
  const active = activeRun();
  if (!active) return;
  active.gate.resume();
  patchRun({ status: 'running' });
}

/** One more step, then hold; from idle, starts a run held after its first step. */
export function stepRun(): void {
  const active = activeRun();
  if (!active) {
    void startRun({ paused: true });
    return;
  }
  active.gate.stepOnce();
}

export function stopRun(): void {
  const active = activeRun();
  if (!active) return;
  active.abort.abort();
  patchRun({ status: 'stopping' });
}
