/**
 * Warm stage workers: after a run that ended cleanly, each rank's worker that
 * kept a healthy device holding no tensor (stage-worker dispose with
 * keepDevice) waits here, with its device and compiled pipelines, for the next
 * run's rank of the same number, so a second run skips starting a worker,
 * acquiring a device and compiling the kernels it already has. Each run still
 * builds its stages, weights, optimizer state and data afresh (init). A worker
 * that crashed, lost its device, leaked, or ran an injected fault is never kept;
 * one idle for IDLE_MS ends.
 */
import { WorkerRankHost } from './worker-host.ts';
import type { RankHost } from './rank-host.ts';

export const WARM_IDLE_MS = 120_000;

export class WarmWorkers {
  private readonly idle = new Map<number, { host: WorkerRankHost; timer: ReturnType<typeof setTimeout> }>();

  /** The idle worker for `rank`, or a new one. */
  take(rank: number): WorkerRankHost {
    const w = this.idle.get(rank);
    if (!w) return new WorkerRankHost(rank);
    this.idle.delete(rank);
    clearTimeout(w.timer);
    return w.host;
  }

  /** Keeps `host` (a worker this pool handed out) idle; false (the caller ends it) when it is not one or its rank has one already. */
  keep(host: RankHost): boolean {
    if (!(host instanceof WorkerRankHost) || this.idle.has(host.rank)) return false;
    const drop = () => {
      if (this.idle.get(host.rank)?.host !== host) return;
      clearTimeout(this.idle.get(host.rank)?.timer);
      this.idle.delete(host.rank);
      host.terminate();
    };
    this.idle.set(host.rank, { host, timer: setTimeout(drop, WARM_IDLE_MS) });
    host.fatal.catch(drop);
    return true;
  }

  /** Idle workers now. */
  get size(): number {
    return this.idle.size;
  }

  /** Ends every idle worker. */
  clear(): void {
    for (const { host, timer } of this.idle.values()) {
      clearTimeout(timer);
      host.terminate();
    }
    this.idle.clear();
  }
}

/** The page's one pool (runInBrowser takes its workers from it and gives clean ones back). */
export const warmWorkers = new WarmWorkers();
