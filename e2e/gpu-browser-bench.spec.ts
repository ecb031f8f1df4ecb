/**
 * scripts/gpu-browser-bench.sh's probe on this machine: it tries a GPU recipe
 * (vulkan), probes the adapter in the bench page and in a dedicated worker,
 * and where that is not hardware (CI's machines have no GPU) says it falls
 * back to SwiftShader and shows SwiftShader in both. The bench itself is not
 * run (--probe-only); the build is the one the e2e tests serve.
 */
import { test, expect } from '@playwright/test';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
