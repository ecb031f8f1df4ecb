/**
 * "Your text": a UTF-8 text a person drops, picks or pastes, turned into a
 * character corpus, and every way such a file is refused.
 *
 * - A file is refused before it is read when it is larger than
 *   TEXT_LIMITS.maxBytes; when read, for a NUL byte or too many control
 *   characters (a binary file), for invalid UTF-8 (naming the first bad byte's
 *   offset), for being empty, or for holding one repeated character.
 * - The vocabulary is the text's characters (Unicode code points), at most
 *   TEXT_LIMITS.vocab symbols: when the text has more, the vocab − 1 most
 *   frequent are kept (ties: the smaller code point) and every other character
 *   reads as one unknown symbol (UNKNOWN_SYMBOL, the last index); a text whose
 *   unknown characters would be more than TEXT_LIMITS.maxUnknownShare of it is
 *   refused. Kept symbols are ordered by code point.
 * - The content hash is SHA-256 of the text's UTF-8 (a leading byte-order mark
 *   is dropped when decoding, so it does not count), as 16 hex digits: a link
 *   to a run on "your text" names it, and a file whose hash differs is refused.
 *
 * Every refusal is a ConfigError naming the file, the value and the rule.
 */
import { ConfigError } from '../util/errors.ts';

export const TEXT_LIMITS = {
  /** Largest file read (bytes): refused from its size alone, before reading. */
  maxBytes: 4 * 1024 * 1024,
  /** Symbols of the vocabulary, the unknown symbol included. */
  vocab: 256,
  /** The share of the text's characters that may read as the unknown symbol. */
  maxUnknownShare: 0.05,
  /** The share of characters that may be control characters other than tab, newline, carriage return and form feed. */
  maxControlShare: 0.01,
} as const;

/** What a character outside the kept vocabulary reads as. */
export const UNKNOWN_SYMBOL = '\uFFFD';

/** Hex digits of the content hash a link carries. */
export const TEXT_HASH_HEX = 16;
export const TEXT_HASH_PATTERN = /^[0-9a-f]{16}$/;

export interface TextCorpus {
  /** The file's name, or what the text was called ("pasted text", the example's name). */
  readonly name: string;
  /** SHA-256 of the text's UTF-8, 16 hex digits. */
  readonly hash: string;
  readonly text: string;
  /** Index → symbol; the last is UNKNOWN_SYMBOL when some characters were mapped to it. */
  readonly symbols: readonly string[];
  /** The text as vocabulary indices, one per character (code point). */
  readonly ids: Uint8Array;
  /** Distinct characters in the text. */
  readonly distinct: number;
  /** Characters that read as the unknown symbol. */
  readonly unknownChars: number;
}

/** The field a message about the file `name` names. */
export function fileField(name: string): string {
  return `text file "${name}"`;
}

