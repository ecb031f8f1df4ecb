/**
 * Every `pipelab` command the README and docs/ show runs as written: each is
 * read out of the pages' fenced sh blocks (line continuations joined, the
 * trailing `# comment` and `[optional]` parts dropped), its file arguments
 * pointed at real files made here (a schedule CSV, a profile) and its --out at a
 * temporary folder, run through the CLI in process, and must exit 0. A page
 * that shows no command, or a command this test cannot place, fails it.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from './cli/cli-test-support.ts';
import { defaultRunConfig } from './config/run-config.ts';
import { buildModelSpec } from './nn/model-config.ts';
import { flopsProfile } from './plan/flops-profile.ts';

const ROOT = new URL('../', import.meta.url);
const pages = ['README.md', ...readdirSync(new URL('docs/', ROOT)).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The `pipelab …` commands of a Markdown text's sh/bash blocks, as argument lists. */
export function pipelabCommands(markdown: string): string[][] {
  const out: string[][] = [];
  for (const m of markdown.matchAll(/```(?:sh|bash)\n([\s\S]*?)```/g)) {
    for (const raw of m[1].replace(/\\\n/g, ' ').split('\n')) {
      const line = raw.replace(/\s#.*$/, '').replace(/\[[^\]]*\]/g, '').trim();
      const at = line.match(/(?:^|&&\s*)(?:npx\s+)?pipelab\s+(.*)$/);
      if (at) out.push(at[1].split(/\s+/).filter(Boolean));
    }
  }
  return out;
}

describe('the commands the docs show', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pipelab-docs-'));
  // The files the pages' commands name.
  const csv = run('schedule', '--schedule', '1f1b', '--ranks', '4', '--microbatches', '8', '--format', 'csv');
  writeFileSync(join(dir, 'my-schedule.csv'), csv.out);
  writeFileSync(join(dir, 'profile.json'), JSON.stringify(flopsProfile(buildModelSpec(defaultRunConfig()), 8)));
  const files: Record<string, string> = { 'my-schedule.csv': join(dir, 'my-schedule.csv'), 'profile.json': join(dir, 'profile.json') };

  const commands = pages.flatMap((page) => pipelabCommands(readFileSync(new URL(page, ROOT), 'utf8')).map((args) => ({ page, args })));

  it('reads commands out of the pages (the reader is not blind)', () => {
    expect(pipelabCommands('```sh\nnpx pipelab plan --a 1 \\\n  --b 2 [--c]   # note\ncd x && pipelab --help\n```')).toEqual([['plan', '--a', '1', '--b', '2'], ['--help']]);
    expect(commands.length).toBeGreaterThanOrEqual(10);
    expect(new Set(commands.map((c) => c.args[0]))).toEqual(new Set(['schedule', 'simulate', 'validate', 'export-torch', 'plan', '--help']));
  });

  it.each(commands.map((c) => [c.page, c.args.join(' '), c.args] as const))('%s: pipelab %s', (_page, _text, args) => {
    const placed = args.map((a, i) => (files[a] ? files[a] : args[i - 1] === '--out' ? join(dir, `out-${a}`) : a));
    const r = run(...placed);
    expect(r.code, r.err).toBe(0);
    expect(r.out.length + r.files.size).toBeGreaterThan(0);
  });
});
