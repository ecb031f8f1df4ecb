/**
 * A rank in its own module Worker, driven through Comlink (the control plane).
 * The MessagePorts of the data plane are transferred to the worker at init.
 * A worker that dies outside a call (an uncaught error) rejects `fatal`.
 */
import * as Comlink from 'comlink';
import type { RankHost, RankInit, RankPorts, RankState, RankStats, RankUp, StreamNews, Weights } from './rank-host.ts';
import type { StepResult } from './rank-executor.ts';
import type { LateTimes } from './late-times.ts';
import type { StageWorkerApi } from './stage-worker.ts';

export class WorkerRankHost implements RankHost {
  readonly fatal: Promise<never>;
  private readonly worker: Worker;
  private readonly api: Comlink.Remote<StageWorkerApi>;
  private terminated = false;
  private static live = 0;
  private static started = 0;

  /** Workers started and not yet terminated, across all runs (the no-leak test reads it). */
  static liveWorkers(): number {
    return WorkerRankHost.live;
  }

  /** Workers ever started on this page. */
  static startedWorkers(): number {
    return WorkerRankHost.started;
  }

  constructor(readonly rank: number) {
    this.worker = new Worker(new URL('./stage-worker.ts', import.meta.url), { type: 'module', name: `pipelab-rank-${rank}` });
    WorkerRankHost.live++;
    WorkerRankHost.started++;
    this.api = Comlink.wrap<StageWorkerApi>(this.worker);
    this.fatal = new Promise<never>((_, reject) => {
      this.worker.addEventListener('error', (e: ErrorEvent) => {
        e.preventDefault();
        reject(new Error(`rank ${rank}: its worker crashed: ${e.message || 'unknown error'}`));
      });
      this.worker.addEventListener('messageerror', () => reject(new Error(`rank ${rank}: a control message could not be read`)));
    });
    this.fatal.catch(() => {});
  }

  private call<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.fatal]);
  }

  init(init: RankInit, ports: RankPorts): Promise<RankUp> {
    const peers = [...ports.peers.entries()];
    const transfer = [...peers.map(([, p]) => p), ...(ports.control ? [ports.control] : [])];
    return this.call(this.api.init(Comlink.transfer({ init, ports: peers, control: ports.control }, transfer)));
  }

  step(step: number, onStream?: StreamNews): Promise<StepResult> {
    return this.call(this.api.step(step, onStream ? Comlink.proxy(onStream) : undefined));
  }

  lateTimes(): Promise<LateTimes | null> {
    return this.call(this.api.lateTimes());
  }

  holdStream(): Promise<number> {
    return this.call(this.api.holdStream());
  }

  endStreamAt(microbatches: number): Promise<void> {
    return this.call(this.api.endStreamAt(microbatches));
  }

  pauseStream(): Promise<void> {
    return this.call(this.api.pauseStream());
  }

  resumeStream(): Promise<void> {
    return this.call(this.api.resumeStream());
  }

  readWeights(): Promise<Weights> {
    return this.call(this.api.readWeights());
  }

  readState(): Promise<RankState> {
    return this.call(this.api.readState());
  }

  loadState(state: Parameters<RankHost['loadState']>[0]): Promise<void> {
    return this.call(this.api.loadState(state));
  }

  stats(): Promise<RankStats> {
    return this.call(this.api.stats());
  }

  /** Frees the rank's stages; the worker keeps a healthy device and its compiled kernels until terminate() (see warm-workers.ts). */
  dispose(): Promise<{ leakedBuffers: number; reusable: boolean }> {
    return this.call(this.api.dispose({ keepDevice: true }));
  }

  terminate(): void {
    if (this.terminated) return;
    this.terminated = true;
    this.api[Comlink.releaseProxy]();
    this.worker.terminate();
    WorkerRankHost.live--;
  }
}
