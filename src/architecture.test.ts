/**
 * The shape of the code, kept by a test: no import circles, no import that runs
 * from a lower layer up, no module over 450 lines. It reads every .ts/.tsx file
 * under src/ (tests included), resolves each relative import (`import type` and
 * `export … from` count: a type import still ties two modules' meaning), and
 * checks the graph. The layers, lowest first, are docs/architecture.md's table.
 *
 * Inside a layer, a folder with an index.ts is a room (src/runtime/policies/, src/state/store/store/, …): its
 * index.ts is its face, and a module outside the room imports the face, never a module behind it. Tests
 * may reach inside, as they may reach up.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = dirname(fileURLToPath(import.meta.url));

/**
 * Lowest first; a module may import its own layer or any below it. Why this
 * order: `schedule` is pure data and knows nothing else; `nn` reads data sets;
 * `gpu` implements nn's Backend; `plan` (profiles, cuts, the auto schedule, the
 * mesh planner) produces schedules from models, as generators do; `config` is
 * the run configuration and its checks; `runtime` runs a configuration on
 * workers (and its profiling pass turns a run into a plan's Profile);
 * `run-state` saves, resumes and recovers runs; `export` writes a run for
 * PyTorch; `state` and `ui` are the page; `automation` (window.pipelab), `cli`
 * and `bench` are front doors over all of it; src/main.tsx sits on top.
 */
export const LAYERS = ['util', 'schedule', 'data', 'nn', 'gpu', 'plan', 'config', 'runtime', 'run-state', 'export', 'state', 'ui', 'automation', 'cli', 'bench', '(root)'] as const;

export const MAX_LINES = 450;

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return walk(p);
    return /\.tsx?$/.test(e.name) ? [p] : [];
  });
}

const IMPORT = /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"](\.{1,2}\/[^'"?]+)(?:\?[^'"]*)?['"]|import\(\s*['"](\.{1,2}\/[^'"?]+)['"]\s*\)/g;

/** Relative imports of a source text, as written. */
export function relativeImports(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT)) out.push(m[1] ?? m[2]);
  return out;
}

export function layerOf(file: string): string {
  const parts = relative(SRC, file).split(/[\\/]/);
  return parts.length > 1 ? parts[0] : '(root)';
}

interface Graph {
  files: string[];
  edges: Map<string, string[]>;
}

function readGraph(): Graph {
  const files = walk(SRC);
  const known = new Set(files);
  const edges = new Map<string, string[]>();
  for (const f of files) {
    const deps: string[] = [];
    for (const spec of relativeImports(readFileSync(f, 'utf8'))) {
      const target = normalize(join(dirname(f), spec));
      const hit = [target, `${target}.ts`, `${target}.tsx`, join(target, 'index.ts')].find((c) => known.has(c));
      if (hit) deps.push(hit);
    }
    edges.set(f, deps);
  }
  return { files, edges };
}

/** Strongly connected components of more than one module (or a module importing itself): the circles. */
export function circles(edges: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1 || (edges.get(v) ?? []).includes(v)) out.push(comp.sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return out;
}

const rel = (f: string): string => relative(SRC, f);

/** The room a file sits in: the folder below its layer that holds an index.ts (a face), or null. */
export function roomOf(file: string, hasFace: (dir: string) => boolean): string | null {
  const parts = relative(SRC, file).split(/[\\/]/);
  for (let depth = parts.length - 1; depth >= 2; depth--) {
    const dir = join(SRC, ...parts.slice(0, depth));
    if (hasFace(dir)) return dir;
  }
  return null;
}

/** Imports of a room's insides from outside it: `from → to (room)`, for modules (tests may reach in). */
export function insideImports(edges: ReadonlyMap<string, readonly string[]>, hasFace: (dir: string) => boolean): string[] {
  const out: string[] = [];
  for (const [f, deps] of edges) {
    if (isTest(f)) continue;
    const mine = roomOf(f, hasFace);
    for (const d of deps) {
      const theirs = roomOf(d, hasFace);
      if (theirs && theirs !== mine && d !== join(theirs, 'index.ts')) out.push(`${rel(f)} → ${rel(d)} (import ${rel(join(theirs, 'index.ts'))}, the room's face)`);
    }
  }
  return out;
}
function isTest(f: string): boolean {
  return /\.test\.tsx?$/.test(f);
}

describe('the shape of the code', () => {
  const g = readGraph();

  it('reads the imports it checks (the reader is not blind)', () => {
    expect(g.files.length).toBeGreaterThan(300);
    const edgeCount = [...g.edges.values()].reduce((s, d) => s + d.length, 0);
    expect(edgeCount).toBeGreaterThan(1000);
    expect(relativeImports("import type { A } from './a.ts';\nexport { b } from '../b.ts';\nimport x from \"./c.wgsl?raw\";\nconst m = await import('./d.ts');")).toEqual(['./a.ts', '../b.ts', './c.wgsl', './d.ts']);
  });

  it('finds circles when there are some (checked on a made-up graph)', () => {
    const made = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a', 'd']],
      ['d', []],
      ['e', ['e']],
    ]);
    expect(circles(made)).toEqual([['a', 'b', 'c'], ['e']]);
  });

  it('has no import circle', () => {
    const found = circles(g.edges).map((c) => c.map(rel).join(' ↔ '));
    expect(found, `import circles:\n${found.join('\n')}`).toEqual([]);
  });

  // Tests sit beside the module they test and may reach up to drive it (a kernel's test runs the whole
  // training loop, a config test runs the coordinator); the modules themselves may not.
  it('has every module in a known layer, and no module importing from a layer above it', () => {
    const rank = new Map<string, number>(LAYERS.map((l, i) => [l, i]));
    const unknown = g.files.filter((f) => !rank.has(layerOf(f))).map(rel);
    expect(unknown, `modules in no layer of LAYERS: ${unknown.join(', ')}`).toEqual([]);
    const upward: string[] = [];
    for (const [f, deps] of g.edges) {
      if (isTest(f)) continue;
      for (const d of deps) if (rank.get(layerOf(d))! > rank.get(layerOf(f))!) upward.push(`${rel(f)} → ${rel(d)} (${layerOf(f)} imports ${layerOf(d)}, a layer above it)`);
    }
    expect(upward, upward.join('\n')).toEqual([]);
  });

  it('has every room entered through its face (checked on made-up rooms, then on src)', () => {
    const faces = new Set([join(SRC, 'runtime', 'comm'), join(SRC, 'runtime', 'policies')]);
    const has = (d: string): boolean => faces.has(d);
    const f = (p: string): string => join(SRC, p);
    const made = new Map([
      [f('runtime/policies/flush.ts'), [f('runtime/comm/index.ts'), f('runtime/policies/policy.ts')]],
      [f('runtime/coordinator.ts'), [f('runtime/policies/flush.ts')]],
      [f('runtime/policies/flush.test.ts'), [f('runtime/comm/mailbox.ts')]],
    ]);
    expect(insideImports(made, has)).toEqual(['runtime/coordinator.ts → runtime/policies/flush.ts (import runtime/policies/index.ts, the room\'s face)']);
    const rooms = new Set(g.files.filter((x) => basename(x) === 'index.ts' && relative(SRC, x).split(/[\\/]/).length >= 3).map(dirname));
    expect(rooms.size, 'rooms found (runtime and state have them)').toBeGreaterThanOrEqual(8);
    const inside = insideImports(g.edges, (d) => rooms.has(d));
    expect(inside, inside.join('\n')).toEqual([]);
  });

  it(`has no module over ${MAX_LINES} lines`, () => {
    const long = g.files
      .map((f) => ({ f: rel(f), lines: readFileSync(f, 'utf8').split('\n').length }))
      .filter((x) => x.lines > MAX_LINES)
      .map((x) => `${x.f}: ${x.lines} lines`);
    expect(long, long.join('\n')).toEqual([]);
  });
});

