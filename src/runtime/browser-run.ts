/**
 * Runs a configuration in this browser tab: one module Worker and one WebGPU
 * device per rank. Also the single-device reference on this page's own
 * device, for the equality test and the side-by-side numbers.
 */
import { WebGpuUnavailableError } from '../gpu/device.ts';
import { GpuBackend } from '../gpu/gpu-backend.ts';
import { trainSingleDevice, type TrainResult } from '../nn/train.ts';
import { meshOf, prepareRanks, runPlan, RunError, type RunOptions } from './coordinator.ts';
import { workerCount } from '../schedule/mesh.ts';
import type { RunReport } from './report/index.ts';
import { toTrainConfig, validateRunConfig, type RunConfig } from '../config/run-config.ts';
import { planRun } from './executor/index.ts';
import { warmWorkers } from './executor/index.ts';
import { snapshotRunConfig } from '../config/config-snapshot.ts';

export function hasWebGpu(): boolean {
  return typeof navigator !== 'undefined' && 'gpu' in navigator && !!navigator.gpu;
}

export type BrowserRunOptions = Omit<RunOptions, 'hostFactory'>;

/** Workers from the page's pool (warm ones from the last clean run or the preparation, fresh ones otherwise), and the clean ones given back to it. */
const POOLED: Pick<RunOptions, 'hostFactory' | 'keepWarm'> = { hostFactory: (r) => warmWorkers.take(r), keepWarm: (h) => warmWorkers.keep(h) };

/** The plan of `input` (refused by field, value and rule), once WebGPU is known to be here. */
function browserPlan(input: RunConfig) {
  // The page's workers run on WebGPU: the budget's plan adds the GPU's own overheads.
  const plan = planRun(input, 'gpu');
  if (!hasWebGpu()) throw new WebGpuUnavailableError('WebGPU is not available in this browser.');
  return plan;
}

export async function runInBrowser(input: RunConfig, opts: BrowserRunOptions = {}): Promise<RunReport> {
  const plan = browserPlan(input);
  // Workers being prepared (the page's load) are waited for, not started beside.
  let waitMs = 0;
  if (warmWorkers.isPreparing) {
    const t0 = performance.now();
    await warmWorkers.settled();
    waitMs = performance.now() - t0;
  }
  if (opts.signal?.aborted) throw new RunError('the run was cancelled before its first step finished');
  const report = await runPlan(plan, { ...opts, ...POOLED });
  const p = report.phases;
  return { ...report, phases: { ...p, startMs: p.startMs + waitMs, firstStepMs: p.firstStepMs + waitMs, waitMs } };
}

/**
 * Prepares warm workers for `input` without training (its ranks start, acquire
 * their devices and compile the kernels its steps use, then wait in the pool):
 * what the page does at load, so the first Run skips the cold start. Nothing
 * when workers are idle or being prepared already. A configuration a run would
 * refuse is refused here the same way.
 */
export async function prepareWorkers(input: RunConfig): Promise<{ kept: number }> {
  const plan = browserPlan(input);
  return warmWorkers.prepare(workerCount(meshOf(plan)), () => prepareRanks(plan, POOLED));
}

/** The same training on one device (this page's), the model cut into the same stages and run in sequence. */
export async function runSingleDevice(input: RunConfig): Promise<TrainResult> {
  const config = snapshotRunConfig(input);
  validateRunConfig(config);
  const be = await GpuBackend.create();
  try {
    return await trainSingleDevice(be, toTrainConfig(config));
  } finally {
    be.destroy();
  }
}
