import { describe, expect, it } from 'vitest';
import { KEEP_TEXTS, textsToDrop } from './text-shelf.ts';

describe('the kept texts', () => {
  const at = (hash: string, savedAt: number) => ({ hash, savedAt });
  it('keeps the newest four: a fifth drops the oldest; keeping one again drops nothing new', () => {
    expect(KEEP_TEXTS).toBe(4);
    const four = [at('a', 1), at('b', 4), at('c', 2), at('d', 3)];
    expect(textsToDrop(four, 'e')).toEqual(['a']);
    expect(textsToDrop(four, 'c')).toEqual([]);
    expect(textsToDrop([at('a', 1)], 'b')).toEqual([]);
    expect(textsToDrop([...four, at('x', 0)], 'e')).toEqual(['a', 'x']);
  });
});
