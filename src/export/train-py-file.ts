/** train.py's text, read from disk (Node: the CLI and tests; the page imports it with `?raw`). */
import { readFileSync } from 'node:fs';

export const TRAIN_PY_URL = new URL('./train.py', import.meta.url);

export function readTrainPy(): string {
  return readFileSync(TRAIN_PY_URL, 'utf8');
}
