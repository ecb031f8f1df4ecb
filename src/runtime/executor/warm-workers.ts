/**
 * Warm stage workers: after a run that ended cleanly, each rank's worker that
 * kept a healthy device holding no tensor (stage-worker dispose with
 * keepDevice) waits here, with its device and compiled pipelines, for the next
 * run's rank of the same number, so a second run skips starting a worker,
 * acquiring a device and compiling the kernels it already has. Each run still
 * builds its stages, weights, optimizer state and data afresh (init). A worker
 * that crashed, lost its device, leaked, or ran an injected fault is never kept;
 * one idle for IDLE_MS ends.
 *
 * Workers can also be prepared before any run (`prepare`: the page prepares its
 * configuration's ranks when it loads), so the first Run starts warm too; a run
 * that starts while they are being prepared waits for them (`settled`) rather
 * than starting a second set beside them.
 */
import { WorkerRankHost } from './worker-host.ts';
import type { RankHost } from './rank-host.ts';

/** Idle warm workers end after this long (a newcomer may read the page for minutes before the first Run). */
export const WARM_IDLE_MS = 600_000;

export class WarmWorkers {
  private readonly idle = new Map<number, { host: WorkerRankHost; timer: ReturnType<typeof setTimeout> }>();
  private preparing: Promise<void> | null = null;
  private preparingRanks = 0;

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
    // One prepared now idle: counted once.
    if (this.preparingRanks > 0) this.preparingRanks--;
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

  /** Idle workers now, and those being prepared. */
  get size(): number {
    return this.idle.size + this.preparingRanks;
  }

  /** Whether workers are being prepared now. */
  get isPreparing(): boolean {
    return this.preparing !== null;
  }

  /**
   * Prepares `ranks` workers with `start` (which takes them from this pool and
   * keeps the reusable ones: prepareRanks), unless a preparation is under way or
   * workers are idle already. Resolves with how many were kept (0 when skipped);
   * a failure is reported to the caller and leaves the pool as it was.
   */
  prepare(ranks: number, start: () => Promise<{ kept: number }>): Promise<{ kept: number }> {
    if (this.preparing || this.idle.size > 0) return Promise.resolve({ kept: 0 });
    this.preparingRanks = ranks;
    const done = start().finally(() => {
      this.preparing = null;
      this.preparingRanks = 0;
    });
    this.preparing = done.then(
      () => {},
      () => {},
    );
    return done;
  }

  /** Resolves once no preparation is under way (at once when none is). */
  async settled(): Promise<void> {
    while (this.preparing) await this.preparing;
  }

  /** Ends every idle worker. */
  clear(): void {
    // (A preparation under way keeps what it prepared; settle it first to clear everything.)
    for (const { host, timer } of this.idle.values()) {
      clearTimeout(timer);
      host.terminate();
    }
    this.idle.clear();
  }
}

/** The page's one pool (runInBrowser takes its workers from it and gives clean ones back). */
export const warmWorkers = new WarmWorkers();
