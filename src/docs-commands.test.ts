/**
 * The commands the README and docs/ show run as written:
 * - every `pipelab` line of the pages' fenced sh blocks (line continuations joined, the trailing `# comment`
 *   dropped), once without its `[optional]` parts and, where it has some, once with all of them;
 * - every inline `pipelab …` span of the prose that is a whole command; the spans that are forms (a
 *   placeholder in capitals such as `P` or `DIR`, `...`, `a|b`, `[flags]`) or a bare command name are not run,
 *   and this test lists them, so a new one is seen;
 * - the first torchrun block of docs/pytorch.md: its `pipelab export-torch … --out run1`, then its
 *   `cd run1 && torchrun …` line through sh, character for character, under Debian's torchrun.
 * File arguments are pointed at real files made here (a schedule CSV, a profile, a text) and --out at a
 * temporary folder; the CLI runs in process and must exit 0. A page that shows no command, or a command this
 * test cannot place, fails it. docs/README.md says which commands are not run.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from './cli/cli-test-support.ts';
import { defaultRunConfig } from './config/run-config.ts';
import { freePort, TORCHRUN } from './export/testing/torchrun.ts';
import { buildModelSpec } from './nn/model-config.ts';
import { flopsProfile } from './plan/flops-profile.ts';

const ROOT = new URL('../', import.meta.url);
const pages = ['README.md', ...readdirSync(new URL('docs/', ROOT)).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The lines of a Markdown text's sh/bash blocks, continuations joined, comments kept. */
function shellLines(markdown: string): string[] {
  return [...markdown.matchAll(/```(?:sh|bash)\n([\s\S]*?)```/g)].flatMap((m) => m[1].replace(/\\\n/g, ' ').split('\n'));
}

const words = (s: string): string[] => s.split(/\s+/).filter(Boolean);

/**
 * The `pipelab …` commands of a Markdown text's sh/bash blocks, as argument lists: each without its
 * `[optional]` parts and, where it has some, again with all of them.
 */
export function pipelabCommands(markdown: string): string[][] {
  const out: string[][] = [];
  for (const raw of shellLines(markdown)) {
    const line = raw.replace(/\s#.*$/, '');
    const at = line.match(/(?:^|&&\s*)(?:npx\s+)?pipelab\s+(.*)$/);
    if (!at) continue;
    out.push(words(at[1].replace(/\[[^\]]*\]/g, '')));
    if (/\[[^\]]*\]/.test(at[1])) out.push(words(at[1].replace(/\[([^\]]*)\]/g, '$1')));
  }
  return out;
}

