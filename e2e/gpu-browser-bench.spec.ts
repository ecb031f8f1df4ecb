/**
 * scripts/gpu-browser-bench.sh's probe on this machine: it tries a GPU recipe
 * (vulkan), probes the adapter in the bench page and in a dedicated worker,
 * and where that is not hardware (CI's machines have no GPU) says it falls
 * back to SwiftShader and shows SwiftShader in both. The bench itself is not
 * run (--probe-only); the build is the one the e2e tests serve. And the
 * drivers bundled for a lent GPU machine run with Node and Playwright alone.
 */
import { test, expect } from './page-errors.ts';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

interface Side {
  ok: boolean;
  where: string;
  software?: boolean;
  adapter?: { vendor: string; architecture: string; isFallbackAdapter: boolean };
  crossing?: { roundTrip: boolean; syncMs: number };
}
interface ProbeJson {
  chosen: string | null;
  attempts: { gpu: string; probe?: { page: Side; worker: Side }; error?: string; chromeGpu?: string }[];
}

test('the GPU probe falls back to SwiftShader, named in the page and in a worker, when no recipe gives hardware', async () => {
  const dist = process.env.PIPELAB_DIST ?? 'dist';
  const env: NodeJS.ProcessEnv = { ...process.env, PIPELAB_DIST: dist, PIPELAB_GPU_RECIPES: 'vulkan' };
  delete env.PIPELAB_REAL_GPU;
  const { stdout } = await promisify(execFile)('bash', ['scripts/gpu-browser-bench.sh', '--probe-only', '--no-build'], { env, timeout: 150_000, maxBuffer: 1 << 22 });
  const json = JSON.parse(readFileSync(join(dist, 'gpu-probe.json'), 'utf8')) as ProbeJson;
  const vulkan = json.attempts[0];
  expect(vulkan.gpu).toBe('vulkan');
  expect(stdout).toContain('gpu-probe: [vulkan] ');
  const hardware = vulkan.probe !== undefined && vulkan.probe.page.ok && vulkan.probe.worker.ok && !vulkan.probe.page.software && !vulkan.probe.worker.software;
  if (hardware) {
    // A machine with a GPU: no fallback, the recipe is kept.
    expect(stdout).not.toContain('falling back to SwiftShader');
    expect(stdout).toContain('gpu-bench: chosen: vulkan');
    return;
  }
  // Why not: chrome://gpu's text is kept in the JSON, and its WebGPU line printed.
  expect(vulkan.chromeGpu).toContain('Graphics Feature Status');
  expect(vulkan.chromeGpu).not.toContain(':host');
  expect(stdout).toMatch(/gpu-probe: \[vulkan\] chrome:\/\/gpu: WebGPU/);
  expect(stdout).toContain('gpu-probe: no hardware WebGPU adapter: falling back to SwiftShader');
  expect(stdout).toContain('gpu-bench: chosen: swiftshader');
  for (const where of ['page', 'worker']) {
    expect(stdout).toMatch(new RegExp(`gpu-probe: \\[swiftshader\\] ${where}: software adapter vendor=google architecture=swiftshader .*isFallbackAdapter=true`));
  }
  expect(json.chosen).toBe('swiftshader');
  const sw = json.attempts.at(-1)!;
  expect(sw.gpu).toBe('swiftshader');
  for (const side of [sw.probe!.page, sw.probe!.worker]) {
    expect(side.ok).toBe(true);
    expect(side.software).toBe(true);
    expect(side.adapter?.architecture).toBe('swiftshader');
    expect(side.crossing?.roundTrip).toBe(true);
  }
});

// What a lent GPU machine runs (scripts/gpu-carry.sh, gpu-device.sh): the drivers bundled into one file each,
// with Playwright beside them and no tsx or vite. Broken here, they would break there, where each try costs
// minutes of device time.
test('the bundled drivers run with Node and Playwright alone: the probe, then a bench suite written as it ends', async () => {
  const dist = process.env.PIPELAB_DIST ?? 'dist';
  const run = promisify(execFile);
  await run('node', ['scripts/bundle-browser-bench.mjs'], { timeout: 60_000 });
  const out = test.info().outputDir;
  mkdirSync(out, { recursive: true });
  const json = join(out, 'probe.json');
  const env: NodeJS.ProcessEnv = { ...process.env, PIPELAB_DIST: dist, PIPELAB_ROOT: process.cwd() };
  delete env.PIPELAB_REAL_GPU;
  const probe = await run('node', ['.bench-browser/browser-probe.mjs', '--recipes', 'vulkan', '--json', json], { env, timeout: 150_000, maxBuffer: 1 << 22 });
  expect(probe.stdout).toMatch(/^recipe=(swiftshader|vulkan)$/m);
  expect((JSON.parse(readFileSync(json, 'utf8')) as ProbeJson).attempts[0].gpu).toBe('vulkan');
  const bench = await run('node', ['.bench-browser/run.mjs', '--no-build', '--quick', '--suite', 'allreduce', '--out', out], { env, timeout: 150_000, maxBuffer: 1 << 22 });
  expect(bench.stdout).toContain('bench: suite allreduce done');
  const results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as { results: { allreduce?: { rows: unknown[] } }; packages: Record<string, string>; failures: Record<string, string> };
  expect(results.results.allreduce?.rows.length).toBeGreaterThan(0);
  expect(results.failures).toEqual({});
  // Versions come from package-lock.json where node_modules does not hold the package.
  expect(results.packages.playwright).toMatch(/^\d+\.\d+\.\d+$/);
  expect(readFileSync(join(out, 'RESULTS.md'), 'utf8')).toContain('## allreduce');
});
