/**
 * `npm run bench`: builds the app, serves dist/ on 127.0.0.1, starts headless
 * Chromium (the system one, or PIPELAB_CHROMIUM) and runs the benchmark suites
 * through the bench page's window.pipelabBench. Writes bench/results.json and
 * bench/RESULTS.md and prints the tables.
 *
 *   npm run bench                  every suite, full grid
 *   npm run bench -- --quick       a small grid (a few minutes)
 *   npm run bench -- --suite kernels,schedules    (laid over the results already in --out when they are this
 *                                                 machine's, browser's and grid's: merge-report.ts)
 *   npm run bench -- --no-build    serve the dist/ already there
 *   npm run bench -- --big         for real GPUs: the kernels suite adds 1024³, 2048³ and 4096³
 *                                  (batches of ~100 GFLOP), and the makemore preset is
 *                                  trained in the page
 *
 * The browser's adapter is probed first, in the page and in a dedicated worker
 * (src/gpu/adapter-probe.ts), and the probe goes into results.json.
 * On a real GPU: scripts/gpu-browser-bench.sh (see bench/GPU.md).
 *
 * PIPELAB_DIST names another build folder than dist/ (as for the e2e tests), so
 * a benchmark does not rebuild a dist/ that someone else is serving.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mergeRefusal, mergeReports, type MergeableReport } from './merge-report.ts';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { browserGpu } from '../../../e2e/chromium.ts';
import { benchRoot, openBenchPage, type BenchPage } from './bench-browser.ts';
import { serveDist } from './static-server.ts';
import { describeProbe } from './gpu-probe-report.ts';
import { BIG_ONLY_SUITES, SUITES, type BenchContext, type SuiteName, type SuiteResult } from './suites.ts';
import { renderMarkdown } from './markdown.ts';

const root = benchRoot();

interface Args {
  quick: boolean;
  big: boolean;
  suites: SuiteName[];
  /** The suites were named (--suite): the run is laid over the results already in `out`. */
  named: boolean;
  build: boolean;
  out: string;
}

function usage(): string {
  return `usage: npm run bench -- [--quick] [--big] [--suite ${Object.keys(SUITES).join(',')}] [--no-build] [--out DIR]`;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { quick: false, big: false, suites: [], named: false, build: true, out: join(root, 'bench') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') args.quick = true;
    else if (a === '--big') args.big = true;
    else if (a === '--no-build') args.build = false;
    else if (a === '--suite') {
      const v = argv[++i] ?? '';
      const names = v.split(',').filter(Boolean);
      const bad = names.find((n) => !(n in SUITES));
      if (bad !== undefined || names.length === 0) {
        throw new Error(`--suite = ${JSON.stringify(v)}: must be a comma-separated list of ${Object.keys(SUITES).join(', ')}`);
      }
      args.suites = names as SuiteName[];
      args.named = true;
    } else if (a === '--out') args.out = resolve(argv[++i] ?? '');
    else if (a === '--help' || a === '-h') {
      console.log(usage());
      process.exit(0);
    } else throw new Error(`unknown option ${JSON.stringify(a)}\n${usage()}`);
  }
  if (args.suites.length === 0) args.suites = (Object.keys(SUITES) as SuiteName[]).filter((n) => args.big || !BIG_ONLY_SUITES.includes(n));
  return args;
}

/** A package's version as npm installed it, or as package-lock.json pins it where node_modules does not hold it (a carried bundle). */
function packageVersion(name: string): string {
  try {
    return JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version as string;
  } catch {
    try {
      const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages?: Record<string, { version?: string }> };
      return lock.packages?.[`node_modules/${name}`]?.version ?? 'not installed';
    } catch {
      return 'not installed';
    }
  }
}

/**
 * The app's own page must not carry TensorFlow.js (only bench.html loads it):
 * follows every chunk index.html reaches (static and dynamic imports, workers)
 * and throws if one holds TF.js's engine.
 */