/** The exported PyTorch program's modules (src/export/torch/*.py): they import each other by bare name. */
const PY = join(SRC, 'export', 'torch');

/** The sibling modules a Python text imports, at the top or inside a function (`from X import …`, `import X`). */
export function pythonImports(text: string, siblings: ReadonlySet<string>): string[] {
  const out = new Set<string>();
  for (const m of text.matchAll(/^[ \t]*from[ \t]+(\w+)[ \t]+import[ \t]/gm)) out.add(m[1]);
  for (const m of text.matchAll(/^[ \t]*import[ \t]+([\w \t,]+?)[ \t]*(?:#.*)?$/gm)) for (const name of m[1].split(',')) out.add(name.trim().split(/[ \t]/)[0]);
  return [...out].filter((n) => siblings.has(n)).sort();
}

describe('the shape of the exported Python program', () => {
  const names = readdirSync(PY).filter((f) => f.endsWith('.py')).map((f) => f.slice(0, -3));
  const siblings = new Set(names);
  const edges = new Map(names.map((n) => [n, pythonImports(readFileSync(join(PY, `${n}.py`), 'utf8'), siblings)]));

  it('reads the imports it checks, inside functions too (the reader is not blind)', () => {
    expect(names.length).toBeGreaterThan(10);
    expect(edges.get('train')).toEqual(expect.arrayContaining(['bundle', 'model', 'pipeline', 'tensor_parallel', 'waits']));
    expect([...edges.values()].reduce((s, d) => s + d.length, 0)).toBeGreaterThan(25);
    const text = 'import os\nimport torch\nfrom model import Stage  # a stage\n"""from words in a docstring\n"""\ndef f():\n    from pipeline import wait\n    import data, copies as c\n';
    expect(pythonImports(text, new Set(['model', 'pipeline', 'data', 'copies', 'words']))).toEqual(['copies', 'data', 'model', 'pipeline']);
  });

  it('has no import circle, counting imports inside functions', () => {
    const found = circles(edges).map((c) => c.join(' ↔ '));
    expect(found, `import circles among src/export/torch/*.py:\n${found.join('\n')}`).toEqual([]);
  });
});
