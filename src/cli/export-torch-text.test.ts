/**
 * `pipelab export-torch --text FILE`: the bundle of a run on a text file (the
 * text and its vocabulary carried, the content hash the page's), and every bad
 * file refused naming the file and the rule.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hashText } from '../data/text-corpus.ts';
import { loadMobyDick, MOBY_DICK } from '../data/moby-dick.ts';
import { registerCorpus } from '../data/text-registry.ts';
import { defaultRunConfig, withDataset } from '../config/run-config.ts';
import { buildTorchBundle } from '../export/torch-bundle.ts';
import { readTorchProgram } from '../export/torch-program-disk.ts';
import { readSafetensors } from '../util/safetensors.ts';
import { run } from './cli-test-support.ts';

const dir = mkdtempSync(join(tmpdir(), 'pipelab-cli-text-'));
const TEXT = 'Call me Ishmael. Some years ago, never mind how long precisely, I thought I would sail about a little.\n'.repeat(8);
const file = (name: string, data: string | Uint8Array) => {
  const p = join(dir, name);
  writeFileSync(p, data);
  return p;
};

describe('pipelab export-torch --text', () => {
  it('writes the bundle of a GPT run on the file: dataset text, the page\'s content hash, the text and its vocabulary', async () => {
    const path = file('ishmael.txt', TEXT);
    const r = run('export-torch', '--text', path, '--ranks', '2', '--microbatches', '2', '--batchSize', '4', '--blockSize', '16', '--layers', '3', '--steps', '2', '--out', join(dir, 'b'));
    expect(r.code, r.err).toBe(0);
    const cfg = JSON.parse(r.files.get(join(dir, 'b', 'config.json')) as string);
    // The page's hash (crypto.subtle), computed apart from the CLI's (node:crypto).
    expect(cfg.run).toMatchObject({ dataset: 'text', textHash: await hashText(TEXT), model: 'gpt', blockSize: 16, ranks: 2 });
    expect(new TextDecoder().decode(r.files.get(join(dir, 'b', 'text.txt')) as Uint8Array)).toBe(TEXT);
    const vocab = JSON.parse(r.files.get(join(dir, 'b', 'vocab.json')) as string);
    expect(vocab.symbols).toEqual([...new Set(TEXT)].sort((a, b) => a.codePointAt(0)! - b.codePointAt(0)!));
    const batches = readSafetensors(r.files.get(join(dir, 'b', 'batches.safetensors')) as Uint8Array);
    expect(batches.tensors.inputs.shape).toEqual([2, 4, 16]);
  });

  it.each([
    ['photo.png', new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0]), 'pipelab export-torch: text file "photo.png" = "byte 0x00 at offset 4": is not text'],
    ['empty.txt', '', 'pipelab export-torch: text file "empty.txt" = "0 bytes": is empty'],
    ['latin1.txt', new Uint8Array([0x63, 0x61, 0x66, 0xe9]), 'pipelab export-torch: text file "latin1.txt" = "bytes e9 at offset 3": is not valid UTF-8'],
    // (Reported on the hash the file gave, naming the file: the configuration's reading reverts the field that broke the rule.)
    ['short.txt', 'Call me Ishmael.', 'is shorter than two blocks of blockSize + 1 = 33 characters (one to train on, one held out): pick a longer text or a smaller block size (with text file "short.txt"'],
  ])('refuses %s naming the file and the rule', (name, data, message) => {
    const r = run('export-torch', '--text', file(name, data), '--out', join(dir, 'never'));
    expect(r.code).not.toBe(0);
    expect(r.err).toContain(message);
    expect(r.files.size).toBe(0);
  });

  it('refuses a missing file, and a --textHash that is not the file\'s', () => {
    expect(run('export-torch', '--text', join(dir, 'nope.txt'), '--out', join(dir, 'never')).err).toContain(`--text = "${join(dir, 'nope.txt')}": cannot be read`);
    const r = run('export-torch', '--text', file('ishmael.txt', TEXT), '--textHash', '0123456789abcdef', '--out', join(dir, 'never'));
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--text = ".*ishmael\.txt": has content hash [0-9a-f]{16}, not the 0123456789abcdef --textHash names/);
  });

  it('trains on the book the page ships without a file: --text moby-dick, --dataset moby-dick and the preset\'s --textHash each write the page\'s bundle', async () => {
    // The page's path: the preset's configuration, the book read as the page reads it (Vite's ?raw import, hashed with crypto.subtle).
    const page = await loadMobyDick();
    expect(page.hash).toBe(MOBY_DICK.hash);
    registerCorpus(page);
    const cfg = { ...withDataset(defaultRunConfig(), 'text', MOBY_DICK.hash), ranks: 2, microbatches: 2, batchSize: 4, steps: 2 };
    const expected = new Map(buildTorchBundle(cfg, readTorchProgram()).map((f) => [f.path, f.data]));
    const flags = ['--ranks', '2', '--microbatches', '2', '--batchSize', '4', '--steps', '2'];
    for (const [i, how] of [['--text', 'moby-dick'], ['--dataset', 'moby-dick'], ['--dataset', 'text', '--textHash', MOBY_DICK.hash]].entries()) {
      const out = join(dir, `book${i}`);
      const r = run('export-torch', ...how, ...flags, '--out', out);
      expect(r.code, r.err).toBe(0);
      expect([...r.files.keys()].map((k) => k.slice(out.length + 1)).sort()).toEqual([...expected.keys()].sort());
      // Byte for byte (Buffer.equals: a deep toEqual of megabyte arrays takes seconds).
      const bytes = (d: string | Uint8Array | undefined) => Buffer.from(typeof d === 'string' ? new TextEncoder().encode(d) : (d ?? new Uint8Array()));
      for (const [path, data] of expected) expect(bytes(r.files.get(join(out, path))).equals(bytes(data)), path).toBe(true);
    }
  });

  it('refuses --dataset moby-dick beside --text, and a --text that is neither a file nor an example naming the examples', () => {
    expect(run('export-torch', '--dataset', 'moby-dick', '--text', 'moby-dick', '--out', join(dir, 'never')).err).toContain('--dataset = "moby-dick": names an example text; give it or --text, not both');
    expect(run('export-torch', '--text', 'moby', '--out', join(dir, 'never')).err).toMatch(/--text = "moby": cannot be read \(ENOENT.*\); the example texts need no file: moby-dick/);
  });
});
