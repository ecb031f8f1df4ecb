/**
 * window.pipelab: the automation entry for headless runs (Playwright, the
 * benchmark). Plain JSON in, plain JSON out.
 *
 *   window.pipelab.defaultConfig()          the default run configuration
 *   window.pipelab.run(config, { signal })  resolves to the run report; aborting `signal`
 *                                           stops the run (at the latest after the step in
 *                                           flight), ends every worker (a clean run's healthy
 *                                           ones wait warm for the next run), and resolves to a
 *                                           report of the steps done (rejects when none was);
 *                                           onStep(progress) is called after each step;
 *                                           onStreamProgress({ stepsDone, steps, elapsedMs }) as a
 *                                           stream's (PipeDream, 2BW) steps are done while it runs,
 *                                           onStreamLoss({ step, steps, loss, elapsedMs }) as their losses land;
 *                                           refused (naming what runs) while another run
 *                                           holds the workers; the run saves its state into
 *                                           window.pipelab.checkpoints every config.checkpointEvery
 *                                           steps (default 50; 0: never) and at its end, recovers (up to 3 times)
 *                                           from its last checkpoint when it fails (on fresh workers, or
 *                                           with config.recovery = 'fewer' on a smaller mesh), and with
 *                                           { resume: true } starts from the configuration's last
 *                                           checkpoint (src/run-state/durable-run.ts)
 *   window.pipelab.prepareWorkers(config?)  prepares warm workers for config (default: the default
 *                                           configuration) without training, as the page does at load
 *                                           (not under automation): resolves to { kept } workers;
 *                                           refused like run() while another run holds the workers
 *   window.pipelab.runSingleDevice(config)  the same training on one device
 *   window.pipelab.liveWorkers()            stage workers alive now in a run (not the warm idle ones)
 *   window.pipelab.warmWorkers()            stage workers kept warm between runs (warm-workers.ts)
 *   window.pipelab.startedWorkers()         stage workers ever started on this page
 *   window.pipelab.profile(config)          the profiling pass: per-block F/I/W, bytes, comm (src/plan/measure.ts)
 *   window.pipelab.loadText(name, text)     reads "your text" as the page reads pasted text and keeps it in
 *                                           this page; resolves to { hash, symbols, characters, line }, then
 *                                           run({ ...config, dataset: 'text', textHash: hash }) trains on it;
 *                                           a refused text rejects naming it and the rule
 *   window.pipelab.checkpoints              the checkpoints kept in this origin's IndexedDB: list, read,
 *                                           inspect, store, remove, reference (src/run-state/checkpoint-automation.ts)
 */
import type { TrainResult } from '../nn/train.ts';
import type { RunReport } from '../runtime/report/index.ts';
import { defaultRunConfig, configFromQuery, type RunConfig } from '../config/run-config.ts';
import { hasWebGpu, prepareWorkers, runInBrowser, runSingleDevice, type BrowserRunOptions } from '../runtime/browser-run.ts';
import { WorkerRankHost } from '../runtime/executor/index.ts';
import { warmWorkers } from '../runtime/executor/index.ts';
import { measureProfile } from '../runtime/measure-profile.ts';
import type { Profile } from '../plan/profile.ts';
import { ConfigError, requireFinite } from '../util/errors.ts';
import { unknownKeyRule } from '../util/nearest.ts';
import { corpusFromText, describeCorpus } from '../data/text-corpus.ts';
import { registerCorpus } from '../data/text-registry.ts';
import { checkpointAutomation, type CheckpointAutomation } from '../run-state/checkpoint-automation.ts';
import { PauseState } from '../runtime/executor/index.ts';
import { runDurably } from '../run-state/durable-run.ts';
import { pageCheckpoints } from '../run-state/page-checkpoints.ts';

