/**
 * window.pipelab: the automation entry for headless runs (Playwright, the
 * benchmark). Plain JSON in, plain JSON out.
 *
 *   window.pipelab.defaultConfig()          the default run configuration
 *   window.pipelab.run(config)              resolves to the run report
 *   window.pipelab.runSingleDevice(config)  the same training on one device
 *   window.pipelab.liveWorkers()            stage workers alive now
 *   window.pipelab.profile(config)          the profiling pass: per-block F/I/W, bytes, comm (src/plan/measure.ts)
 */
import type { TrainResult } from '../nn/train.ts';
import type { RunReport } from './report-types.ts';
import { defaultRunConfig, configFromQuery, type RunConfig } from './run-config.ts';
import { hasWebGpu, runInBrowser, runSingleDevice, type BrowserRunOptions } from './browser-run.ts';
import { WorkerRankHost } from './worker-host.ts';
import { measureProfile } from '../plan/measure.ts';
import type { Profile } from '../plan/profile.ts';

export interface PipelabAutomation {
  defaultConfig(): RunConfig;
  /** The configuration in this page's URL query (defaults where absent or invalid) and the errors found. */
  urlConfig(): { config: RunConfig; errors: string[] };
  run(config: RunConfig, opts?: Pick<BrowserRunOptions, 'readWeights' | 'recvTimeoutMs' | 'stepTimeoutMs'>): Promise<RunReport>;
  runSingleDevice(config: RunConfig): Promise<TrainResult>;
  /** Profiles `config`'s model block by block with a short real run (ZB-H1, one block per rank, one micro-batch). */
  profile(config: RunConfig): Promise<Profile>;
  liveWorkers(): number;
  startedWorkers(): number;
  hasWebGpu(): boolean;
}

declare global {
  interface Window {
    pipelab: PipelabAutomation;
  }
}

export function installAutomation(): void {
  window.pipelab = {
    defaultConfig: defaultRunConfig,
    urlConfig() {
      const { config, errors } = configFromQuery(window.location.search);
      return { config, errors: errors.map((e) => e.message) };
    },
    run: (config, opts) => runInBrowser(config, opts ?? {}),
    runSingleDevice,
    profile: (config) => measureProfile(config, (c) => runInBrowser(c, {})),
    liveWorkers: () => WorkerRankHost.liveWorkers(),
    startedWorkers: () => WorkerRankHost.startedWorkers(),
    hasWebGpu,
  };
}
