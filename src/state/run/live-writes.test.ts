import { afterEach, describe, expect, it, vi } from 'vitest';
import { LiveWrites } from './live-writes.ts';

interface S {
  losses: number[];
  step: number;
  status: string;
}

/** A store like zustand's: setState(f) merges f(state) into the state; counts the writes. */
function store(init: S) {
  let state = init;
  let writes = 0;
  return {
    get: () => state,
    writes: () => writes,
    set: (f: (s: S) => Partial<S>) => {
      writes++;
      state = { ...state, ...f(state) };
    },
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('LiveWrites', () => {
  it('writes nothing in the microtasks after a push: one write in a task of its own, for every update queued before it, in order', async () => {
    vi.useFakeTimers();
    const st = store({ losses: [], step: 0, status: 'running' });
    const live = new LiveWrites<S>(st.set, 100, () => Date.now());
    for (let k = 1; k <= 3; k++) live.push((s) => ({ losses: [...s.losses, k / 10], step: k }));
    await Promise.resolve();
    expect(st.writes()).toBe(0);
    vi.advanceTimersByTime(0);
    expect(st.writes()).toBe(1);
    expect(st.get()).toEqual({ losses: [0.1, 0.2, 0.3], step: 3, status: 'running' });
  });

  it('at most one write per everyMs: the next waits out the rest of the interval', () => {
    vi.useFakeTimers();
    const st = store({ losses: [], step: 0, status: 'running' });
    const live = new LiveWrites<S>(st.set, 100, () => Date.now());
    live.push((s) => ({ step: s.step + 1 }));
    vi.advanceTimersByTime(0);
    expect(st.writes()).toBe(1);
    vi.advanceTimersByTime(30);
    live.push((s) => ({ step: s.step + 1 }));
    live.push((s) => ({ step: s.step + 1 }));
    vi.advanceTimersByTime(69);
    expect(st.writes()).toBe(1);
    vi.advanceTimersByTime(1);
    expect(st.writes()).toBe(2);
    expect(st.get().step).toBe(3);
  });

  it('flush writes at once (before a write that must follow), and a write between two updates is seen by the later one', () => {
    vi.useFakeTimers();
    const st = store({ losses: [1, 2, 3], step: 3, status: 'running' });
    const live = new LiveWrites<S>(st.set, 100, () => Date.now());
    live.push((s) => ({ losses: [...s.losses, 4], step: 4 }));
    expect(live.pending).toBe(1);
    live.flush();
    expect(live.pending).toBe(0);
    expect(st.get().losses).toEqual([1, 2, 3, 4]);
    // A recovery cuts the curve back: an update queued after it appends to the cut curve.
    st.set((s) => ({ losses: s.losses.slice(0, 2), step: 2 }));
    live.push((s) => ({ losses: [...s.losses, 3.5], step: s.step + 1 }));
    vi.advanceTimersByTime(100);
    expect(st.get()).toEqual({ losses: [1, 2, 3.5], step: 3, status: 'running' });
    live.flush();
    expect(st.writes()).toBe(3);
    expect(() => new LiveWrites<S>(st.set, -1)).toThrow(/everyMs must be ≥ 0, got -1/);
  });
});
