import { describe, expect, it, vi } from 'vitest';
import { DEFAULT_NUDGE_MAX_MS, DEFAULT_NUDGE_MS, DEFAULT_NUDGE_STEADY_MS, defaultNudgeMs, macrotask, nudgePolicy, WaitNudger } from './wait-nudge.ts';

/** A wait that ends when `end` is called. */
function wait<T = void>(): { p: Promise<T>; end: (v: T) => void; fail: (e: unknown) => void } {
  let end!: (v: T) => void;
  let fail!: (e: unknown) => void;
  const p = new Promise<T>((res, rej) => {
    end = res;
    fail = rej;
  });
  return { p, end, fail };
}

const now = (): number => performance.now();

describe('macrotask', () => {
  it("without setImmediate (a browser's path): turns on one kept MessageChannel, each after the tasks queued before it, in order", async () => {
    const g = globalThis as { setImmediate?: unknown };
    const saved = g.setImmediate;
    const made = vi.spyOn(globalThis, 'MessageChannel');
    g.setImmediate = undefined;
    try {
      const order: string[] = [];
      const turns = [0, 1, 2, 3].map((i) => macrotask().then(() => order.push(`turn ${i}`)));
      void Promise.resolve().then(() => order.push('microtask'));
      await Promise.all(turns);
      expect(order).toEqual(['microtask', 'turn 0', 'turn 1', 'turn 2', 'turn 3']);
      for (let i = 0; i < 20; i++) await macrotask();
      expect(made.mock.calls.length).toBeLessThanOrEqual(1);
    } finally {
      g.setImmediate = saved;
      made.mockRestore();
    }
  });
});

