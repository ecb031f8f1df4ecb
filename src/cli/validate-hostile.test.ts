/**
 * `pipelab validate` on hostile files (issue 10): every one ends in a short
 * message naming the cell or the limit, never a stack trace, and bounded input.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CSV_LIMITS, generateSchedule, splitCsv, toCsv, validateSchedule } from '../schedule/index.ts';
import type { CliIo } from './io.ts';
import { runCli } from './main.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'pipelab-hostile-'));
const csv1f1b = () => toCsv(generateSchedule('1f1b', 4, 8));

function run(file: string): { code: number; out: string; err: string } {
  let out = '';
  let err = '';
  const io: CliIo = { out: (t) => void (out += t), err: (t) => void (err += t), readFile: (p) => readFileSync(p, 'utf8'), writeFile: () => {} };
  const code = runCli(['validate', file], io);
  return { code, out, err };
}

/** The CSV with one cell changed; returns the file and the cell's 1-based row and column. */
function edited(name: string, from: string, to: string): { file: string; row: number; col: number } {
  const rows = splitCsv(csv1f1b());
  const row = rows.findIndex((r) => r.includes(from));
  const col = rows[row].indexOf(from);
  rows[row][col] = to;
  const file = join(dir, name);
  writeFileSync(file, rows.map((r) => r.join(',')).join('\r\n') + '\r\n');
  return { file, row: row + 1, col: col + 1 };
}

describe('pipelab validate on hostile files', () => {
  it('a 2000000000 micro-batch index names the cell, with no stack trace (spawned)', () => {
    const { file, row, col } = edited('huge-mb.csv', '3B7', '3B2000000000');
    const r = spawnSync(process.execPath, [join(root, 'bin', 'pipelab.mjs'), 'validate', file], { cwd: root, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`csv row ${row} column ${col} = "3B2000000000": rank 3: micro-batch 2000000000 has no forward on any stage (the forwards cover micro-batches 0 to 7)`);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.stderr.split('\n').filter((l) => l !== '')).toHaveLength(1);
  });

  it('a forward with a 2000000000 micro-batch index names the cell before anything is allocated', () => {
    const { file, row, col } = edited('huge-f.csv', '0F7', '0F2000000000');
    const r = run(file);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`csv row ${row} column ${col} = "0F2000000000": micro-batch 2000000000 needs at least 2 · 4 stages · 2000000001 micro-batches`);
  });

  it('an out-of-range micro-batch names the edited cell (rank, column, text)', () => {
    const { file, row, col } = edited('mb8.csv', '1B0', '1B8');
    const r = run(file);
    expect(r.code).toBe(1);
    expect(r.err).toBe(`pipelab validate: malformed CSV: csv row ${row} column ${col} = "1B8": rank 1: micro-batch 8 has no forward on any stage (the forwards cover micro-batches 0 to 7)\n`);
  });

  it('a trailing blank line is not an extra rank', () => {
    for (const tail of ['\r\n', '\n\n\n', '\r\n,\r\n'.slice(0, 2)]) {
      const file = join(dir, 'trailing.csv');
      writeFileSync(file, csv1f1b() + tail);
      const r = run(file);
      expect(r.code, JSON.stringify(tail)).toBe(0);
      expect(r.out).toMatch(/^ok: .*: 4 ranks, 4 stages, 8 micro-batches, 64 actions/);
    }
  });

  it('a blank line between ranks is still a rank, one with no actions', () => {
    const rows = csv1f1b().split('\r\n');
    rows.splice(2, 0, '');
    const file = join(dir, 'middle-blank.csv');
    writeFileSync(file, rows.join('\r\n'));
    const r = run(file);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/: 5 ranks, 4 stages, 8 micro-batches, 64 actions/);
    expect(r.out).toContain('rank 2: stages ; 0 actions');
  });

  it('a 10 MB cell prints a short message', () => {
    const file = join(dir, 'big-cell.csv');
    writeFileSync(file, `0F0,${'9'.repeat(10_000_000)}\r\n`);
    const r = run(file);
    expect(r.code).toBe(1);
    expect(r.err.length).toBeLessThan(300);
    expect(r.err).toContain(`csv row 1 column 2 = "${'9'.repeat(CSV_LIMITS.cellChars + 1)}": is longer than ${CSV_LIMITS.cellChars} characters`);
  });

  it('10 MB of newlines is no schedule, said briefly', () => {
    const file = join(dir, 'newlines.csv');
    writeFileSync(file, '\n'.repeat(10_000_000));
    const r = run(file);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^pipelab validate: csv = "\\n\\n.*…" \(10000000 characters\): holds no rows/);
    expect(r.err.length).toBeLessThan(300);
  });

  it('more rows than a schedule may have', () => {
    const file = join(dir, 'rows.csv');
    writeFileSync(file, '0F0\n'.repeat(CSV_LIMITS.rows + 1));
    const r = run(file);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`csv row ${CSV_LIMITS.rows + 1} column 1 = "0F0": is past row ${CSV_LIMITS.rows}`);
  });

  it('a file over the size limit is refused before it is parsed', () => {
    const file = join(dir, 'huge.csv');
    writeFileSync(file, 'x'.repeat(CSV_LIMITS.chars + 1));
    const r = run(file);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`holds ${CSV_LIMITS.chars + 1} characters; a schedule file may hold at most ${CSV_LIMITS.chars}`);
  });

  it('a JSON schedule claiming 2000000000 micro-batches is refused by the validator without allocating', () => {
    const s = { ...generateSchedule('1f1b', 4, 8), microbatches: 2_000_000_000 };
    const v = validateSchedule(s);
    expect(v).toMatchObject({ ok: false, field: 'microbatches', value: 2_000_000_000 });
    const file = join(dir, 'huge.json');
    writeFileSync(file, JSON.stringify(s));
    const r = run(file);
    expect(r.code).toBe(1);
    expect(r.err).toContain('microbatches = 2000000000: stages · microbatches = 8000000000 (stage, micro-batch) pairs need at least 16000000000 actions, but order holds 64');
  });
});
