/**
 * Pausing a stream (PipeDream, PipeDream-2BW: one window of all the run's steps, so no step boundary to pause at).
 *
 * - On each worker (StreamPause): a pause holds the worker before its next action and suspends the timeouts of its
 *   waits for peers' messages (a peer held by the pause is not a lost peer); the resume lets it go on and restarts
 *   them with the time they had left. The actions run in the same order on the same inputs, so a
 *   paused run's losses and weights are the uninterrupted run's, bit for bit.
 * - On the coordinator (StreamPauses): a switch (the page's Pause) is passed to every worker, each pause is kept as
 *   [asked, resumed] on the workers' clock, and the window's own deadline is suspended with them.
 * - In the timeline (cutPauses): each pause is cut out from the end of the last interval that ended before its
 *   resume (from then on nothing ran) to the resume; later times move back by that much, and an interval across the
 *   cut (a wait for a held peer, an action inside which a held tp peer was awaited) loses it. So the bubble, the
 *   makespan and samples per second are the stream's without the pause.
 */
import type { StepMemory } from '../../nn/memory-ledger.ts';
import type { Interval } from '../../schedule/timeline.ts';
import { epochMs } from '../comm/index.ts';
import type { PausableTimers } from '../comm/index.ts';

/** What pauses a stream: the page's Pause button (state/store/step-gate.ts). */
export interface PauseSwitch {
  readonly isPaused: boolean;
  /** Calls `onChange` on every change from now on; returns the unsubscribe. */
  watch(onChange: (paused: boolean) => void): () => void;
}

/** A switch turned with set(): the page's gate keeps one (state/store/step-gate.ts); automation hands one out (pauseSwitch()). */
export class PauseState implements PauseSwitch {
  private readonly watchers = new Set<(paused: boolean) => void>();

  constructor(private paused = false) {}

  get isPaused(): boolean {
    return this.paused;
  }

  set(paused: boolean): void {
    if (paused === this.paused) return;
    this.paused = paused;
    for (const w of [...this.watchers]) w(paused);
  }

  watch(onChange: (paused: boolean) => void): () => void {
    this.watchers.add(onChange);
    return () => void this.watchers.delete(onChange);
  }
}

/** A worker's side: the hold before each action, and its timeouts. */
export class StreamPause {
  private held: { promise: Promise<void>; release: () => void } | null = null;

  /** `timers`: the worker's mailbox's (every wait for a peer goes through it). */
  constructor(private readonly timers: PausableTimers) {}

  pause(): void {
    if (this.held) return;
    let release = () => {};
    const promise = new Promise<void>((resolve) => (release = resolve));
    this.held = { promise, release };
    this.timers.suspend();
  }

  resume(): void {
    if (!this.held) return;
    this.timers.resume();
    this.held.release();
    this.held = null;
  }

  /** Before an action: waits while paused. */
  async admit(): Promise<void> {
    while (this.held) await this.held.promise;
  }
}

/** A pause on the workers' clock (epoch ms): when it was asked and when the resume was. */
export interface PauseWindow {
  from: number;
  to: number;
}

/** The calls the coordinator makes of each worker. */
export interface StreamPausable {
  pauseStream(): Promise<void>;
  resumeStream(): Promise<void>;
}

/** The coordinator's side for one stream window. */
export class StreamPauses {
  private readonly windows: PauseWindow[] = [];
  private open: number | null = null;
  private ended = false;
  private readonly unwatch: () => void;

  constructor(
    private readonly workers: readonly StreamPausable[],
    pause: PauseSwitch,
    /** Timeouts of the coordinator's own that a pause suspends (the window's deadline). */
    private readonly timers: PausableTimers,
  ) {
    this.unwatch = pause.watch((p) => this.set(p));
    if (pause.isPaused) this.set(true);
  }

  private set(paused: boolean): void {
    if (this.ended) return;
    if (paused && this.open === null) {
      this.open = epochMs();
      this.timers.suspend();
      // A worker that died is named by the run's own failure path; its refusal here adds nothing.
      for (const w of this.workers) void w.pauseStream().catch(() => {});
    } else if (!paused && this.open !== null) {
      // The resume's time is taken before any worker hears of it: a worker thread goes on at once, and its first
      // interval must not end inside the pause it closes.
      this.windows.push({ from: this.open, to: epochMs() });
      this.open = null;
      for (const w of this.workers) void w.resumeStream().catch(() => {});
      this.timers.resume();
    }
  }

  /** Lets every worker go for good (a stop ends the stream at a step boundary; the window ended): later switches are ignored. */
  release(): void {
    this.set(false);
    this.ended = true;
    this.unwatch();
  }

  /** Milliseconds paused so far, the open pause included. */
  pausedMs(): number {
    return this.windows.reduce((s, w) => s + (w.to - w.from), 0) + (this.open === null ? 0 : epochMs() - this.open);
  }

  /** The pauses that ended, in order. */
  get pauses(): readonly PauseWindow[] {
    return this.windows;
  }
}

/** A worker's window as the timeline reads it: its intervals and its step's start and end (epoch ms). */
export interface TimedWindow {
  intervals: Interval[];
  stepStart: number;
  stepEnd: number;
  memory?: StepMemory;
}

/** The windows with each pause cut out of their times (see the module's comment); returns new objects, the last pause first. */
export function cutPauses<T extends TimedWindow>(results: readonly T[], pauses: readonly PauseWindow[]): T[] {
  let out = results.map((r) => ({ ...r, intervals: r.intervals.map((iv) => ({ ...iv })) }));
  for (const p of [...pauses].sort((a, b) => b.from - a.from)) {
    let from = p.from;
    for (const r of out) for (const iv of r.intervals) if (iv.end <= p.to && iv.end > from) from = iv.end;
    const cut = p.to - from;
    if (!(cut > 0)) continue;
    const at = (t: number) => (t <= from ? t : t >= p.to ? t - cut : from);
    const memory = (m: StepMemory | undefined) => m && { samples: m.samples.map((s) => ({ ...s, t: at(s.t) })), peak: { ...m.peak, t: at(m.peak.t) } };
    out = out.map((r) => ({ ...r, stepStart: at(r.stepStart), stepEnd: at(r.stepEnd), intervals: r.intervals.map((iv) => ({ ...iv, start: at(iv.start), end: at(iv.end) })), ...(r.memory ? { memory: memory(r.memory) } : {}) }));
  }
  return out;
}
