/** Sampling names from a next-character model, here a fixed bigram table instead of a network. */
import { describe, expect, it } from 'vitest';
import { END, NAMES_VOCAB, charIndex } from './names.ts';
import { sampleNames } from './sample-names.ts';

/** A model that spells "ab" then ends, whatever the seed: huge logit on the next letter. */
const spellAb = async (ctx: Int32Array, rows: number): Promise<Float64Array> => {
  const out = new Float64Array(rows * 28);
  for (let r = 0; r < rows; r++) {
    const last = ctx[r * 2 + 1];
    const next = last === END ? charIndex('a') : last === charIndex('a') ? charIndex('b') : END;
    out[r * 28 + next] = 50;
  }
  return out;
};

describe('sampleNames', () => {
  it('follows the model and stops at the end mark', async () => {
    expect(await sampleNames(spellAb, { count: 3, context: 2, seed: 1 })).toEqual(['ab', 'ab', 'ab']);
  });

  it('uniform logits: seeded, valid characters, cut at maxLength', async () => {
    const uniform = async (_c: Int32Array, rows: number) => new Float64Array(rows * 28);
    const a = await sampleNames(uniform, { count: 30, context: 3, seed: 4, maxLength: 6 });
    expect(await sampleNames(uniform, { count: 30, context: 3, seed: 4, maxLength: 6 })).toEqual(a);
    for (const n of a) {
      expect(n.length).toBeLessThanOrEqual(6);
      for (const c of n) expect(NAMES_VOCAB.indexOf(c)).toBeGreaterThan(0);
    }
  });

  it('rejects bad options', async () => {
    await expect(sampleNames(spellAb, { count: 0, context: 2, seed: 1 })).rejects.toThrow('count = 0: must be an integer between 1 and 10000');
    await expect(sampleNames(spellAb, { count: 1, context: 2, seed: 1, temperature: 0 })).rejects.toThrow('temperature = 0: must be greater than 0');
  });
});