function checkAppHasNoTfjs(dist: string): void {
  const html = readFileSync(join(dist, 'index.html'), 'utf8');
  const ref = /["'`(]\.?\.?\/?(?:assets\/)?([\w.-]+\.js)["'`)]/g;
  const todo = [...html.matchAll(/src="\.\/assets\/([\w.-]+\.js)"/g)].map((m) => m[1]);
  const seen = new Set<string>();
  while (todo.length) {
    const f = todo.pop()!;
    if (seen.has(f)) continue;
    seen.add(f);
    let text: string;
    try {
      text = readFileSync(join(dist, 'assets', f), 'utf8');
    } catch {
      continue;
    }
    if (text.includes('tfjsflags')) throw new Error(`the app's page (index.html) reaches ${f}, which holds TensorFlow.js: only bench.html may load it`);
    for (const m of text.matchAll(ref)) todo.push(m[1]);
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const t0 = Date.now();
  const dist = resolve(root, process.env.PIPELAB_DIST ?? 'dist');
  if (args.build) {
    console.log(`bench: building ${dist} ...`);
    execFileSync('npx', ['vite', 'build', '--logLevel', 'warn', '--outDir', dist, '--emptyOutDir'], { cwd: root, stdio: 'inherit' });
  }
  checkAppHasNoTfjs(dist);
  const served = await serveDist(dist);
  const gpu = browserGpu();
  let bench: BenchPage | null = null;
  try {
    bench = await openBenchPage(served.url, gpu);
    const { browser, page } = bench;
    const adapter = await page.evaluate(() => window.pipelabBench.adapterInfo());
    console.log(`bench: ${browser.version()} on ${adapter.vendor ?? '?'} ${adapter.architecture ?? '?'} ${adapter.description ?? ''}`);
    const probe = await page.evaluate(() => window.pipelabBench.adapterProbe());
    for (const line of describeProbe(probe)) console.log(`bench: ${line}`);
    const ctx: BenchContext = { page, quick: args.quick, big: args.big, log: (s) => console.log(`bench: [${((Date.now() - t0) / 1000).toFixed(0)} s] ${s}`) };
    const results: Partial<Record<SuiteName, SuiteResult>> = {};
    const failures: Record<string, string> = {};
    // Written after every suite, so a run stopped part-way (a lent machine's time limit, a crash) keeps what it measured.
    // What does not change during the run, read once.
    const fixed = {
      quick: args.quick,
      big: args.big,
      machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? 'unknown', memoryGiB: Math.round(os.totalmem() / 2 ** 30), platform: `${os.platform()} ${os.release()}`, node: process.version },
      browser: browser.version(),
      browserGpu: gpu,
      adapter,
      probe,
      packages: Object.fromEntries(['vite', 'playwright', '@tensorflow/tfjs', '@tensorflow/tfjs-backend-webgpu', 'react', 'zustand', 'comlink'].map((p) => [p, packageVersion(p)])),
      pipelab: JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version as string,
    };
    // Some suites named: laid over the results already there when they are this machine's, browser's and grid's.
    const prevPath = join(args.out, 'results.json');
    const prev = args.named && existsSync(prevPath) ? (JSON.parse(readFileSync(prevPath, 'utf8')) as MergeableReport) : null;
    const write = (done: boolean) => {
      const own = {
        date: new Date().toISOString(),
        seconds: Math.round((Date.now() - t0) / 1000),
        ...fixed,
        ...(done ? {} : { pending: args.suites.filter((n) => !(n in results) && !(n in failures)) }),
        failures,
        results,
      };
      const refused = prev ? mergeRefusal(prev, own) : null;
      if (done && prev && refused) console.log(`bench: ${prevPath} is not laid over (${refused}): its suites ${Object.keys(prev.results).join(', ')} are replaced by this run's`);
      const report = prev && !refused ? mergeReports(prev, own) : own;
      mkdirSync(args.out, { recursive: true });
      writeFileSync(join(args.out, 'results.json'), `${JSON.stringify(report, null, 2)}\n`);
      const md = renderMarkdown(report);
      writeFileSync(join(args.out, 'RESULTS.md'), md);
      return { md, seconds: report.seconds };
    };
    for (const name of args.suites) {
      const s0 = Date.now();
      console.log(`bench: suite ${name} ...`);
      try {
        results[name] = await SUITES[name](ctx);
        console.log(`bench: suite ${name} done in ${((Date.now() - s0) / 1000).toFixed(0)} s`);
      } catch (e) {
        failures[name] = e instanceof Error ? e.message.split('\n')[0] : String(e);
        console.error(`bench: suite ${name} failed after ${((Date.now() - s0) / 1000).toFixed(0)} s: ${failures[name]}`);
      }
      if (!browser.isConnected()) {
        // The browser itself went away (it crashed): the suites after this one cannot run; say why once.
        for (const rest of args.suites.slice(args.suites.indexOf(name) + 1)) failures[rest] = `not run: the browser closed during suite ${name}`;
        console.error(`bench: the browser closed during suite ${name}: the remaining suites are not run`);
        write(false);
        break;
      }
      write(false);
    }
    const { md, seconds } = write(true);
    console.log(`\n${md}`);
    console.log(`bench: wrote ${join(args.out, 'results.json')} and RESULTS.md in ${seconds} s`);
    if (Object.keys(failures).length) throw new Error(`${Object.keys(failures).length} suite(s) failed: ${Object.keys(failures).join(', ')}`);
  } finally {
    await bench?.close();
    await served.close();
  }
}

main().catch((e: unknown) => {
  console.error(`bench: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