/** The `pipelab …` spans of a Markdown text's prose (outside fenced blocks): whole commands to run, and forms. */
export function inlinePipelabCommands(markdown: string): { commands: string[][]; forms: string[] } {
  const prose = markdown.replace(/```[\s\S]*?```/g, '');
  const commands: string[][] = [];
  const forms: string[] = [];
  for (const m of prose.matchAll(/`((?:npx\s+)?pipelab(?:\s[^`]*)?)`/g)) {
    const args = words(m[1].replace(/^(?:npx\s+)?pipelab\s*/, ''));
    if (args.length === 0) continue; // the program's name
    const placeholder = /\.\.\.|…|\||\[/.test(m[1]) || args.some((a) => /^[A-Z][A-Z_0-9]*$/.test(a));
    const nameOnly = !args.some((a) => a.startsWith('-'));
    if (placeholder || nameOnly) forms.push(m[1].replace(/\s+/g, ' '));
    else commands.push(args);
  }
  return { commands, forms };
}

/** Writes what the in-process CLI wrote (its `files`) to disk. */
function writeFiles(files: ReadonlyMap<string, string | Uint8Array>): void {
  for (const [path, data] of files) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, data);
  }
}

/** Runs a shell line in `cwd` (sh -c), the project's torchrun first on PATH; resolves with the exit code and the output. */
function sh(line: string, cwd: string, env: Record<string, string>, timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const PATH = `${dirname(TORCHRUN)}:${process.env.PATH ?? ''}`;
    execFile('sh', ['-c', line], { cwd, env: { ...process.env, ...env, PATH }, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const c = err ? (err as { code?: unknown }).code : 0;
      resolve({ code: typeof c === 'number' ? c : -1, output: stdout + stderr });
    });
  });
}

describe('the commands the docs show', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pipelab-docs-'));
  // The files the pages' commands name.
  const csv = run('schedule', '--schedule', '1f1b', '--ranks', '4', '--microbatches', '8', '--format', 'csv');
  writeFileSync(join(dir, 'my-schedule.csv'), csv.out);
  writeFileSync(join(dir, 'profile.json'), JSON.stringify(flopsProfile(buildModelSpec(defaultRunConfig()), 8)));
  writeFileSync(join(dir, 'book.txt'), 'Call me Ishmael. Some years ago, never mind how long precisely, I thought I would sail about a little. '.repeat(20));
  const files: Record<string, string> = Object.fromEntries(['my-schedule.csv', 'profile.json', 'book.txt'].map((f) => [f, join(dir, f)]));

  const texts = pages.map((page) => ({ page, text: readFileSync(new URL(page, ROOT), 'utf8') }));
  const commands = texts.flatMap(({ page, text }) => [
    ...pipelabCommands(text).map((args) => ({ page, args, where: 'block' })),
    ...inlinePipelabCommands(text).commands.map((args) => ({ page, args, where: 'inline' })),
  ]);

  it('reads commands out of the pages (the reader is not blind)', () => {
    expect(pipelabCommands('```sh\nnpx pipelab plan --a 1 \\\n  --b 2 [--c]   # note\ncd x && pipelab --help\n```')).toEqual([
      ['plan', '--a', '1', '--b', '2'],
      ['plan', '--a', '1', '--b', '2', '--c'],
      ['--help'],
    ]);
    expect(inlinePipelabCommands('run `npx pipelab plan --a 1`, not `pipelab`, `pipelab plan`, `pipelab plan --tp T`, `pipelab x ...` or\n`pipelab a|b`; ```sh\npipelab --b\n```')).toEqual({
      commands: [['plan', '--a', '1']],
      forms: ['pipelab plan', 'pipelab plan --tp T', 'pipelab x ...', 'pipelab a|b'],
    });
    expect(commands.filter((c) => c.where === 'block').length).toBeGreaterThanOrEqual(10);
    expect(commands.filter((c) => c.where === 'block' && c.args.includes('--no-overlap')).length).toBe(1);
    expect(commands.filter((c) => c.where === 'inline').length).toBeGreaterThanOrEqual(3);
    expect(new Set(commands.map((c) => c.args[0]))).toEqual(new Set(['schedule', 'simulate', 'validate', 'export-torch', 'plan', '--help']));
  });

  it('leaves unrun only the inline forms with placeholders and bare command names', () => {
    // What docs/README.md says is not run; a new inline command is either run above or added here on purpose.
    const forms = texts.flatMap(({ page, text }) => inlinePipelabCommands(text).forms.map((f) => `${page}: ${f}`));
    expect(forms).toEqual([
      'README.md: pipelab schedule',
      'docs/README.md: pipelab schedule | simulate | validate | plan | export-torch',
      'docs/cli.md: pipelab plan',
      'docs/page.md: pipelab simulate',
      'docs/planner.md: pipelab plan --model gpt ...',
      'docs/pytorch.md: npx pipelab export-torch [flags] --out DIR',
      'docs/pytorch.md: pipelab plan --tp T',
      'docs/pytorch.md: pipelab plan',
      'docs/pytorch.md: npx pipelab plan --profile profile.json --ranks P --microbatches M --mem-cap C',
    ]);
  });

  it.each(commands.map((c) => [c.page, c.where, c.args.join(' '), c.args] as const))('%s (%s): pipelab %s', (_page, _where, _text, args) => {
    const placed = args.map((a, i) => (files[a] ? files[a] : args[i - 1] === '--out' ? join(dir, `out-${a}`) : a));
    const r = run(...placed);
    expect(r.code, r.err).toBe(0);
    expect(r.out.length + r.files.size).toBeGreaterThan(0);
  });

  it("docs/pytorch.md's first torchrun line runs as written (after its export), under Debian's torchrun", async () => {
    const page = readFileSync(new URL('docs/pytorch.md', ROOT), 'utf8');
    const lines = shellLines(page);
    const line = lines.find((l) => /torchrun\s/.test(l));
    expect(line).toBeDefined();
    const cd = /^cd (\S+) && torchrun /.exec(line as string);
    expect(cd, line).not.toBeNull();
    const folder = (cd as RegExpExecArray)[1];
    // Its bundle: the page's own export-torch line that writes that folder.
    const exportLine = lines.find((l) => new RegExp(`pipelab export-torch .*--out ${folder}(\\s|$)`).test(l));
    expect(exportLine, `an export-torch line with --out ${folder}`).toBeDefined();
    const args = words((exportLine as string).replace(/\s#.*$/, '').replace(/^.*?pipelab\s+/, ''));
    const work = mkdtempSync(join(tmpdir(), 'pipelab-docs-torchrun-'));
    const exported = run(...args.map((a, i) => (args[i - 1] === '--out' ? join(work, a) : a)));
    expect(exported.code, exported.err).toBe(0);
    // The CLI prints the same torchrun line the page shows.
    expect(exported.out).toContain(`&& ${(line as string).replace(/\s#.*$/, '').replace(/^cd \S+ && /, '').trim()}   (see README.md there)`);
    writeFiles(exported.files);
    // The line itself, through sh; only the rendezvous port is moved off torchrun's default 29500 (PET_MASTER_PORT,
    // torchrun's own variable for --master_port), so two test runs on one machine do not meet.
    const r = await sh(line as string, work, { PET_MASTER_PORT: String(await freePort()) }, 110_000);
    expect(r.code, r.output.slice(-3000)).toBe(0);
    const steps = Number(/--steps (\d+)/.exec(exportLine as string)?.[1]);
    const losses = [...r.output.matchAll(/step (\d+) loss (\S+) ms/g)].map((m) => Number(m[2]));
    expect(losses.length).toBe(steps);
    for (const l of losses) expect(Number.isFinite(l)).toBe(true);
    expect(losses[steps - 1]).toBeLessThan(losses[0]);
    expect(r.output).toContain('heldout loss');
  }, 120_000);
});
