/** Shared by the CLI tests: run `pipelab` spawned through bin/pipelab.mjs, or in process. Not used by the CLI. */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CliIo } from './io.ts';
import { runCli } from './main.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = join(root, 'bin', 'pipelab.mjs');

/** The real thing: `node bin/pipelab.mjs ...`. */
export function spawn(...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: root, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** In-process, for the many small cases; files written are kept in `files`. */
export function run(...args: string[]): { code: number; out: string; err: string; files: Map<string, string | Uint8Array> } {
  let out = '';
  let err = '';
  const files = new Map<string, string | Uint8Array>();
  const io: CliIo = {
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    readFile: (p) => readFileSync(p, 'utf8'),
    writeFile: (p, t) => void files.set(p, t),
  };
  const code = runCli(args, io);
  return { code, out, err, files };
}
