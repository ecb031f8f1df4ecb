/**
 * `pipelab export-torch --text FILE`: a text file read as the page reads a
 * dropped one (its size checked before it is read, then UTF-8, binary and
 * vocabulary checks: src/data/text-corpus.ts), each refusal naming the file and
 * the rule. Its content hash is the page's (SHA-256 of the text's UTF-8, as
 * hashText computes it), here with node:crypto because the CLI is synchronous.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { buildCorpus, checkTextFileSize, decodeTextFile, TEXT_HASH_HEX, type TextCorpus } from '../data/text-corpus.ts';
import { UsageError } from './args.ts';

export function readTextCorpusFile(path: string): TextCorpus {
  const name = basename(path);
  let size: number;
  try {
    size = statSync(path).size;
  } catch (e) {
    throw new UsageError('--text', path, `cannot be read (${(e as Error).message})`);
  }
  checkTextFileSize(name, size);
  const text = decodeTextFile(name, new Uint8Array(readFileSync(path)));
  return buildCorpus(name, text, createHash('sha256').update(text, 'utf8').digest('hex').slice(0, TEXT_HASH_HEX));
}
