/**
 * The page's state in one zustand store: the run configuration and the
 * simulate-only parameters (both mirrored in the URL), the run's status and
 * progress, the measured timelines, losses and report, and the results that
 * are derived after a run (sampled names, decision boundary, comparisons).
 * Actions that start work live in run-controller.ts and compare-controller.ts.
 */
import { create } from 'zustand';
import type { RunReport } from '../runtime/report-types.ts';
import { defaultRunConfig, type RunConfig } from '../runtime/run-config.ts';
import type { Timeline } from '../schedule/index.ts';
import type { ConfigError } from '../util/errors.ts';
import { defaultCompareParams, type CompareParams } from './compare-params.ts';
import { defaultSimParams, type SimParams } from './sim-params.ts';
import type { GapAttribution } from './explain.ts';
import type { WebGpuSupport } from './webgpu-support.ts';

export type View = 'run' | 'compare' | 'simulate';
export const VIEWS: readonly View[] = ['run', 'compare', 'simulate'];

export type TimelineMode = 'measured' | 'simulated' | 'overlay';

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
  makespanMs: number | null;
  bubble: number | null;
  samplesPerSecond: number | null;
  finalLoss: number | null;
  error: string | null;
  /** Where the last step's bubble departs from the closed form (absent before it is measured). */
  gap?: GapAttribution | null;
}

export interface PipeLabState {
  view: View;
  webgpu: WebGpuSupport;
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
  validation: ValidationPoint[];
  /** The last measured step's timeline, while running and after. */
  liveTimeline: Timeline | null;
  report: RunReport | null;

  names: string[] | null;
  boundary: BoundaryGrid | null;

  compareParams: CompareParams;
  /** Measurements by schedule name (the simulated side is derived on the fly). */
  compare: Record<string, CompareMeasurement>;
  compareStatus: 'idle' | 'measuring';

  setView(v: View): void;
  setWebGpu(s: WebGpuSupport): void;
  setTimelineMode(m: TimelineMode): void;
  dismissUrlProblems(): void;
}

export function idleProgress(): RunProgress {
  return { status: 'idle', step: 0, steps: 0, stepsPerSecond: null, etaMs: null, elapsedMs: 0, error: null, adapter: null, config: null };
}

export function problemOf(e: ConfigError): FieldProblem {
  return { field: e.field, message: e.message };
}

export const usePipeLab = create<PipeLabState>()((set) => ({
  view: 'run',
  webgpu: { state: 'checking' },
  config: defaultRunConfig(),
  urlProblems: [],
  configProblem: null,
  sim: defaultSimParams(),
  simProblem: null,
  timelineMode: 'measured',

  run: idleProgress(),
  losses: [],
  validation: [],
  liveTimeline: null,
  report: null,

  names: null,
  boundary: null,

  compareParams: defaultCompareParams(),
  compare: {},
  compareStatus: 'idle',

  setView: (view) => set({ view }),
  setWebGpu: (webgpu) => set({ webgpu }),
  setTimelineMode: (timelineMode) => set({ timelineMode }),
  dismissUrlProblems: () => set({ urlProblems: [] }),
}));

/** True while a run holds the workers. */
export function isActive(status: RunStatus): boolean {
  return status === 'starting' || status === 'running' || status === 'paused' || status === 'stopping';
}
