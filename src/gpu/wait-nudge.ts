/**
 * Nudging the browser's GPU process while a page or worker waits for the GPU.
 *
 * A wait for the GPU (a buffer's mapAsync, queue.onSubmittedWorkDone) resolves when the browser's GPU
 * process notices the work has finished. Chromium looks when it handles the page's commands and otherwise every
 * ~2.5 ms: on an NVIDIA H200 (bench/GPU.md, the `sync` suite) a wait after an 8 µs kernel ended 0.2–0.3 ms after
 * issuing it, one after a 0.14 ms matmul 2.6–2.8 ms after. Every command the page sends makes the GPU process
 * look; an empty submit is the cheapest such command. While waits are pending, a WaitNudger sends one every
 * `intervalMs`, from a loop that yields a macrotask between turns (so the wait's own resolution, a task too, is
 * never held up by it), and stops when none is pending. Every 0.25 ms, the 0.14 ms matmul's wait ended after
 * 0.8–0.9 ms, a 0.78 ms one's after 1.5–1.6 ms (2.6–2.8 not nudged), at 3–6 nudges a wait.
 *
 * In the app (an A/B of one build with and without, same machine, bench/chrome-vulkan/nudge-ab): the tp suite's
 * 15 dp × tp × pp steps 1.21× faster in geometric mean (pipelines 1.24–1.41×, sequence parallelism up to 1.73×),
 * the dp-only 4 × 1 × 1 rows 0.81–0.88× (four workers waiting at once). It is on by default only on hardware
 * adapters in a browser (`defaultNudgeMs`); SwiftShader and Dawn in Node are not nudged.
 *
 * Back-off: a stretch of pending waits is nudged every `intervalMs` for its first `steadyMs` (2 ms: a pipeline's
 * send, whose readback waits for the action's kernels and what was queued before them, is seen within 0.25 ms of
 * its end, as in the A/B above), then the gap doubles (`backoff`) up to `maxMs` (0.5, 1, 2, 2, … ms), so a long
 * wait, or several workers waiting at once (a dp-only mesh's gradient reads), sends one nudge per 2 ms (Chromium's
 * own look is every ~2.5 ms) instead of one per 0.25. That A/B ran with a fixed interval, and on a build that waited
 * after every action; since then a worker waits only for what it reads (rank-executor.ts), so there are far fewer
 * waits to nudge. Neither change has been measured on a GPU yet.
 *
 * One nudger per device, not per page: each worker owns its GPUDevice (a device cannot be handed to another thread),
 * and a nudge is a command on the waiting device's own queue; a page has no command it could send for a worker's
 * device. Within a worker every wait shares its device's one nudger (one loop, however many waits are pending).
 */

const now = (): number => (typeof performance !== 'undefined' ? performance.now() : Date.now());

/** The thread's one channel for macrotask turns (browsers), and the turns waiting on it, first in first out. */
let turns: { port: MessagePort; waiting: (() => void)[] } | null = null;

/**
 * One turn of the event loop: a macrotask (a message on one MessageChannel kept for the thread in browsers, not a new
 * channel a turn; setImmediate in Node), never a clamped timer.
 */
export function macrotask(): Promise<void> {
  const g = globalThis as { setImmediate?: (f: () => void) => void };
  if (typeof g.setImmediate === 'function') return new Promise((r) => g.setImmediate!(r));
  if (!turns) {
    const ch = new MessageChannel();
    const waiting: (() => void)[] = [];
    ch.port1.onmessage = () => waiting.shift()?.();
    // Node (a test without setImmediate): the kept port must not hold the process open. Browsers have no unref.
    (ch.port1 as MessagePort & { unref?: () => void }).unref?.();
    turns = { port: ch.port2, waiting };
  }
  const t = turns;
  return new Promise((r) => {
    t.waiting.push(r);
    t.port.postMessage(null);
  });
}

export class WaitNudger {
  private pending = 0;
  private running = false;
  private last = -Infinity;
  /** The gap before the next nudge of this stretch of pending waits. */
  private gap: number;
  /** Nudges sent so far. */
  nudges = 0;

