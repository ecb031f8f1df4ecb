/**
 * Which WebGPU adapter headless Chromium gets on this machine: tries each GPU
 * recipe of e2e/chromium.ts in turn (or those named), probes the adapter in
 * the bench page and in a dedicated worker (src/gpu/adapter-probe.ts) and
 * keeps the first that is hardware in both. When none is, it prints
 * FALLBACK_LINE and probes SwiftShader instead. The last line names the
 * choice, `recipe=NAME` (a GPU recipe or `swiftshader`), for
 * scripts/gpu-browser-bench.sh.
 *
 *   node --import tsx src/bench/driver/browser-probe.ts [--recipes vulkan,egl,x11,default] [--json FILE]
 *
 * Serves the dist/ already built (PIPELAB_DIST names another folder).
 * Exit status 1 when not even SwiftShader gives a device.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GPU_RECIPE_NAMES, GPU_RECIPES, requireGpuRecipe, type BrowserGpu, type GpuRecipeName } from '../../../e2e/chromium.ts';
import { openBenchPage, serveDist } from './bench-browser.ts';
import { describeProbe, FALLBACK_LINE, isHardware, type PageAndWorkerProbe } from './gpu-probe-report.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/** Longest one attempt may take (a GPU process that crash-loops must not hang the script). */
const ATTEMPT_MS = 120_000;

interface Attempt {
  gpu: BrowserGpu;
  browser?: string;
  probe?: PageAndWorkerProbe;
  error?: string;
}

function parseArgs(argv: string[]): { recipes: GpuRecipeName[]; json: string | null } {
  let recipes: GpuRecipeName[] = process.env.DISPLAY ? GPU_RECIPE_NAMES : GPU_RECIPE_NAMES.filter((r) => GPU_RECIPES[r].headless);
  let json: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--recipes') recipes = (argv[++i] ?? '').split(',').filter(Boolean).map((r) => requireGpuRecipe('--recipes', r));
    else if (a === '--json') json = resolve(argv[++i] ?? '');
    else throw new Error(`unknown option ${JSON.stringify(a)}; usage: browser-probe.ts [--recipes ${GPU_RECIPE_NAMES.join(',')}] [--json FILE]`);
  }
  return { recipes, json };
}

async function attempt(url: string, gpu: BrowserGpu): Promise<Attempt> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let close: (() => Promise<void>) | undefined;
  const run = (async (): Promise<Attempt> => {
    const bench = await openBenchPage(url, gpu, `probe ${gpu}`);
    close = bench.close;
    const probe = await bench.page.evaluate(() => window.pipelabBench.adapterProbe({ repeats: 9 }));
    return { gpu, browser: bench.browser.version(), probe };
  })();
  const limit = new Promise<Attempt>((res) => {
    timer = setTimeout(() => res({ gpu, error: `no answer in ${ATTEMPT_MS / 1000} s` }), ATTEMPT_MS);
  });
  try {
    return await Promise.race([run, limit]);
  } catch (e) {
    return { gpu, error: e instanceof Error ? e.message.split('\n')[0] : String(e) };
  } finally {
    clearTimeout(timer);
    await close?.().catch(() => undefined);
  }
}

function report(a: Attempt): void {
  const about = a.gpu === 'swiftshader' ? 'software WebGPU' : GPU_RECIPES[a.gpu].about;
  console.log(`gpu-probe: [${a.gpu}] ${about}${a.browser ? ` (${a.browser})` : ''}`);
  if (a.error) console.log(`gpu-probe: [${a.gpu}] failed: ${a.error}`);
  if (a.probe) for (const line of describeProbe(a.probe)) console.log(`gpu-probe: [${a.gpu}] ${line}`);
}

async function main(): Promise<number> {
  const { recipes, json } = parseArgs(process.argv.slice(2));
  const dist = resolve(root, process.env.PIPELAB_DIST ?? 'dist');
  if (!existsSync(join(dist, 'bench.html'))) throw new Error(`${dist}/bench.html not found: build the app first (npx vite build --outDir ${dist})`);
  const served = await serveDist(root, dist);
  const attempts: Attempt[] = [];
  let chosen: Attempt | undefined;
  try {
    for (const gpu of recipes) {
      const a = await attempt(served.url, gpu);
      attempts.push(a);
      report(a);
      if (a.probe && isHardware(a.probe)) {
        chosen = a;
        break;
      }
    }
    if (!chosen) {
      console.log(`gpu-probe: ${FALLBACK_LINE}`);
      const a = await attempt(served.url, 'swiftshader');
      attempts.push(a);
      report(a);
      if (a.probe?.page.ok && a.probe.worker.ok) chosen = a;
    }
  } finally {
    await served.close();
  }
  if (json) writeFileSync(json, `${JSON.stringify({ date: new Date().toISOString(), chosen: chosen?.gpu ?? null, attempts }, null, 2)}\n`);
  if (!chosen) {
    console.log('gpu-probe: no WebGPU device at all, not even SwiftShader');
    return 1;
  }
  console.log(`recipe=${chosen.gpu}`);
  return 0;
}

main().then((code) => process.exit(code), (e: unknown) => {
  console.error(`gpu-probe: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
