/**
 * The benchmark page: window.pipelabBench, driven by src/bench/driver/run.ts in
 * headless Chromium. Every suite measures PipeLab beside a peer in the same
 * page on the same adapter (TensorFlow.js's WebGPU backend, or the simulator
 * and closed form for schedules).
 */
import { benchConfig, benchSchedule, GPT_BENCH_MICROBATCH, type ScheduleBenchCase } from './schedules-suite.ts';
import { measureProfile } from '../runtime/measure-profile.ts';
import { runInBrowser } from '../runtime/browser-run.ts';
import { benchKernelSize, kernelsSetup, kernelsTeardown, type KernelBenchOptions } from './kernels-suite.ts';
import { benchTraining, type TrainingBenchCase } from './training-suite.ts';
import { benchStartup } from './startup-suite.ts';
import { benchCheckpoint } from './checkpoint-suite.ts';
import type { MatmulSize } from './matmul-bench.ts';
import { installAutomation } from '../automation/automation.ts';
import { probePageAndWorker, type ProbeOptions } from '../gpu/adapter-probe.ts';
import { requestAdapterRetrying } from '../gpu/request-adapter.ts';
import { benchAllReduce, benchTpAllReduce } from './allreduce-bench.ts';
import { benchSync, type SyncBenchOptions } from './sync-suite.ts';

type ProbeSizes = Omit<ProbeOptions, 'gpu'>;

const log = document.getElementById('log');

function say(line: string): void {
  if (log) log.textContent += `${line}\n`;
}

const api = {
  ready: true,
  async adapterInfo(): Promise<Record<string, string>> {
    const a = navigator.gpu ? (await requestAdapterRetrying(navigator.gpu)).adapter : null;
    if (!a) return { error: 'no WebGPU adapter' };
    const i = a.info;
    return { vendor: i.vendor, architecture: i.architecture, device: i.device, description: i.description };
  },
  /** The adapter in this page and in a dedicated worker: what it is, crossing costs, timestamp resolution (src/gpu/adapter-probe.ts). */
  async adapterProbe(o: ProbeSizes = {}) {
    say('adapter probe: page and worker');
    return probePageAndWorker(o);
  },
  async schedule(c: ScheduleBenchCase, steps: number) {
    say(`schedule ${c.schedule} p=${c.ranks} m=${c.microbatches}`);
    return benchSchedule(c, steps);
  },
  /** The profiling pass (with its lanes probe) of the model a grid case trains: what the shared-device prediction takes its lanes from. */
  async profileLanes(c: ScheduleBenchCase): Promise<{ lanes: number; source: string }> {
    say(`profile the model of ${c.model ?? 'char-mlp'} p=${c.ranks}`);
    const profile = await measureProfile(benchConfig(c, 4), (cfg) => runInBrowser(cfg, { recvTimeoutMs: 120_000, stepTimeoutMs: 300_000 }));
    return { lanes: profile.lanes ?? NaN, source: profile.source };
  },
  /** Our backend with its autotune, and TF.js's WebGPU backend, started; what the autotune picked. */
  async kernelsSetup() {
    say('kernels: autotune, TF.js WebGPU');
    return kernelsSetup();
  },
  async kernelSize(size: MatmulSize, o: KernelBenchOptions) {
    say(`kernels ${size.join('x')}`);
    return benchKernelSize(size, o);
  },
  kernelsTeardown(): void {
    kernelsTeardown();
  },
  async startup(runs: number, steps: number) {
    say(`startup: ${runs} runs of the default configuration`);
    return benchStartup(runs, steps);
  },
  async checkpoint(steps: number) {
    say(`checkpoint: saves every 2 steps and a recovery, ${steps} steps per run`);
    return benchCheckpoint(steps);
  },
  /** The ring all-reduce over MessageChannels between dp workers, vectors of each size (allreduce-bench.ts). */
  async allReduce(dp: number, bytes: number[], repeats: number) {
    say(`all-reduce dp=${dp}`);
    return benchAllReduce(dp, bytes, repeats);
  },
  /** The tp all-reduce (one round of direct exchange) between t workers, tensors of each size (allreduce-bench.ts). */
  async tpAllReduce(t: number, bytes: number[], repeats: number) {
    say(`tp all-reduce t=${t}`);
    return benchTpAllReduce(t, bytes, repeats);
  },
  /** The activation a GPT case's block all-reduces (rows · C float32: a micro-batch's token rows × the width), bytes; null for other models. */
  tpBlockBytes(c: ScheduleBenchCase): { rows: number; width: number; bytes: number } | null {
    if (c.model !== 'gpt') return null;
    const cfg = benchConfig(c, 1);
    const rows = GPT_BENCH_MICROBATCH * (cfg.blockSize as number);
    const width = cfg.width as number;
    return { rows, width, bytes: rows * width * 4 };
  },
  /** What waiting for the GPU costs, nudged and not (sync-suite.ts). */
  async syncLatency(o: Omit<SyncBenchOptions, 'gpu'>) {
    say('sync: waits for the GPU, nudged and not');
    return benchSync(o);
  },
  async training(c: TrainingBenchCase) {
    say(`training ${c.dataset}`);
    return benchTraining(c);
  },
};

export type PipelabBench = typeof api;

declare global {
  interface Window {
    pipelabBench: PipelabBench;
  }
}

installAutomation();
window.pipelabBench = api;
say('ready');
