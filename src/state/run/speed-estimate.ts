/**
 * "Steps per second" before Run, so a visitor knows what a run will cost on
 * their device: the configuration runs for a few steps on the workers (which
 * stay warm for the Run after it), and the rate is taken over the steps after
 * the first (the first pays for warming caches and, cold, for compiling), from
 * the times the steps land on the page. The estimate belongs to the
 * configuration it measured: change it and the estimate is gone.
 */
import { runInBrowser } from '../../runtime/browser-run.ts';
import { runsAsStream } from '../../schedule/registry.ts';
import { configToQuery, type RunConfig } from '../../config/run-config.ts';
import { cannotRunReason } from './run-controller.ts';
import { beginSession, endSession, usePipeLab, type SessionControl } from '../store/index.ts';

/** Steps the estimate runs (the rate is over the last ESTIMATE_STEPS − 1). */
export const ESTIMATE_STEPS = 4;

/** Steps per second from the times (ms) the steps landed: over the steps after the first, or the first alone when it is the only one. */
export function stepsPerSecondOf(startMs: number, landedMs: readonly number[]): number {
  if (landedMs.length === 0) return NaN;
  if (landedMs.length === 1) return 1000 / Math.max(1e-3, landedMs[0] - startMs);
  return ((landedMs.length - 1) * 1000) / Math.max(1e-3, landedMs[landedMs.length - 1] - landedMs[0]);
}

/** The configuration an estimate runs: the same run, a few steps, no evaluation. */
export function estimateConfig(cfg: RunConfig): RunConfig {
  return { ...cfg, steps: Math.min(cfg.steps, ESTIMATE_STEPS), evalEvery: 0 };
}

/** The estimate of the form's configuration, when one was measured for exactly it. */
export function speedFor(cfg: RunConfig) {
  const s = usePipeLab.getState().speed;
  return s && s.key === configToQuery(cfg) ? s : null;
}

export async function estimateSpeed(): Promise<void> {
  if (cannotRunReason() !== null) return;
  const config = usePipeLab.getState().config;
  const key = configToQuery(config);
  const control: SessionControl = { kind: 'estimating', abort: new AbortController() };
  beginSession(control);
  usePipeLab.setState({ speed: { status: 'measuring', key } });
  const probe = estimateConfig(config);
  const landed: number[] = [];
  const t0 = performance.now();
  try {
    // A stream's steps land as they are told done while it runs (its onStep calls all come at its end).
    const land = () => void landed.push(performance.now());
    const report = await runInBrowser(probe, { signal: control.abort.signal, ...(runsAsStream(probe.schedule) ? { onStreamProgress: land } : { onStep: land }) });
    usePipeLab.setState({
      speed: { status: 'done', key, stepsPerSecond: stepsPerSecondOf(t0, landed), steps: config.steps, measuredSteps: Math.max(1, landed.length - 1), adapter: report.adapter },
    });
  } catch (e) {
    usePipeLab.setState({ speed: { status: 'error', key, message: e instanceof Error ? e.message : String(e) } });
  } finally {
    endSession(control);
  }
}
