/**
 * Nudging the browser's GPU process while a page or worker waits for the GPU.
 *
 * A wait for the GPU (a buffer's mapAsync, queue.onSubmittedWorkDone) resolves when the browser's GPU
 * process notices the work has finished. In Chromium on an NVIDIA H200 that took ~3 ms after a small kernel
 * (bench/GPU.md: the bare round trip of one small kernel read back, 2.8–3.0 ms, against 0.5 ms of kernels in a
 * whole training step), as if completions were looked for on a timer. Every command the page sends makes the GPU
 * process handle its queue; an empty submit is the cheapest such command. While waits are pending, a
 * WaitNudger sends one every `intervalMs`, from a loop that yields a macrotask between turns (so the wait's
 * own resolution, a task too, is never held up by it), and stops when none is pending.
 *
 * Whether it helps is measured, not assumed: the `sync` bench suite (src/bench/sync-suite.ts) times each kind of
 * wait after kernels of several lengths with and without it, on the adapter it runs on. It is on by default only
 * on hardware adapters in a browser (`defaultNudgeMs`); SwiftShader and Dawn in Node are not nudged.
 */

const now = (): number => (typeof performance !== 'undefined' ? performance.now() : Date.now());

/** One turn of the event loop: a macrotask (MessageChannel in browsers, setImmediate in Node), never a clamped timer. */
export function macrotask(): Promise<void> {
  const g = globalThis as { setImmediate?: (f: () => void) => void };
  if (typeof g.setImmediate === 'function') return new Promise((r) => g.setImmediate!(r));
  return new Promise((r) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => {
      ch.port1.close();
      r();
    };
    ch.port2.postMessage(null);
  });
}

export class WaitNudger {
  private pending = 0;
  private running = false;
  private last = -Infinity;
  /** Nudges sent so far. */
  nudges = 0;

  constructor(
    /** Sends the nudge (an empty submit on the waiting device). A throw stops nothing: the wait ends on its own. */
    private readonly nudge: () => void,
    /** Milliseconds between nudges at least; > 0. */
    readonly intervalMs: number,
    private readonly turn: () => Promise<void> = macrotask,
  ) {
    if (!(intervalMs > 0)) throw new RangeError(`WaitNudger intervalMs must be > 0, got ${intervalMs}`);
  }

  /** `p`, with nudges sent while it (or another wait of this nudger) is pending and `until` (the device's loss) has not come. */
  during<T>(p: Promise<T>, until?: Promise<unknown>): Promise<T> {
    this.pending++;
    let settled = false;
    const done = () => {
      if (settled) return;
      settled = true;
      this.pending--;
    };
    const out = p.then(
      (v) => {
        done();
        return v;
      },
      (e: unknown) => {
        done();
        throw e;
      },
    );
    void until?.then(done, done);
    if (!this.running) void this.loop();
    return out;
  }

  private async loop(): Promise<void> {
    this.running = true;
    try {
      while (this.pending > 0) {
        await this.turn();
        const t = now();
        if (this.pending > 0 && t - this.last >= this.intervalMs) {
          this.last = t;
          this.nudges++;
          try {
            this.nudge();
          } catch {
            // a lost or destroyed device: its wait ends with the loss
          }
        }
      }
    } finally {
      this.running = false;
    }
  }
}

/** Milliseconds between nudges a backend on this adapter uses by default; 0: none. */
export const DEFAULT_NUDGE_MS = 0.25;

/**
 * The default: DEFAULT_NUDGE_MS on a hardware adapter in a browser (page or worker), else 0. A page built with
 * VITE_PIPELAB_GPU_NUDGE=0 turns it off, and =<ms> sets the interval (the bench's A/B builds).
 */
export function defaultNudgeMs(isSoftware: boolean): number {
  const g = globalThis as { document?: unknown; WorkerGlobalScope?: unknown };
  const inBrowser = typeof g.document !== 'undefined' || typeof g.WorkerGlobalScope !== 'undefined';
  if (isSoftware || !inBrowser) return 0;
  const env = (import.meta as { env?: Record<string, string | undefined> }).env;
  const set = env?.VITE_PIPELAB_GPU_NUDGE;
  if (set === undefined || set === '') return DEFAULT_NUDGE_MS;
  const ms = Number(set);
  return Number.isFinite(ms) && ms > 0 ? ms : 0;
}
