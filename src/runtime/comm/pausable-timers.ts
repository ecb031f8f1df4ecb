/**
 * Timeouts that a pause stops: a paused stream (stream-pause.ts) holds every worker between its actions, and a
 * worker waiting for a held peer's message, or the coordinator waiting for the window, must not give up while it is
 * held. suspend() stops every running timeout with the time it had left; resume() starts each again with that time.
 * A timeout started while suspended waits for the resume.
 */
export class PausableTimers {
  private suspended = false;
  private next = 0;
  private readonly live = new Map<number, { fire: () => void; left: number; armedAt: number; handle?: ReturnType<typeof setTimeout> }>();

  /** Calls `fire` after `ms` of time not suspended, unless cancelled; returns the cancel. */
  start(ms: number, fire: () => void): () => void {
    const id = this.next++;
    const t = { fire, left: ms, armedAt: 0 };
    this.live.set(id, t);
    if (!this.suspended) this.arm(id);
    return () => {
      const x = this.live.get(id);
      if (x?.handle !== undefined) clearTimeout(x.handle);
      this.live.delete(id);
    };
  }

  private arm(id: number): void {
    const t = this.live.get(id);
    if (!t) return;
    t.armedAt = Date.now();
    t.handle = setTimeout(() => {
      this.live.delete(id);
      t.fire();
    }, Math.max(0, t.left));
  }

  get isSuspended(): boolean {
    return this.suspended;
  }

  suspend(): void {
    if (this.suspended) return;
    this.suspended = true;
    const now = Date.now();
    for (const t of this.live.values()) {
      if (t.handle === undefined) continue;
      clearTimeout(t.handle);
      t.handle = undefined;
      t.left -= now - t.armedAt;
    }
  }

  resume(): void {
    if (!this.suspended) return;
    this.suspended = false;
    for (const id of this.live.keys()) this.arm(id);
  }
}
