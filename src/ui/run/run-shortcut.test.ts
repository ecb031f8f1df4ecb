import { describe, expect, it } from 'vitest';
import type { RunStatus } from '../../state/store/store.ts';
import { isTyping, toggleAction } from './run-shortcut.ts';

describe('the R shortcut', () => {
  it('runs from any resting status, pauses a running run (a stream too: its workers hold between actions), resumes a paused one, and waits while workers start or stop', () => {
    const table: Record<RunStatus, ReturnType<typeof toggleAction>> = {
      idle: 'start',
      done: 'start',
      stopped: 'start',
      error: 'start',
      running: 'pause',
      paused: 'resume',
      starting: null,
      stopping: null,
    };
    for (const [status, action] of Object.entries(table)) expect(toggleAction(status as RunStatus), status).toBe(action);
  });

  it('is not taken from a field being typed in', () => {
    const el = (tag: string) => ({ isContentEditable: false, closest: (sel: string) => (sel.split(/,\s*/).includes(tag) ? {} : null) }) as unknown as EventTarget;
    expect(isTyping(el('input'))).toBe(true);
    expect(isTyping(el('select'))).toBe(true);
    expect(isTyping(el('textarea'))).toBe(true);
    expect(isTyping(el('button'))).toBe(false);
    expect(isTyping(null)).toBe(false);
    expect(isTyping({ isContentEditable: true, closest: () => null } as unknown as EventTarget)).toBe(true);
  });
});
