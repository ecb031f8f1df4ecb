/**
 * The page's state in one zustand store: the run configuration and the
 * simulate-only parameters (both mirrored in the URL), the session (what holds
 * the workers now: idle, a training run, a comparison, an automation run) and
 * its live controls, the run's status and progress, the measured timelines,
 * losses and report, and the results that are derived after a run (sampled
 * names, decision boundary, comparisons). The actions that start work
 * (run-controller.ts, compare.ts) begin and end sessions here.
 */
import { create } from 'zustand';
import type { MoeLoadStep, RunReport } from '../../runtime/report/index.ts';
import { defaultRunConfig, type RunConfig } from '../../config/run-config.ts';
import type { Timeline } from '../../schedule/index.ts';
import type { BlockRange } from '../../nn/partition.ts';
import type { ConfigError } from '../../util/errors.ts';
import { defaultCompareParams, type CompareParams } from './compare-params.ts';
import { defaultSimParams, type SimParams } from './sim-params.ts';
import type { GapAttribution } from './explain.ts';
import type { ProgressMeter } from './progress.ts';
import type { StepGate } from './step-gate.ts';
import type { WebGpuSupport } from './webgpu-support.ts';


/** Whether the page's workers are prepared for the current configuration (prepare-workers.ts). */
export type WorkersReadiness =
  | { state: 'cold' }
  | { state: 'preparing'; ranks: number }
  | { state: 'ready'; ranks: number; ms: number }
  | { state: 'failed'; reason: string };

export type View = 'run' | 'compare' | 'simulate';
export const VIEWS: readonly View[] = ['run', 'compare', 'simulate'];

export type TimelineMode = 'measured' | 'simulated' | 'overlay';

/** What holds the workers now. The page runs one session at a time. */
export type Session = 'idle' | 'training' | 'comparing' | 'planning' | 'estimating' | 'automation';

/** The live handles of the session in progress. */
export interface SessionControl {
  readonly kind: Exclude<Session, 'idle'>;
  readonly abort: AbortController;
  /** Training: pause and single-step. */
  readonly gate?: StepGate;
  /** Training: steps per second and time left. */
  readonly meter?: ProgressMeter;
}

export type RunStatus = 'idle' | 'starting' | 'running' | 'paused' | 'stopping' | 'done' | 'stopped' | 'error';

export interface RunProgress {
  status: RunStatus;
  /** Steps finished. */
  step: number;
  steps: number;
  stepsPerSecond: number | null;
  etaMs: number | null;
  elapsedMs: number;
  /** What went wrong, as the runtime said it. */
  error: string | null;
  adapter: string | null;
  /** The configuration the current or last run uses (the form may have changed since). */
  config: RunConfig | null;
}

export interface ValidationPoint {
  step: number;
  loss: number;
}

/** A problem with a value, as shown to the person. */
export interface FieldProblem {
  field: string;
  message: string;
}

export interface BoundaryGrid {
  /** Grid cells per side. */
  size: number;
  /** Plot extent in data coordinates. */
  lo: number;
  hi: number;
  /** Predicted class per cell, row-major from the top-left (y = hi). */
  classes: Uint8Array;
  /** Probability of the predicted class per cell. */
  confidence: Float32Array;
  /** Training points to draw over the grid. */
  points: Float32Array;
  labels: Int32Array;
  classCount: number;
  accuracy: number;
}

/** One schedule of a comparison, measured for a few steps on the workers. */
export interface CompareMeasurement {
  status: 'queued' | 'running' | 'done' | 'error';
  timeline: Timeline | null;
  /** Mean compute makespan over the measured steps, ms. */
  makespanMs: number | null;
  /** Mean step with what follows the compute (the replicas' all-reduce, DualPipe's sum over its copies), ms; the makespan where nothing does. */
  stepMs: number | null;
  bubble: number | null;
  samplesPerSecond: number | null;
  finalLoss: number | null;
  error: string | null;
  /** Where the last step's bubble departs from the closed form (absent before it is measured). */
  gap?: GapAttribution | null;
  /** The last step's memory per worker and each worker's peaks, measured and formula (its memory lanes). */
  memory?: Pick<RunReport, 'memory' | 'heldBytesPerWorker'>;
}

/** One cut of the Plan panel, run for a few steps on the workers (src/state/compare/cut-runs.ts). */
export interface CutMeasurement {
  status: 'queued' | 'running' | 'done' | 'error';
  /** Mean step makespan over the measured steps, ms. */
  makespanMs: number | null;
  /** Mean measured bubble over the same steps. */
  bubble: number | null;
  /** Steps the means are over (the run's steps less the first, when there are several). */
  meanOf: number | null;
  /** The stages the run cut, as its report says. */
  stageBlocks: BlockRange[] | null;
  error: string | null;
}

/** "Your text": what is loaded, what is being read, what was refused, and the text a link names but cannot carry. */
export interface TextSourceState {
  /** The file being read now. */
  loading: string | null;
  /** The text loaded last (the page keeps it, by content hash, in src/data/text-registry.ts). */
  loaded: { name: string; hash: string; line: string } | null;
  /** Why the last file was refused (naming the file and the rule). */
  error: string | null;
  /**
   * A link to a run on a text this page does not have: the hash it names (null: the link names the
   * data set but no text, so any text will do), and the link's query to apply once the text is in.
   */
  pending: { hash: string | null; search: string } | null;
}

/** A speed estimate for one configuration (its link's query is `key`). */
export type SpeedEstimate =
  | { status: 'measuring'; key: string }
  | { status: 'done'; key: string; stepsPerSecond: number; steps: number; measuredSteps: number; adapter: string }
  | { status: 'error'; key: string; message: string };

