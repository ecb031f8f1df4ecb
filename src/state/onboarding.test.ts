import { describe, expect, it } from 'vitest';
import { INTRO_DISMISSED_KEY, introDismissed, rememberIntroDismissed } from './onboarding.ts';

function memoryStorage(): Pick<Storage, 'getItem' | 'setItem' | 'removeItem'> & { data: Map<string, string> } {
  const data = new Map<string, string>();
  return { data, getItem: (k) => data.get(k) ?? null, setItem: (k, v) => void data.set(k, v), removeItem: (k) => void data.delete(k) };
}

describe('the first-visit explanation', () => {
  it('shows until dismissed, stays dismissed, and shows again when asked for', () => {
    const store = memoryStorage();
    expect(introDismissed(store)).toBe(false);
    rememberIntroDismissed(true, store);
    expect(store.data.get(INTRO_DISMISSED_KEY)).toBe('1');
    expect(introDismissed(store)).toBe(true);
    rememberIntroDismissed(false, store);
    expect(introDismissed(store)).toBe(false);
  });

  it('where storage is blocked it shows (and dismissing does not throw)', () => {
    const blocked = {
      getItem: () => {
        throw new Error('SecurityError');
      },
      setItem: () => {
        throw new Error('SecurityError');
      },
      removeItem: () => {
        throw new Error('SecurityError');
      },
    };
    expect(introDismissed(blocked)).toBe(false);
    expect(() => rememberIntroDismissed(true, blocked)).not.toThrow();
    expect(introDismissed(null)).toBe(false);
  });
});
