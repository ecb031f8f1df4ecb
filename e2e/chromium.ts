/**
 * How PipeLab finds and starts Chromium for tests and benchmarks: the system
 * Chromium by default, or the executable named by PIPELAB_CHROMIUM (e.g. your
 * own Chrome). WebGPU needs --enable-unsafe-webgpu on Linux.
 *
 * Which WebGPU adapter the browser gets:
 * - by default SwiftShader (software), which works on machines without a GPU;
 * - PIPELAB_REAL_GPU=1: the machine's GPU, reached by one of GPU_RECIPES,
 *   named by PIPELAB_GPU_RECIPE (default 'vulkan'). scripts/gpu-browser-bench.sh
 *   tries them in turn and keeps the first that gives a hardware adapter.
 * PIPELAB_CHROMIUM_ARGS adds flags of your own (separated by spaces).
 */
import { existsSync } from 'node:fs';

export function chromiumExecutable(): string {
  const fromEnv = process.env.PIPELAB_CHROMIUM;
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`PIPELAB_CHROMIUM = ${JSON.stringify(fromEnv)}: no such file; it must name a Chromium or Chrome executable`);
    return fromEnv;
  }
  for (const p of ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome']) {
    if (existsSync(p)) return p;
  }
  throw new Error('No Chromium found: install it (Debian: apt-get install -y chromium) or set PIPELAB_CHROMIUM to a Chrome/Chromium executable');
}

export interface GpuRecipe {
  /** Headless (true) or a headed browser on the X display in DISPLAY (Xvfb will do). */
  headless: boolean;
  /** What it does, in words. */
  about: string;
  args: readonly string[];
}

/**
 * Ways to reach a GPU from Chromium on Linux. Chrome keeps WebGPU
 * software-only while its GL (ANGLE) runs on SwiftShader, so each one puts
 * ANGLE on the GPU too.
 */
export const GPU_RECIPES = {
  vulkan: {
    headless: true,
    about: "headless; ANGLE and WebGPU on the driver's Vulkan, no window surfaces (Chrome's own recipe for NVIDIA GPUs in the cloud)",
    args: ['--enable-features=Vulkan', '--use-angle=vulkan', '--disable-vulkan-surface', '--ignore-gpu-blocklist'],
  },
  egl: {
    headless: true,
    about: "headless; ANGLE on the driver's EGL (surfaceless), WebGPU on its Vulkan",
    args: ['--enable-features=Vulkan', '--use-gl=angle', '--use-angle=gl-egl', '--ignore-gpu-blocklist'],
  },
  'vulkan-native': {
    headless: true,
    about: "headless; the vulkan recipe with ANGLE's Vulkan asked for by feature too, Vulkan on the driver (not SwiftShader), no fallback to GL",
    args: [
      '--enable-features=Vulkan,VulkanFromANGLE,DefaultANGLEVulkan',
      '--use-angle=vulkan',
      '--use-vulkan=native',
      '--disable-vulkan-surface',
      '--disable-vulkan-fallback-to-gl-for-testing',
      '--ignore-gpu-blocklist',
    ],
  },
  x11: {
    headless: false,
    about: 'a headed browser on the X display in DISPLAY (e.g. Xvfb); ANGLE and WebGPU on Vulkan',
    args: ['--ozone-platform=x11', '--enable-features=Vulkan', '--use-angle=vulkan', '--ignore-gpu-blocklist'],
  },
  default: {
    headless: true,
    about: "headless with Chrome's own choices (what PIPELAB_REAL_GPU=1 alone meant before the recipes)",
    args: [],
  },
} as const satisfies Record<string, GpuRecipe>;

export type GpuRecipeName = keyof typeof GPU_RECIPES;
/** A GPU recipe, or the software adapter. */
export type BrowserGpu = GpuRecipeName | 'swiftshader';

export const GPU_RECIPE_NAMES = Object.keys(GPU_RECIPES) as GpuRecipeName[];

const SWIFTSHADER_ARGS = ['--enable-features=Vulkan', '--use-vulkan=swiftshader', '--use-webgpu-adapter=swiftshader', '--disable-vulkan-surface'];

/** A recipe name, checked; an Error naming `what`, the value and the names otherwise. */
export function requireGpuRecipe(what: string, name: string): GpuRecipeName {
  if (!(GPU_RECIPE_NAMES as string[]).includes(name)) {
    throw new Error(`${what} = ${JSON.stringify(name)}: must be one of ${GPU_RECIPE_NAMES.join(', ')}`);
  }
  return name as GpuRecipeName;
}

/** What the environment asks for: SwiftShader unless PIPELAB_REAL_GPU=1, then PIPELAB_GPU_RECIPE (default 'vulkan'). */
export function browserGpu(): BrowserGpu {
  if (process.env.PIPELAB_REAL_GPU !== '1') return 'swiftshader';
  return requireGpuRecipe('PIPELAB_GPU_RECIPE', process.env.PIPELAB_GPU_RECIPE || 'vulkan');
}

export function chromiumArgs(gpu: BrowserGpu = browserGpu()): string[] {
  const args = [
    '--no-sandbox',
    '--enable-unsafe-webgpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--no-first-run',
    '--disable-sync',
    '--disable-quic',
  ];
  args.push(...(gpu === 'swiftshader' ? SWIFTSHADER_ARGS : GPU_RECIPES[gpu].args));
  args.push(...(process.env.PIPELAB_CHROMIUM_ARGS ?? '').split(/\s+/).filter(Boolean));
  return args;
}

export function chromiumLaunchOptions(gpu: BrowserGpu = browserGpu()): { executablePath: string; args: string[]; headless: boolean } {
  const headless = gpu === 'swiftshader' || GPU_RECIPES[gpu].headless;
  if (!headless && !process.env.DISPLAY) {
    throw new Error(`PIPELAB_GPU_RECIPE = ${JSON.stringify(gpu)}: needs an X display and DISPLAY is unset (start Xvfb, as scripts/gpu-browser-bench.sh does)`);
  }
  return { executablePath: chromiumExecutable(), args: chromiumArgs(gpu), headless };
}
