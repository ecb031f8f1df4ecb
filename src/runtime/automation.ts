/**
 * window.pipelab: the automation entry for headless runs (Playwright, the
 * benchmark). Plain JSON in, plain JSON out.
 *
 *   window.pipelab.defaultConfig()          the default run configuration
 *   window.pipelab.run(config)              resolves to the run report; refused (naming
 *                                           what runs) while another run holds the workers
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
  run(config: RunConfig, opts?: Pick<BrowserRunOptions, 'readWeights' | 'recvTimeoutMs' | 'stepTimeoutMs'>): Promise<RunReport>;
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

/**
 * The page's one-session rule as automation sees it: `begin` claims the
 * workers for an automation run and returns its end, or throws naming the
 * session that holds them.
 */
export interface SessionGate {
  begin(): () => void;
}

/** Without a page (the benchmark page): automation runs exclude each other. */
function ownRunsGate(): SessionGate {
  let running = false;
  return {
    begin() {
      if (running) throw new Error('cannot start a run started through window.pipelab.run: a run started through window.pipelab.run is going; wait for it to end');
      running = true;
      return () => {
        running = false;
      };
    },
  };
}

export function installAutomation(gate: SessionGate = ownRunsGate()): void {
  window.pipelab = {
    defaultConfig: defaultRunConfig,
    urlConfig() {
      const { config, errors } = configFromQuery(window.location.search);
      return { config, errors: errors.map((e) => e.message) };
    },
    async run(config, opts) {
      const end = gate.begin();
      try {
        return await runInBrowser(config, opts ?? {});
      } finally {
        end();
      }
    },
    runSingleDevice,
    liveWorkers: () => WorkerRankHost.liveWorkers(),
    startedWorkers: () => WorkerRankHost.startedWorkers(),
    hasWebGpu,
  };
}
