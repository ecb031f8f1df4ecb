/**
 * A run's live figures written to the store at most once per `everyMs`, in a task of their own.
 *
 * Why: a store write renders the page (zustand's subscribers are React's external stores, rendered in the microtask
 * after the write). Written straight from a step's end, that render ran between the step's results and the next
 * step's start (the coordinator awaits between them), so every step of every worker waited for the page's render of
 * its loss curve and timeline. Coalesced and deferred, the render runs while the workers compute, at most every
 * `everyMs` (the person watching sees ten updates a second, not fifty), and each write applies every update queued
 * since the last, in order, each to the state the one before left.
 */
export type Update<S> = (s: S) => Partial<S>;

export class LiveWrites<S extends object> {
  private queued: Update<S>[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private last = -Infinity;

  constructor(
    /** The store's setState. */
    private readonly set: (f: (s: S) => Partial<S>) => void,
    /** The shortest time between two writes, ms (≥ 0). */
    readonly everyMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!(everyMs >= 0)) throw new RangeError(`LiveWrites everyMs must be ≥ 0, got ${everyMs}`);
  }

  /** Queues `f`; written by the next flush, at the latest `everyMs` after the last write. */
  push(f: Update<S>): void {
    this.queued.push(f);
    if (this.timer !== null) return;
    this.timer = setTimeout(() => this.flush(), Math.max(0, this.last + this.everyMs - this.now()));
  }

  /** Writes what is queued now (one write), e.g. before a write that must come after it. */
  flush(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.queued.length === 0) return;
    const fs = this.queued;
    this.queued = [];
    this.last = this.now();
    this.set((s) => {
      let acc = s;
      for (const f of fs) acc = { ...acc, ...f(acc) };
      return acc;
    });
  }

  /** Updates queued and not yet written. */
  get pending(): number {
    return this.queued.length;
  }
}
