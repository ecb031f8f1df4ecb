/**
 * A rank that runs in the calling thread on a backend it is given (the float64
 * CPU reference in Node tests, or a GpuBackend on Dawn, timed and counted as a
 * stage worker's is: gpu-hooks.ts). Same executor as a worker; no worker.
 */
import type { Backend } from '../../nn/backend.ts';
import { createRankRuntime, type RankRuntime } from './rank-runtime.ts';
import { gpuHooks } from './gpu-hooks.ts';
import type { RankHost, RankInit, RankPorts, RankState, RankStats, RankUp, StreamNews, Weights } from './rank-host.ts';
import type { StepResult } from './rank-executor.ts';
import type { LateTimes } from './late-times.ts';

export class InProcessRankHost implements RankHost {
  readonly fatal: Promise<never> = new Promise<never>(() => {});
  private runtime: RankRuntime | null = null;

  constructor(
    readonly rank: number,
    private readonly be: Backend,
  ) {}

  private need(): RankRuntime {
    if (!this.runtime) throw new Error(`rank ${this.rank} was not initialised`);
    return this.runtime;
  }

  async init(init: RankInit, ports: RankPorts): Promise<RankUp> {
    this.runtime = createRankRuntime(this.be, init, ports, gpuHooks(this.be));
    const w = await this.runtime.warmUp();
    return { adapter: this.be.name, startup: { rank: this.rank, deviceMs: 0, ...w } };
  }

  step(step: number, onStream?: StreamNews): Promise<StepResult> {
    return this.need().step(step, onStream);
  }

  lateTimes(): Promise<LateTimes | null> {
    return this.need().lateTimes();
  }

  async holdStream(): Promise<number> {
    return this.need().holdStream();
  }

  async endStreamAt(microbatches: number): Promise<void> {
    this.need().endStreamAt(microbatches);
  }

  async pauseStream(): Promise<void> {
    this.need().pauseStream();
  }

  async resumeStream(): Promise<void> {
    this.need().resumeStream();
  }

  readWeights(): Promise<Weights> {
    return this.need().readWeights();
  }

  readState(): Promise<RankState> {
    return this.need().readState();
  }

  async loadState(state: Parameters<RankHost['loadState']>[0]): Promise<void> {
    this.need().loadState(state);
  }

  async stats(): Promise<RankStats> {
    return { ...this.need().stats(), buffers: 0, bufferBytes: 0, adapter: this.be.name };
  }

  async dispose(): Promise<{ leakedBuffers: number }> {
    this.runtime?.dispose();
    this.runtime = null;
    return { leakedBuffers: 0 };
  }

  terminate(): void {
    this.runtime?.fail(new Error(`rank ${this.rank} was ended`));
  }
}

/** Hosts on `backend()` that also keep each worker's step results: seen[step][worker] (tests read the counts and samples). */
export function recordingHosts(seen: StepResult[][], backend: () => Backend): (w: number) => InProcessRankHost {
  return (w) => {
    const h = new InProcessRankHost(w, backend());
    const step = h.step.bind(h);
    h.step = async (s, n) => {
      const r = await step(s, n);
      (seen[s] ??= [])[w] = r;
      return r;
    };
    return h;
  };
}