describe('WaitNudger', () => {
  it('nudges while a wait is pending, and stops when none is', async () => {
    let sent = 0;
    const n = new WaitNudger(() => sent++, 1e-9);
    const w = wait<number>();
    const out = n.during(w.p);
    for (let i = 0; i < 20; i++) await macrotask();
    expect(sent).toBeGreaterThan(5);
    w.end(7);
    expect(await out).toBe(7);
    for (let i = 0; i < 3; i++) await macrotask();
    const after = sent;
    for (let i = 0; i < 20; i++) await macrotask();
    expect(sent).toBe(after);
    expect(n.nudges).toBe(sent);
  });

  it('one loop for overlapping waits, running until the last ends; a failed wait still fails', async () => {
    let sent = 0;
    const n = new WaitNudger(() => sent++, 1e-9);
    const a = wait();
    const b = wait();
    const pa = n.during(a.p);
    const pb = n.during(b.p);
    for (let i = 0; i < 10; i++) await macrotask();
    a.end();
    await pa;
    const mid = sent;
    for (let i = 0; i < 10; i++) await macrotask();
    expect(sent).toBeGreaterThan(mid);
    b.fail(new Error('map failed'));
    await expect(pb).rejects.toThrow('map failed');
    for (let i = 0; i < 3; i++) await macrotask();
    const end = sent;
    for (let i = 0; i < 10; i++) await macrotask();
    expect(sent).toBe(end);
  });

  it('keeps its interval between nudges (on its clock: here one that moves 0.5 ms a turn)', async () => {
    let clock = 0;
    const at: number[] = [];
    const n = new WaitNudger(() => at.push(clock), 2, macrotask, () => (clock += 0.5));
    const w = wait();
    const out = n.during(w.p);
    for (let i = 0; i < 40; i++) await macrotask();
    w.end();
    await out;
    expect(at.length).toBeGreaterThan(5);
    for (let i = 1; i < at.length; i++) expect(at[i] - at[i - 1]).toBe(2);
  });

  it('backs off: each gap doubles up to maxMs within a stretch of waits, and a new stretch starts again at the interval', async () => {
    let clock = 0;
    const at: number[] = [];
    // A clock that moves 0.25 ms a turn; first gap 0.5 ms, doubling from the second nudge on (steadyMs 0), at most 2 ms.
    const n = new WaitNudger(() => at.push(clock), 0.5, macrotask, () => (clock += 0.25), 2, 2, 0);
    const w = wait();
    const out = n.during(w.p);
    for (let i = 0; i < 60; i++) await macrotask();
    w.end();
    await out;
    const gaps = at.slice(1).map((t, i) => t - at[i]);
    expect(gaps.slice(0, 5)).toEqual([0.5, 1, 2, 2, 2]);
    expect(gaps.every((g) => g === 0.5 || g === 1 || g === 2)).toBe(true);
    for (let i = 0; i < 3; i++) await macrotask();
    // The next stretch: a nudge at once, then 0.5 ms again.
    const from = at.length;
    const w2 = wait();
    const out2 = n.during(w2.p);
    for (let i = 0; i < 8; i++) await macrotask();
    w2.end();
    await out2;
    expect(at.slice(from + 1, from + 3).map((t, i) => t - at[from + i])).toEqual([0.5, 1]);
  });

  it('steadyMs: the interval holds for that long into a stretch, then the gaps double (the default: 0.25 ms for 2 ms, then up to 2 ms)', async () => {
    let clock = 0;
    const at: number[] = [];
    // A clock that moves 0.25 ms a turn; the defaults but the nudge, the turn and the clock.
    const n = new WaitNudger(() => at.push(clock), DEFAULT_NUDGE_MS, macrotask, () => (clock += 0.25));
    expect([n.intervalMs, n.backoff, n.maxMs, n.steadyMs]).toEqual([0.25, 2, 2, 2]);
    const w = wait();
    const out = n.during(w.p);
    for (let i = 0; i < 60; i++) await macrotask();
    w.end();
    await out;
    const gaps = at.slice(1).map((t, i) => t - at[i]);
    // Nudges at 0.25, 0.5, …, 2.25 (the first 2 ms of the stretch: every 0.25 ms), then gaps 0.5, 1, 2, 2, …
    expect(gaps.slice(0, 12)).toEqual([0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.5, 1, 2, 2]);
    expect(() => new WaitNudger(() => {}, 1, macrotask, now, 2, 2, -1)).toThrow(/steadyMs must be ≥ 0, got -1/);
  });

  it('backoff 1 keeps a fixed interval; a backoff under 1 or a maxMs under the interval is refused', async () => {
    let clock = 0;
    const at: number[] = [];
    const n = new WaitNudger(() => at.push(clock), 0.5, macrotask, () => (clock += 0.25), 1, 2);
    const w = wait();
    const out = n.during(w.p);
    for (let i = 0; i < 30; i++) await macrotask();
    w.end();
    await out;
    expect(at.length).toBeGreaterThan(5);
    for (let i = 1; i < at.length; i++) expect(at[i] - at[i - 1]).toBe(0.5);
    expect(() => new WaitNudger(() => {}, 1, macrotask, now, 0.5)).toThrow(/backoff must be ≥ 1, got 0.5/);
    expect(() => new WaitNudger(() => {}, 1, macrotask, now, 2, 0.5)).toThrow(/maxMs must be ≥ intervalMs \(1\), got 0.5/);
  });

  it('stops at the device loss even if the wait never ends, and a throwing nudge stops nothing', async () => {
    let sent = 0;
    const n = new WaitNudger(() => {
      sent++;
      throw new Error('device destroyed');
    }, 1e-9);
    const lost = wait();
    void n.during(new Promise(() => {}), lost.p);
    for (let i = 0; i < 10; i++) await macrotask();
    expect(sent).toBeGreaterThan(3);
    lost.end();
    for (let i = 0; i < 3; i++) await macrotask();
    const end = sent;
    for (let i = 0; i < 10; i++) await macrotask();
    expect(sent).toBe(end);
  });

  it('reads its policy from the build setting in a browser: off, an interval, or all four numbers; a bad one is refused by its rule', () => {
    const g = globalThis as { document?: unknown };
    g.document = {};
    try {
      expect(nudgePolicy(false, undefined)).toEqual({ intervalMs: DEFAULT_NUDGE_MS, backoff: 2, maxMs: DEFAULT_NUDGE_MAX_MS, steadyMs: DEFAULT_NUDGE_STEADY_MS });
      expect(nudgePolicy(true, undefined).intervalMs).toBe(0);
      expect(nudgePolicy(false, '0').intervalMs).toBe(0);
      expect(nudgePolicy(false, '0.1')).toEqual({ intervalMs: 0.1, backoff: 2, maxMs: DEFAULT_NUDGE_MAX_MS, steadyMs: DEFAULT_NUDGE_STEADY_MS });
      expect(nudgePolicy(false, '0.05,1.5,3,1')).toEqual({ intervalMs: 0.05, backoff: 1.5, maxMs: 3, steadyMs: 1 });
      expect(() => nudgePolicy(false, '0.5,0.5')).toThrow(/VITE_PIPELAB_GPU_NUDGE = "0.5,0.5": must be 0, <ms>, or <ms>,<backoff ≥ 1>/);
    } finally {
      delete g.document;
    }
  });

  it('refuses an interval that is not positive', () => {
    expect(() => new WaitNudger(() => {}, 0)).toThrow(/intervalMs must be > 0, got 0/);
  });

  it('is off by default outside a browser and on software adapters', () => {
    expect(defaultNudgeMs(false)).toBe(0); // Node: Dawn's own loop polls
    expect(defaultNudgeMs(true)).toBe(0);
  });
});
