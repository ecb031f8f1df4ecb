/** Timeouts a pause stops: they fire after their time not suspended, keep what they had left, and cancel. */
import { describe, expect, it, vi } from 'vitest';
import { PausableTimers } from './pausable-timers.ts';

describe('PausableTimers', () => {
  it('fires after its time; a suspension stops the clock and the resume runs what was left', () => {
    vi.useFakeTimers();
    try {
      const t = new PausableTimers();
      const fired: string[] = [];
      t.start(100, () => fired.push('a'));
      t.start(300, () => fired.push('b'));
      vi.advanceTimersByTime(60);
      t.suspend();
      // Suspended for far longer than either timeout: nothing fires, and a timeout started now waits too.
      t.start(10, () => fired.push('c'));
      vi.advanceTimersByTime(10_000);
      expect(fired).toEqual([]);
      t.resume();
      // c has its 10 ms, a the 40 it had left, b 240.
      vi.advanceTimersByTime(9);
      expect(fired).toEqual([]);
      vi.advanceTimersByTime(1);
      expect(fired).toEqual(['c']);
      vi.advanceTimersByTime(29);
      expect(fired).toEqual(['c']);
      vi.advanceTimersByTime(1);
      expect(fired).toEqual(['c', 'a']);
      vi.advanceTimersByTime(199);
      expect(fired).toEqual(['c', 'a']);
      vi.advanceTimersByTime(1);
      expect(fired).toEqual(['c', 'a', 'b']);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a cancelled timeout never fires, suspended or not; suspend and resume twice are one', () => {
    vi.useFakeTimers();
    try {
      const t = new PausableTimers();
      const fired: string[] = [];
      const cancelA = t.start(50, () => fired.push('a'));
      const cancelB = t.start(50, () => fired.push('b'));
      cancelA();
      t.suspend();
      t.suspend();
      cancelB();
      t.resume();
      t.resume();
      vi.advanceTimersByTime(1000);
      expect(fired).toEqual([]);
      expect(t.isSuspended).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });
});
