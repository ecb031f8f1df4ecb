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
import { join, resolve } from 'node:path';
import { GPU_RECIPE_NAMES, GPU_RECIPES, requireGpuRecipe, type BrowserGpu, type GpuRecipeName } from '../../../e2e/chromium.ts';
import { benchRoot, chromeGpuText, openBenchPage } from './bench-browser.ts';
import { serveDist } from './static-server.ts';
import { describeProbe, FALLBACK_LINE, isHardware, type PageAndWorkerProbe } from './gpu-probe-report.ts';

const root = benchRoot();
/** Longest one attempt may take (a GPU process that crash-loops must not hang the script). */
const ATTEMPT_MS = 120_000;

interface Attempt {
  gpu: BrowserGpu;
  browser?: string;
  probe?: PageAndWorkerProbe;
  error?: string;
  /** chrome://gpu's text, for a recipe whose adapter was not hardware (what to read for why). */
  chromeGpu?: string;
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
    const chromeGpu = gpu !== 'swiftshader' && !isHardware(probe) ? await chromeGpuText(bench.browser).catch((e: unknown) => `chrome://gpu could not be read: ${String(e)}`) : undefined;
    return { gpu, browser: bench.browser.version(), probe, chromeGpu };
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
  if (a.chromeGpu) {
    // What chrome://gpu says of WebGPU, Vulkan and ANGLE, and its problems; the whole text is in the JSON.
    const raw = a.chromeGpu.split('\n');
    // "WebGPU:" and its value are two text nodes: one line.
    const joined = raw.flatMap((l, i) => (l.endsWith(':') && i + 1 < raw.length ? [`${l} ${raw[i + 1]}`] : i > 0 && raw[i - 1].endsWith(':') ? [] : [l]));
    const lines = joined.filter((l) => /webgpu|vulkan|angle|gl_renderer|problem|error|fail|disabled|software only/i.test(l));
    for (const line of lines.slice(0, 30)) console.log(`gpu-probe: [${a.gpu}] chrome://gpu: ${line.slice(0, 200)}`);
  }
}

async function main(): Promise<number> {
  const { recipes, json } = parseArgs(process.argv.slice(2));
  const dist = resolve(root, process.env.PIPELAB_DIST ?? 'dist');
  if (!existsSync(join(dist, 'bench.html'))) throw new Error(`${dist}/bench.html not found: build the app first (npx vite build --outDir ${dist})`);
  const served = await serveDist(dist);
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