export interface PipelabAutomation {
  defaultConfig(): RunConfig;
  /** The configuration in this page's URL query (defaults where absent or invalid) and the errors found. */
  urlConfig(): { config: RunConfig; errors: string[] };
  /**
   * The configuration is read once into a plain-JSON copy and validated before
   * any worker starts; a refusal rejects with `field = value: rule`.
   */
  run(config: RunConfig, opts?: Pick<BrowserRunOptions, 'readWeights' | 'recvTimeoutMs' | 'stepTimeoutMs' | 'signal' | 'onStep' | 'onStreamProgress' | 'onStreamLoss' | 'pause'> & { resume?: boolean }): Promise<RunReport>;
  /** A switch for run's `pause` option: set(true) holds a running stream's workers between their actions, set(false) lets them go on (runtime/executor/stream-pause.ts). */
  pauseSwitch(): PauseState;
  /** Prepares warm workers for `config` (default configuration when absent) without training; { kept: 0 } when workers are warm or being prepared already. */
  prepareWorkers(config?: RunConfig): Promise<{ kept: number }>;
  runSingleDevice(config: RunConfig): Promise<TrainResult>;
  /** Profiles `config`'s model block by block with a short real run (ZB-H1, one block per rank, one micro-batch). */
  profile(config: RunConfig): Promise<Profile>;
  /** Keeps a text in this page (see the module comment); refused like a file, by name and rule. */
  loadText(name: string, text: string): Promise<LoadedText>;
  liveWorkers(): number;
  warmWorkers(): number;
  startedWorkers(): number;
  hasWebGpu(): boolean;
  /** The checkpoints kept in this origin's IndexedDB. */
  checkpoints: CheckpointAutomation;
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

type RunOpts = NonNullable<Parameters<PipelabAutomation['run']>[1]>;

/** The run options, each read once and checked, naming the option, its value and the rule. */
export function runOptionsOf(input: unknown): RunOpts {
  if (input === undefined || input === null) return {};
  if (typeof input !== 'object') throw new ConfigError('options', input, 'must be an object {signal?, onStep?, onStreamProgress?, onStreamLoss?, pause?, readWeights?, resume?, recvTimeoutMs?, stepTimeoutMs?}');
  const known = ['signal', 'onStep', 'onStreamProgress', 'onStreamLoss', 'pause', 'readWeights', 'resume', 'recvTimeoutMs', 'stepTimeoutMs'];
  const out: RunOpts = {};
  for (const key of Object.keys(input)) {
    const value: unknown = (input as Record<string, unknown>)[key];
    if (!known.includes(key)) throw new ConfigError(`options.${key}`, value, unknownKeyRule(key, known, 'run option'));
    if (value === undefined) continue;
    if (key === 'signal') {
      if (!(value instanceof AbortSignal)) throw new ConfigError('options.signal', String(value), 'must be an AbortSignal (new AbortController().signal)');
      out.signal = value;
    } else if (key === 'onStep') {
      if (typeof value !== 'function') throw new ConfigError('options.onStep', value, 'must be a function');
      out.onStep = value as RunOpts['onStep'];
    } else if (key === 'onStreamProgress' || key === 'onStreamLoss') {
      if (typeof value !== 'function') throw new ConfigError(`options.${key}`, value, 'must be a function');
      if (key === 'onStreamProgress') out.onStreamProgress = value as RunOpts['onStreamProgress'];
      else out.onStreamLoss = value as RunOpts['onStreamLoss'];
    } else if (key === 'pause') {
      if (!(value instanceof PauseState)) throw new ConfigError('options.pause', typeof value === 'object' ? 'an object' : value, 'must be a switch from window.pipelab.pauseSwitch()');
      out.pause = value;
    } else if (key === 'readWeights' || key === 'resume') {
      if (typeof value !== 'boolean') throw new ConfigError(`options.${key}`, value, 'must be true or false');
      out[key] = value;
    } else {
      const ms = requireFinite(`options.${key}`, value, { min: 1, max: 3_600_000 });
      if (key === 'recvTimeoutMs') out.recvTimeoutMs = ms;
      else out.stepTimeoutMs = ms;
    }
  }
  return out;
}

/** What loadText says of a text it kept. */
export interface LoadedText {
  hash: string;
  symbols: number;
  characters: number;
  /** The page's line for it (characters, symbols, what reads as unknown). */
  line: string;
}

/** Without a page (the benchmark page): the text is read on this thread. */
async function loadTextHere(name: string, text: string): Promise<LoadedText> {
  const c = await corpusFromText(name, text);
  registerCorpus(c);
  return { hash: c.hash, symbols: c.symbols.length, characters: c.ids.length, line: describeCorpus(c) };
}

export interface AutomationOptions {
  /** How the page reads a text (in its worker); default: on this thread. */
  loadText?: (name: string, text: string) => Promise<LoadedText>;
  /** How this page reads its URL (the app's own reader, so both word every problem the same); default: the run keys alone. */
  readUrl?: (search: string) => { config: RunConfig; errors: string[] };
  /** The page's one-session rule (the store's); default: automation runs exclude each other. */
  session?: SessionGate;
}

function runKeysOnly(search: string): { config: RunConfig; errors: string[] } {
  const { config, errors } = configFromQuery(search);
  return { config, errors: errors.map((e) => e.message) };
}

export function installAutomation(opts: AutomationOptions = {}): void {
  const readUrl = opts.readUrl ?? runKeysOnly;
  const gate = opts.session ?? ownRunsGate();
  window.pipelab = {
    defaultConfig: defaultRunConfig,
    pauseSwitch: () => new PauseState(),
    urlConfig: () => readUrl(window.location.search),
    async run(config, runOpts) {
      const { resume, ...checked } = runOptionsOf(runOpts);
      const end = gate.begin();
      try {
        return await runDurably(config, checked, { store: pageCheckpoints, resume }, runInBrowser);
      } finally {
        end();
      }
    },
    async prepareWorkers(config) {
      const end = gate.begin();
      try {
        return await prepareWorkers(config ?? defaultRunConfig());
      } finally {
        end();
      }
    },
    runSingleDevice,
    profile: (config) => measureProfile(config, (c) => runInBrowser(c, {})),
    loadText: (name, text) => {
      if (typeof name !== 'string' || typeof text !== 'string') return Promise.reject(new ConfigError('loadText', typeof text, 'takes a name and the text, both strings'));
      return (opts.loadText ?? loadTextHere)(name, text);
    },
    liveWorkers: () => WorkerRankHost.liveWorkers() - warmWorkers.size,
    warmWorkers: () => warmWorkers.size,
    startedWorkers: () => WorkerRankHost.startedWorkers(),
    hasWebGpu,
    checkpoints: checkpointAutomation(),
  };
}