  constructor(
    /** Sends the nudge (an empty submit on the waiting device). A throw stops nothing: the wait ends on its own. */
    private readonly nudge: () => void,
    /** Milliseconds between the first nudges of a stretch of waits at least; > 0. */
    readonly intervalMs: number,
    private readonly turn: () => Promise<void> = macrotask,
    private readonly clock: () => number = now,
    /** Each gap is the previous one times this (≥ 1; 1: a fixed interval), up to maxMs. */
    readonly backoff = 2,
    /** The longest gap (≥ intervalMs). */
    readonly maxMs = Math.max(intervalMs, DEFAULT_NUDGE_MAX_MS),
    /** How long a stretch of waits is nudged every intervalMs before the gaps grow (≥ 0; 0: from the second nudge on). */
    readonly steadyMs = DEFAULT_NUDGE_STEADY_MS,
  ) {
    if (!(intervalMs > 0)) throw new RangeError(`WaitNudger intervalMs must be > 0, got ${intervalMs}`);
    if (!(backoff >= 1)) throw new RangeError(`WaitNudger backoff must be ≥ 1, got ${backoff}`);
    if (!(maxMs >= intervalMs)) throw new RangeError(`WaitNudger maxMs must be ≥ intervalMs (${intervalMs}), got ${maxMs}`);
    if (!(steadyMs >= 0)) throw new RangeError(`WaitNudger steadyMs must be ≥ 0, got ${steadyMs}`);
    this.gap = intervalMs;
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
    // A new stretch of waits: the first nudge goes at once, the next after intervalMs.
    this.last = -Infinity;
    this.gap = this.intervalMs;
    let first = -Infinity;
    try {
      while (this.pending > 0) {
        await this.turn();
        const t = this.clock();
        if (this.pending > 0 && t - this.last >= (this.last === -Infinity ? 0 : this.gap)) {
          if (this.last === -Infinity) first = t;
          else if (t - first >= this.steadyMs) this.gap = Math.min(this.maxMs, this.gap * this.backoff);
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

/** Milliseconds between nudges a backend on this adapter uses by default (the first gap); 0: none. */
export const DEFAULT_NUDGE_MS = 0.25;
/** The longest gap the back-off reaches by default. */
export const DEFAULT_NUDGE_MAX_MS = 2;
/** How long a stretch of waits is nudged every DEFAULT_NUDGE_MS before the back-off begins, by default. */
export const DEFAULT_NUDGE_STEADY_MS = 2;

/** How a backend nudges its waits (WaitNudger's parameters); intervalMs 0: not at all. */
export interface NudgePolicy {
  intervalMs: number;
  backoff: number;
  maxMs: number;
  steadyMs: number;
}

/**
 * The default: DEFAULT_NUDGE_MS on a hardware adapter in a browser (page or worker), else 0. A page built with
 * VITE_PIPELAB_GPU_NUDGE=0 turns it off, and =<ms> sets the interval (the bench's A/B builds).
 */
export function defaultNudgeMs(isSoftware: boolean): number {
  return nudgePolicy(isSoftware).intervalMs;
}

/**
 * The nudge a backend on this adapter uses by default: none on a software adapter or outside a browser; else
 * DEFAULT_NUDGE_MS backing off ×2 up to DEFAULT_NUDGE_MAX_MS after DEFAULT_NUDGE_STEADY_MS, or what the build
 * says in VITE_PIPELAB_GPU_NUDGE (the bench's A/B builds): `0` (off), `<ms>`, or `<ms>,<backoff>,<maxMs>,<steadyMs>`.
 */
export function nudgePolicy(isSoftware: boolean, set: string | undefined = buildNudgeSetting()): NudgePolicy {
  const off: NudgePolicy = { intervalMs: 0, backoff: 1, maxMs: 0, steadyMs: 0 };
  const g = globalThis as { document?: unknown; WorkerGlobalScope?: unknown };
  const inBrowser = typeof g.document !== 'undefined' || typeof g.WorkerGlobalScope !== 'undefined';
  if (isSoftware || !inBrowser) return off;
  const dflt: NudgePolicy = { intervalMs: DEFAULT_NUDGE_MS, backoff: 2, maxMs: DEFAULT_NUDGE_MAX_MS, steadyMs: DEFAULT_NUDGE_STEADY_MS };
  if (set === undefined || set.trim() === '') return dflt;
  const [ms, backoff, maxMs, steadyMs] = set.split(',').map(Number);
  if (!(ms > 0)) return off;
  const p: NudgePolicy = { intervalMs: ms, backoff: backoff ?? dflt.backoff, maxMs: maxMs ?? Math.max(ms, dflt.maxMs), steadyMs: steadyMs ?? dflt.steadyMs };
  if (!(p.backoff >= 1) || !(p.maxMs >= p.intervalMs) || !(p.steadyMs >= 0)) {
    throw new RangeError(`VITE_PIPELAB_GPU_NUDGE = ${JSON.stringify(set)}: must be 0, <ms>, or <ms>,<backoff ≥ 1>,<maxMs ≥ ms>,<steadyMs ≥ 0>`);
  }
  return p;
}

function buildNudgeSetting(): string | undefined {
  const env = (import.meta as { env?: Record<string, string | undefined> }).env;
  return env?.VITE_PIPELAB_GPU_NUDGE;
}