/** Text sampled from the model being trained on "your text": a held-out prompt and what the model wrote after it. */
export interface TextSample {
  prompt: string;
  continuation: string;
}

export interface PipeLabState {
  view: View;
  webgpu: WebGpuSupport;
  /** The workers the page prepared at load (prepare-workers.ts). */
  workers: WorkersReadiness;
  config: RunConfig;
  /** Problems found in the URL at load (values replaced by defaults). */
  urlProblems: FieldProblem[];
  /** A problem with the configuration as edited (the run button is off while there is one). */
  configProblem: FieldProblem | null;
  sim: SimParams;
  simProblem: FieldProblem | null;
  timelineMode: TimelineMode;

  run: RunProgress;
  losses: number[];
  /** An MoE model's aux loss per step, beside the losses (empty for a dense model or a stream). */
  auxLosses: number[];
  /** An MoE model's routing counts per step while it runs (the report's moeLoad after it; empty for a dense model or a stream). */
  moeLoads: MoeLoadStep[];
  validation: ValidationPoint[];
  /** The last measured step's timeline, while running and after. */
  liveTimeline: Timeline | null;
  report: RunReport | null;

  names: string[] | null;
  boundary: BoundaryGrid | null;
  /** Samples of "your text" and the step (steps done) of the weights they came from. */
  textSamples: { step: number; samples: TextSample[] } | null;
  /** The softmax temperature text is sampled at. */
  sampleTemperature: number;
  text: TextSourceState;
  /** "Steps per second" before Run: measured on the first steps of the configuration (speed-estimate.ts). */
  speed: SpeedEstimate | null;

  compareParams: CompareParams;
  /** Measurements by schedule name (the simulated side is derived on the fly). */
  compare: Record<string, CompareMeasurement>;
  /** The Plan panel's cuts run for real, by the query of the configuration that ran (cut-runs.ts). */
  cutRuns: Record<string, CutMeasurement>;

  /** What holds the workers now; `control` holds its live handles. */
  session: Session;
  control: SessionControl | null;

  setView(v: View): void;
  setWebGpu(s: WebGpuSupport): void;
  setTimelineMode(m: TimelineMode): void;
  dismissUrlProblems(): void;
}

export function idleProgress(): RunProgress {
  return { status: 'idle', step: 0, steps: 0, stepsPerSecond: null, etaMs: null, elapsedMs: 0, error: null, adapter: null, config: null };
}

/** What a run produces, before it has produced any of it. */
export function noRunResults(): Pick<PipeLabState, 'losses' | 'auxLosses' | 'moeLoads' | 'validation' | 'liveTimeline' | 'report' | 'names' | 'boundary' | 'textSamples'> {
  return { losses: [], auxLosses: [], moeLoads: [], validation: [], liveTimeline: null, report: null, names: null, boundary: null, textSamples: null };
}

export function problemOf(e: ConfigError): FieldProblem {
  return { field: e.field, message: e.message };
}

export const usePipeLab = create<PipeLabState>()((set) => ({
  view: 'run',
  webgpu: { state: 'checking' },
  workers: { state: 'cold' },
  config: defaultRunConfig(),
  urlProblems: [],
  configProblem: null,
  sim: defaultSimParams(),
  simProblem: null,
  timelineMode: 'measured',

  run: idleProgress(),
  ...noRunResults(),
  sampleTemperature: 0.8,
  speed: null,
  text: { loading: null, loaded: null, error: null, pending: null },

  compareParams: defaultCompareParams(),
  compare: {},
  cutRuns: {},

  session: 'idle',
  control: null,

  setView: (view) => set({ view }),
  setWebGpu: (webgpu) => set({ webgpu }),
  setTimelineMode: (timelineMode) => set({ timelineMode }),
  dismissUrlProblems: () => set({ urlProblems: [] }),
}));

/** True while a run holds the workers. */
export function isActive(status: RunStatus): boolean {
  return status === 'starting' || status === 'running' || status === 'paused' || status === 'stopping';
}

const SESSION_WORDS: Record<Exclude<Session, 'idle'>, string> = {
  training: 'a training run (Train)',
  comparing: 'a comparison measuring schedules (Compare)',
  planning: 'a run of each cut (Plan)',
  estimating: 'a speed estimate (Train)',
  automation: 'a run started through window.pipelab.run',
};

/** Why nothing else can start now (naming the session that holds the workers), or null when idle. */
export function sessionBusyReason(): string | null {
  const { session } = usePipeLab.getState();
  return session === 'idle' ? null : `${SESSION_WORDS[session]} is going; stop it or wait for it to end`;
}

/** Starts a session with these controls; throws, naming the session in progress, when one is going. */
export function beginSession(control: SessionControl): void {
  const busy = sessionBusyReason();
  if (busy) throw new Error(`cannot start ${SESSION_WORDS[control.kind]}: ${busy}`);
  usePipeLab.setState({ session: control.kind, control });
}

/** Ends the session these controls belong to (a no-op if another has begun since). */
export function endSession(control: SessionControl): void {
  if (usePipeLab.getState().control === control) usePipeLab.setState({ session: 'idle', control: null });
}

/** The session rule for window.pipelab.run: an 'automation' session while it runs. */
export const automationSession = {
  begin(): () => void {
    const control: SessionControl = { kind: 'automation', abort: new AbortController() };
    beginSession(control);
    return () => endSession(control);
  },
};
