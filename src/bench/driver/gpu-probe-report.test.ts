/**
 * The probe's verdict and its words (gpu-probe-report.ts) on hand-made probes
 * of a hardware and a software adapter, and the Chromium launch flags each
 * GPU recipe and SwiftShader get (e2e/chromium.ts).
 */
import { afterEach, describe, expect, test } from 'vitest';
import type { AdapterProbe, AdapterProbeResult } from '../../gpu/adapter-probe.ts';
import { browserGpu, chromiumArgs, chromiumLaunchOptions, GPU_RECIPE_NAMES, requireGpuRecipe } from '../../../e2e/chromium.ts';
import { describeProbe, FALLBACK_LINE, isHardware, probeMarkdown } from './gpu-probe-report.ts';

function probe(where: string, vendor: string, architecture: string, isFallbackAdapter: boolean, software: boolean): AdapterProbe {
  return {
    ok: true,
    where,
    adapter: { vendor, architecture, device: '', description: '', isFallbackAdapter },
    software,
    features: ['subgroups', 'timestamp-query'],
    subgroupMinSize: 32,
    subgroupMaxSize: 32,
    limits: { maxComputeWorkgroupStorageSize: 32768, maxComputeInvocationsPerWorkgroup: 1024, maxStorageBufferBindingSize: 2 ** 31, maxBufferSize: 2 ** 32 },
    crossing: { bytes: 65536, repeats: 9, syncMs: 0.25, uploadMs: 0.5, readbackMs: 0.75, roundTrip: true },
    timestamps: { spans: 18, zeroSpans: 0, minSpanNs: 3000, quantumNs: 1000 },
  };
}
const hw = (where: string) => probe(where, 'nvidia', 'hopper', false, false);
const sw = (where: string) => probe(where, 'google', 'swiftshader', true, true);
const failed = (where: string): AdapterProbeResult => ({ ok: false, where, error: 'navigator.gpu offered no adapter' });

describe('the verdict', () => {
  test('hardware only when both the page and the worker are on hardware', () => {
    expect(isHardware({ page: hw('page'), worker: hw('worker') })).toBe(true);
    expect(isHardware({ page: hw('page'), worker: sw('worker') })).toBe(false);
    expect(isHardware({ page: sw('page'), worker: hw('worker') })).toBe(false);
    expect(isHardware({ page: hw('page'), worker: failed('worker') })).toBe(false);
  });

  test('the log names each side, its adapter and costs, then the verdict', () => {
    const lines = describeProbe({ page: hw('page'), worker: failed('worker') });
    expect(lines[0]).toBe('page: hardware adapter vendor=nvidia architecture=hopper description="" isFallbackAdapter=false');
    expect(lines).toContain('page: per action sync 0.250 ms; upload 0.500 ms and readback 0.750 ms per 65536 B crossing');
    expect(lines).toContain('page: timestamp queries: 0/18 spans read 0, shortest 3000 ns, quantum 1000 ns');
    expect(lines).toContain('worker: no WebGPU device (navigator.gpu offered no adapter)');
    expect(lines.at(-1)).toBe('software WebGPU adapter (or none) in the page or the worker');
    expect(describeProbe({ page: hw('page'), worker: hw('worker') }).at(-1)).toBe('hardware WebGPU adapter in the page and in a dedicated worker');
    expect(FALLBACK_LINE).toBe('no hardware WebGPU adapter: falling back to SwiftShader');
  });

  test("RESULTS.md's lines: the kind, the fallback flags and page / worker costs side by side", () => {
    const w = sw('worker');
    w.crossing = { ...w.crossing, syncMs: 2.5 };
    const md = probeMarkdown({ page: sw('page'), worker: w });
    expect(md[0]).toBe('- Adapter probe (page / dedicated worker): software, isFallbackAdapter true / true; subgroups 32..32');
    expect(md[1]).toBe('- Crossing costs (page / worker, medians of 9): per-action sync 0.25 / 2.50 ms; upload 0.50 / 0.50 ms and readback 0.75 / 0.75 ms per 65536 B; timestamp-query quantum 1000 ns / 1000 ns');
    expect(probeMarkdown({ page: hw('page'), worker: sw('worker') })[0]).toContain("software, isFallbackAdapter false / true; the worker got google / swiftshader");
    expect(probeMarkdown({ page: failed('page'), worker: hw('worker') })).toEqual(['- Adapter probe: page failed (navigator.gpu offered no adapter); worker ok']);
  });
});

describe('Chromium flags per adapter', () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const k of ['PIPELAB_REAL_GPU', 'PIPELAB_GPU_RECIPE', 'PIPELAB_CHROMIUM_ARGS', 'DISPLAY']) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });

  test('SwiftShader unless PIPELAB_REAL_GPU=1; then the recipe named, vulkan by default; a wrong name is refused with the names', () => {
    delete process.env.PIPELAB_REAL_GPU;
    process.env.PIPELAB_GPU_RECIPE = 'egl';
    expect(browserGpu()).toBe('swiftshader');
    process.env.PIPELAB_REAL_GPU = '1';
    expect(browserGpu()).toBe('egl');
    delete process.env.PIPELAB_GPU_RECIPE;
    expect(browserGpu()).toBe('vulkan');
    process.env.PIPELAB_GPU_RECIPE = 'cuda';
    expect(() => browserGpu()).toThrow(`PIPELAB_GPU_RECIPE = "cuda": must be one of ${GPU_RECIPE_NAMES.join(', ')}`);
    expect(() => requireGpuRecipe('--recipes', 'swiftshader')).toThrow('--recipes = "swiftshader"');
  });

  test('SwiftShader pins the adapter; GPU recipes put ANGLE on the GPU and never name SwiftShader; extra flags come last', () => {
    expect(chromiumArgs('swiftshader')).toContain('--use-webgpu-adapter=swiftshader');
    for (const r of GPU_RECIPE_NAMES) expect(chromiumArgs(r).join(' ')).not.toContain('swiftshader');
    expect(chromiumArgs('vulkan')).toEqual(expect.arrayContaining(['--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-angle=vulkan', '--ignore-gpu-blocklist']));
    expect(chromiumArgs('egl')).toContain('--use-angle=gl-egl');
    process.env.PIPELAB_CHROMIUM_ARGS = ' --enable-dawn-features=allow_unsafe_apis  --foo ';
    expect(chromiumArgs('vulkan').slice(-2)).toEqual(['--enable-dawn-features=allow_unsafe_apis', '--foo']);
  });

  test('the headed recipe needs a display and says so', () => {
    delete process.env.DISPLAY;
    expect(() => chromiumLaunchOptions('x11')).toThrow('needs an X display and DISPLAY is unset');
    expect(chromiumLaunchOptions('vulkan').headless).toBe(true);
    process.env.DISPLAY = ':97';
    expect(chromiumLaunchOptions('x11').headless).toBe(false);
  });
});
