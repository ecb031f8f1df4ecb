/**
 * The names data as sequences, for the GPT (as makemore does it): token 0
 * ('.') starts and ends a name; a name of length L gives one example row with
 * x = [0, name, 0 …] and y = [name, 0, −1 …] over blockSize positions, where
 * −1 (IGNORE_LABEL) marks padded targets that take no loss. blockSize must be
 * at least the longest name + 1.
 */
import { ConfigError, requireInt } from '../util/errors.ts';
import { IGNORE_LABEL, type Examples } from './examples.ts';
import { encodeName, END, loadNames, splitNamesDataset, type NameSplit } from './names.ts';
import type { Dataset } from './examples.ts';

/** The longest name in the data set plus one (the start/end mark): the shortest block size that holds every name. */
export function minBlockSize(names: readonly string[] = loadNames().names): number {
  let m = 0;
  for (const n of names) m = Math.max(m, n.length);
  return m + 1;
}

export function nameSequences(names: readonly string[], blockSize: number): Examples {
  requireInt('blockSize', blockSize, 1);
  const n = names.length;
  const inputs = new Int32Array(n * blockSize).fill(END);
  const labels = new Int32Array(n * blockSize).fill(IGNORE_LABEL);
  names.forEach((name, r) => {
    const seq = encodeName(name);
    if (seq.length + 1 > blockSize) {
      throw new ConfigError('blockSize', blockSize, `must be at least the longest name + 1 = ${seq.length + 1} (${JSON.stringify(name)} and its start mark)`);
    }
    const o = r * blockSize;
    seq.forEach((c, i) => {
      inputs[o + i + 1] = c;
      labels[o + i] = c;
    });
    labels[o + seq.length] = END;
  });
  return { n, inputs, inputCols: blockSize, inputDType: 'i32', labels, labelCols: blockSize };
}

export interface NameSequencesDataset extends Dataset {
  readonly split: NameSplit;
  readonly blockSize: number;
}

/** The same seeded 90/10 split by name as the char-MLP's data set, as sequences. */
export function createNameSequencesDataset(blockSize: number, seed: number, valFraction = 0.1): NameSequencesDataset {
  return { ...splitNamesDataset(seed, valFraction, blockSize, (names) => nameSequences(names, blockSize)), blockSize };
}
