/**
 * The stage worker: one per pipeline rank. It owns its own WebGPU device
 * (navigator.gpu inside the worker), builds its stages, and runs the shared
 * RankExecutor on each step the coordinator asks for.
 */
import * as Comlink from 'comlink';
import { GpuBackend } from '../../gpu/gpu-backend.ts';
import type { RankHost, RankInit, RankState, RankStats, RankUp, StreamNews, Weights } from './rank-host.ts';
import { createRankRuntime, type RankRuntime } from './rank-runtime.ts';
import { gpuHooks } from './gpu-hooks.ts';
import type { StepResult } from './rank-executor.ts';
import type { LateTimes } from './late-times.ts';
import { describeGpuFailure, rankWhere, scopeFailure } from './gpu-failure.ts';
import { meshOfRun, placeOf } from '../../schedule/mesh.ts';
import { checkAdapterBufferLimits } from '../../config/run-limits.ts';
import { registerCorpus } from '../../data/text-registry.ts';

let runtime: RankRuntime | null = null;
let current: RankInit | null = null;

/** How messages name this worker: its rank, with its replica in a data-parallel mesh. */
function where(init: RankInit): string {
  return rankWhere(init.rank, init.schedule.stageToRank, init.config.dp > 1 ? placeOf(meshOfRun(init.config), init.worker).replica : undefined);
}

function stagesOn(init: RankInit): number[] {
  return init.schedule.stageToRank.flatMap((r, s) => (r === init.rank ? [s] : []));
}
/** The device and its compiled pipelines; kept between runs by dispose({ keepDevice }) while healthy. */
let backend: GpuBackend | null = null;
let deviceLost = false;

function need(): RankRuntime {
  if (!runtime) throw new Error('the stage worker was not initialised');
  return runtime;
}

const api = {
  async init({ init, ports, control }: { init: RankInit; ports: [number, MessagePort][]; control?: MessagePort }): Promise<RankUp> {
    current = init;
    const whereThis = where(init);
    try {
      const t0 = performance.now();
      // A kept device lost while idle is never reused.
      if (backend && deviceLost) {
        backend.destroy();
        backend = null;
      }
      if (!backend) {
        const fresh = await GpuBackend.create();
        backend = fresh;
        deviceLost = false;
        void fresh.lost.then(() => {
          if (backend === fresh) deviceLost = true;
        });
      }
      const deviceMs = performance.now() - t0;
      const be = backend;
      if (init.corpus) registerCorpus(init.corpus);
      // Buffers past this adapter's own limits fail here, named, rather than as a lost device later.
      checkAdapterBufferLimits(init.config, init.rank, stagesOn(init), be.device.limits);
      be.device.pushErrorScope('out-of-memory');
      runtime = createRankRuntime(be, init, { peers: new Map(ports), control }, {
        ...gpuHooks(be),
        loseDevice: () => be.device.destroy(),
        crash: () => {
          setTimeout(() => {
            throw new Error('injected fault: the worker crashed');
          });
        },
      });
      const rt = runtime;
      // The backend is where a lost device is noticed and named (its ops, reads and
      // syncs throw DeviceLostError); here the rank's waits for peers end with it too.
      void be.lost.then((message) => rt.fail(new Error(`${whereThis}: ${message}`)));
      const warm = await rt.warmUp();
      const oom = scopeFailure(await be.device.popErrorScope(), 'building its stages');
      if (oom) throw oom;
      return { adapter: be.adapterDescription(), startup: { rank: init.rank, deviceMs, ...warm } };
    } catch (e) {
      throw new Error(describeGpuFailure(e, whereThis));
    }
  },
  /** `onStream`: the page's listener for a stream's progress and losses (a Comlink proxy, released once the window ends). */
  async step(step: number, onStream?: StreamNews & Partial<Comlink.ProxyMethods>): Promise<StepResult> {
    try {
      return await need().step(step, onStream);
    } catch (e) {
      const whereThis = current ? `${where(current)}, step ${step}` : `step ${step}`;
      const message = describeGpuFailure(e, whereThis);
      if (e instanceof Error && message === e.message) throw e;
      throw new Error(message);
    } finally {
      onStream?.[Comlink.releaseProxy]?.();
    }
  },
  lateTimes(): Promise<LateTimes | null> {
    return need().lateTimes();
  },
  async holdStream(): Promise<number> {
    return need().holdStream();
  },
  async endStreamAt(microbatches: number): Promise<void> {
    need().endStreamAt(microbatches);
  },
  async pauseStream(): Promise<void> {
    need().pauseStream();
  },
  async resumeStream(): Promise<void> {
    need().resumeStream();
  },
  readWeights(): Promise<Weights> {
    return need().readWeights();
  },
  readState(): Promise<RankState> {
    return need().readState();
  },

  async loadState(state: Parameters<RankHost['loadState']>[0]): Promise<void> {
    need().loadState(state);
  },
  async stats(): Promise<RankStats> {
    const s = need().stats();
    const b = backend?.stats();
    return { ...s, buffers: b?.liveBuffers ?? 0, bufferBytes: b?.liveBytes ?? 0, adapter: backend?.adapterDescription() ?? 'none' };
  },
  /**
   * Frees the rank's stages. With keepDevice, a healthy device that holds no
   * tensor after that (no leak, not lost) is kept with its compiled pipelines
   * (its idle buffers freed) for the next init; otherwise it is destroyed.
   */
  async dispose(opts: { keepDevice?: boolean } = {}): Promise<{ leakedBuffers: number; reusable: boolean }> {
    runtime?.dispose();
    runtime = null;
    const leakedBuffers = backend?.stats().liveBuffers ?? 0;
    const reusable = !!opts.keepDevice && !!backend && !deviceLost && leakedBuffers === 0;
    if (reusable) {
      backend?.trimPool();
    } else {
      backend?.destroy();
      backend = null;
    }
    return { leakedBuffers, reusable };
  },
};

export type StageWorkerApi = typeof api;

Comlink.expose(api);
