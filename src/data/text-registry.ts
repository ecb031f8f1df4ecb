/**
 * The texts this page (or this worker, or this process) has loaded, by content
 * hash. A configuration names its text by hash only (`textHash`, which a link
 * can carry); the text itself stays here, in the browser. The coordinator hands
 * a run's corpus to its workers with their init, and the export reads it here.
 */
import { ConfigError } from '../util/errors.ts';
import { TEXT_HASH_PATTERN, type TextCorpus } from './text-corpus.ts';

/** Texts kept at once (the oldest is forgotten first). */
const KEEP = 4;
const loaded = new Map<string, TextCorpus>();

export function registerCorpus(c: TextCorpus): void {
  loaded.delete(c.hash);
  loaded.set(c.hash, c);
  while (loaded.size > KEEP) loaded.delete(loaded.keys().next().value as string);
}

export function loadedCorpus(hash: unknown): TextCorpus | undefined {
  return typeof hash === 'string' ? loaded.get(hash) : undefined;
}

/** Throws unless `hash` is a content hash's form (16 lowercase hex digits). */
export function requireTextHash(hash: unknown): string {
  if (typeof hash !== 'string' || !TEXT_HASH_PATTERN.test(hash)) {
    throw new ConfigError('textHash', hash ?? '(none)', 'must name the text by its content hash (16 hex digits): drop, pick or paste a text, or load the example');
  }
  return hash;
}

/** The loaded text with this hash, or a ConfigError saying that a link cannot carry a file. */
export function requireCorpus(hash: unknown): TextCorpus {
  const h = requireTextHash(hash);
  const c = loaded.get(h);
  if (!c) throw new ConfigError('textHash', h, 'no text with this content hash is loaded in this page (a link cannot carry a file): pick the file the run was made from');
  return c;
}