/** Refuses a file from its size alone (before any of it is read). */
export function checkTextFileSize(name: string, bytes: number): void {
  if (bytes > TEXT_LIMITS.maxBytes) {
    throw new ConfigError(fileField(name), `${formatBytes(bytes)}`, `is larger than the ${formatBytes(TEXT_LIMITS.maxBytes)} a text may be (it is not read; use a shorter excerpt)`);
  }
  if (bytes === 0) throw new ConfigError(fileField(name), '0 bytes', 'is empty; a text needs at least two distinct characters');
}

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${+(n / 1024 / 1024).toFixed(1)} MiB`;
  if (n >= 1024) return `${+(n / 1024).toFixed(1)} KiB`;
  return `${n} bytes`;
}

/**
 * The offset of the first byte that does not belong to a well-formed UTF-8
 * sequence (overlong forms, surrogates and code points above U+10FFFF are
 * ill-formed), or −1 when every byte does.
 */
export function firstInvalidUtf8(b: Uint8Array): number {
  let i = 0;
  while (i < b.length) {
    const c = b[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    let need: number, lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) need = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      if (c === 0xe0) lo = 0xa0;
      if (c === 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      if (c === 0xf0) lo = 0x90;
      if (c === 0xf4) hi = 0x8f;
    } else return i;
    for (let k = 1; k <= need; k++) {
      const d = b[i + k];
      if (d === undefined) return i;
      if (k === 1 ? d < lo || d > hi : d < 0x80 || d > 0xbf) return i;
    }
    i += need + 1;
  }
  return -1;
}

/** A control character that text does not hold (C0 less tab, newline, carriage return, form feed; and DEL). */
function isBinaryControl(code: number): boolean {
  return (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d && code !== 0x0c) || code === 0x7f;
}

/** The bytes of a file as text, or a ConfigError naming the file and the rule (binary, invalid UTF-8, too large). */
export function decodeTextFile(name: string, bytes: Uint8Array): string {
  checkTextFileSize(name, bytes.length);
  const nul = bytes.indexOf(0);
  if (nul >= 0) throw new ConfigError(fileField(name), `byte 0x00 at offset ${nul}`, 'is not text (a NUL byte: a binary file?); pick a UTF-8 text file');
  const bad = firstInvalidUtf8(bytes);
  if (bad >= 0) {
    const hex = Array.from(bytes.subarray(bad, bad + 4), (x) => x.toString(16).padStart(2, '0')).join(' ');
    throw new ConfigError(fileField(name), `bytes ${hex} at offset ${bad}`, 'is not valid UTF-8; save the text as UTF-8 and pick it again');
  }
  return new TextDecoder('utf-8').decode(bytes);
}

/**
 * The corpus of `text`: the vocabulary (see the module comment) and the text
 * as indices. Refuses an empty text, one repeated character, a text of
 * control characters, and one whose unknown characters would exceed the share.
 */
export function buildCorpus(name: string, text: string, hash: string): TextCorpus {
  const field = fileField(name);
  if (typeof text !== 'string' || text.length === 0) throw new ConfigError(field, '""', 'is empty; a text needs at least two distinct characters');
  const counts = new Map<number, number>();
  let chars = 0, controls = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0) as number;
    counts.set(cp, (counts.get(cp) ?? 0) + 1);
    chars++;
    if (isBinaryControl(cp)) controls++;
  }
  if (controls > TEXT_LIMITS.maxControlShare * chars) {
    throw new ConfigError(field, `${controls} control characters of ${chars}`, `is not text: more than ${TEXT_LIMITS.maxControlShare * 100}% control characters (a binary file?)`);
  }
  if (counts.size < 2) {
    const [only] = counts.keys();
    throw new ConfigError(field, `${JSON.stringify(String.fromCodePoint(only))} × ${chars}`, 'holds one repeated character; a model needs a text of at least two distinct characters');
  }
  let kept = [...counts.keys()];
  let unknownChars = 0;
  if (counts.size > TEXT_LIMITS.vocab) {
    // The text's own U+FFFD always reads as the unknown symbol: it cannot be a symbol beside it.
    const candidates = kept.filter((cp) => cp !== UNKNOWN_SYMBOL.codePointAt(0));
    candidates.sort((a, b) => (counts.get(b) as number) - (counts.get(a) as number) || a - b);
    kept = candidates.slice(0, TEXT_LIMITS.vocab - 1);
    const keptChars = kept.reduce((s, cp) => s + (counts.get(cp) as number), 0);
    unknownChars = chars - keptChars;
    if (unknownChars > TEXT_LIMITS.maxUnknownShare * chars) {
      throw new ConfigError(
        field,
        `${counts.size} distinct characters`,
        `has more than the ${TEXT_LIMITS.vocab} symbols a vocabulary holds, and the ${TEXT_LIMITS.vocab - 1} most frequent cover only ${pct(keptChars / chars)} of it: ` +
          `at most ${pct(TEXT_LIMITS.maxUnknownShare)} of a text may read as the unknown symbol ${UNKNOWN_SYMBOL}`,
      );
    }
  }
  kept.sort((a, b) => a - b);
  const index = new Map<number, number>(kept.map((cp, i) => [cp, i]));
  const mapped = counts.size > kept.length;
  const symbols = kept.map((cp) => String.fromCodePoint(cp));
  if (mapped) symbols.push(UNKNOWN_SYMBOL);
  const unknown = symbols.length - 1;
  const ids = new Uint8Array(chars);
  let i = 0;
  for (const ch of text) ids[i++] = index.get(ch.codePointAt(0) as number) ?? unknown;
  return { name, hash, text, symbols, ids, distinct: counts.size, unknownChars };
}

function pct(x: number): string {
  return `${+(x * 100).toFixed(1)}%`;
}

/** SHA-256 of the text's UTF-8, as the first TEXT_HASH_HEX hex digits. */
export async function hashText(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('').slice(0, TEXT_HASH_HEX);
}

/** A corpus from a file's bytes: decoded, hashed, its vocabulary built; refused by file, value and rule. */
export async function corpusFromBytes(name: string, bytes: Uint8Array): Promise<TextCorpus> {
  const text = decodeTextFile(name, bytes);
  return buildCorpus(name, text, await hashText(text));
}

/** A corpus from text typed or pasted (or an example shipped with the page). */
export async function corpusFromText(name: string, text: string): Promise<TextCorpus> {
  checkTextFileSize(name, new TextEncoder().encode(text).length);
  return buildCorpus(name, text, await hashText(text));
}

/** The text as one line for the page: its characters, symbols and what read as unknown. */
export function describeCorpus(c: TextCorpus): string {
  const chars = c.ids.length.toLocaleString('en-US');
  const base = `${c.name}: ${chars} characters, ${c.symbols.length} symbols`;
  if (c.unknownChars === 0) return base;
  return `${base} (${c.distinct} distinct characters: the ${c.distinct - (c.symbols.length - 1)} rarest, ${pct(c.unknownChars / c.ids.length)} of the text, read as ${UNKNOWN_SYMBOL})`;
}

/** The text of indices `ids` (the unknown symbol as itself). */
export function decodeIds(symbols: readonly string[], ids: ArrayLike<number>): string {
  let s = '';
  for (let i = 0; i < ids.length; i++) s += symbols[ids[i]] ?? UNKNOWN_SYMBOL;
  return s;
}
