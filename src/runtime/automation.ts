/**
 * window.pipelab: the automation entry for headless runs (Playwright, the
 * benchmark). Plain JSON in, plain JSON out.
 *
 *   window.pipelab.defaultConfig()          the default run configuration
 *   window.pipelab.run(config, { signal })  resolves to the run report; aborting `signal`
 *                                           stops the run (at the latest after the step in
 *                                           flight), ends every worker, and resolves to a
 *                                           report of the steps done (rejects when none was);
 *                                           onStep(progress) is called after each step
 *   window.pipelab.runSingleDevice(config)  the same training on one device
 *   window.pipelab.liveWorkers()            stage workers alive now
 */
import type { TrainResult } from '../nn/train.ts';
import type { RunReport } from './report-types.ts';
import { defaultRunConfig, configFromQuery, type RunConfig } from './run-config.ts';
import { hasWebGpu, runInBrowser, runSingleDevice, type BrowserRunOptions } from './browser-run.ts';
import { WorkerRankHost } from './worker-host.ts';

export interface PipelabAutomation {
  defaultConfig(): RunConfig;
  /** The configuration in this page's URL query (defaults where absent or invalid) and the errors found. */
  urlConfig(): { config: RunConfig; errors: string[] };
  /**
   * The configuration is read once into a plain-JSON copy and validated before
   * any worker starts; a refusal rejects with `field = value: rule`.
   */
  run(config: RunConfig, opts?: Pick<BrowserRunOptions, 'readWeights' | 'recvTimeoutMs' | 'stepTimeoutMs' | 'signal' | 'onStep'>): Promise<RunReport>;
  runSingleDevice(config: RunConfig): Promise<TrainResult>;
  liveWorkers(): number;
  startedWorkers(): number;
  hasWebGpu(): boolean;
}

declare global {
  interface Window {
    pipelab: PipelabAutomation;
  }
}

export interface AutomationOptions {
  /** How this page reads its URL (the app's own reader, so both word every problem the same); default: the run keys alone. */
  readUrl?: (search: string) => { config: RunConfig; errors: string[] };
}

function runKeysOnly(search: string): { config: RunConfig; errors: string[] } {
  const { config, errors } = configFromQuery(search);
  return { config, errors: errors.map((e) => e.message) };
}

export function installAutomation(opts: AutomationOptions = {}): void {
  const readUrl = opts.readUrl ?? runKeysOnly;
  window.pipelab = {
    defaultConfig: defaultRunConfig,
    urlConfig: () => readUrl(window.location.search),
    run: (config, runOpts) => {
      const { readWeights, recvTimeoutMs, stepTimeoutMs, signal, onStep } = runOpts ?? {};
      return runInBrowser(config, { readWeights, recvTimeoutMs, stepTimeoutMs, signal, onStep });
    },
    runSingleDevice,
    liveWorkers: () => WorkerRankHost.liveWorkers(),
    startedWorkers: () => WorkerRankHost.startedWorkers(),
    hasWebGpu,
  };
}
