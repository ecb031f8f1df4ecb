/**
 * The stage worker: one per pipeline rank. It owns its own WebGPU device
 * (navigator.gpu inside the worker), builds its stages, and runs the shared
 * RankExecutor on each step the coordinator asks for.
 */
import * as Comlink from 'comlink';
import { GpuBackend } from '../gpu/gpu-backend.ts';
import type { RankInit, RankStats, Weights } from './rank-host.ts';
import { createRankRuntime, type RankRuntime } from './rank-runtime.ts';
import type { StepResult } from './rank-executor.ts';

let runtime: RankRuntime | null = null;
let backend: GpuBackend | null = null;

function need(): RankRuntime {
  if (!runtime) throw new Error('the stage worker was not initialised');
  return runtime;
}

const api = {
  async init({ init, ports }: { init: RankInit; ports: [number, MessagePort][] }): Promise<{ adapter: string }> {
    backend = await GpuBackend.create();
    const be = backend;
    runtime = createRankRuntime(be, init, new Map(ports), {
      gpuSpan: be.hasTimestamps ? () => be.beginTiming() : undefined,
      loseDevice: () => be.device.destroy(),
      crash: () => {
        setTimeout(() => {
          throw new Error('injected fault: the worker crashed');
        });
      },
    });
    const rt = runtime;
    // The backend is where a lost device is noticed (its ops and reads throw
    // DeviceLostError); here the rank's waits for peers end with it too.
    void be.lost.then((message) => rt.fail(new Error(`rank ${init.rank}: ${message}`)));
    await rt.warmUp();
    return { adapter: be.adapterDescription() };
  },
  step(step: number): Promise<StepResult> {
    return need().step(step);
  },
  readWeights(): Promise<Weights> {
    return need().readWeights();
  },
  async stats(): Promise<RankStats> {
    const s = need().stats();
    const b = backend?.stats();
    return { ...s, buffers: b?.liveBuffers ?? 0, bufferBytes: b?.liveBytes ?? 0, adapter: backend?.adapterDescription() ?? 'none' };
  },
  async dispose(): Promise<{ leakedBuffers: number }> {
    runtime?.dispose();
    runtime = null;
    const leakedBuffers = backend?.stats().liveBuffers ?? 0;
    backend?.destroy();
    backend = null;
    return { leakedBuffers };
  },
};

export type StageWorkerApi = typeof api;

Comlink.expose(api);
