/**
 * WebGPU in Node for tests: Dawn (the npm package `webgpu`) on SwiftShader,
 * the software Vulkan that ships with Debian's chromium package.
 *
 *   import { createTestBackend } from '../gpu/testing/node-gpu.ts';
 *   let gpu: GpuBackend;
 *   beforeAll(async () => { gpu = await createTestBackend(); });
 *   afterAll(() => gpu?.destroy());   // or the test process may not exit
 *
 * Node only (node: imports); nothing under src/ outside testing/ and the Node bench driver may import this.
 */
import { existsSync } from 'node:fs';
import { GpuBackend, type GpuBackendOptions } from '../gpu-backend.ts';
import { WebGpuUnavailableError } from '../device.ts';

/** Where Debian's chromium package puts SwiftShader's Vulkan ICD. */
export const SWIFTSHADER_ICDS = [
  '/usr/lib/chromium/vk_swiftshader_icd.json',
  '/usr/lib/chromium-browser/vk_swiftshader_icd.json',
];

let gpuPromise: Promise<GPU> | null = null;

/** The process-wide Dawn GPU object (created once; sets VK_ICD_FILENAMES to SwiftShader when unset and present, unless PIPELAB_REAL_GPU=1). */
export function nodeGpu(): Promise<GPU> {
  if (!gpuPromise) {
    gpuPromise = (async () => {
      if (!process.env.VK_ICD_FILENAMES && process.env.PIPELAB_REAL_GPU !== '1') {
        const icd = SWIFTSHADER_ICDS.find((p) => existsSync(p));
        if (icd) process.env.VK_ICD_FILENAMES = icd;
      }
      // Imported only after the environment is set: the Vulkan loader reads it.
      const { create, globals } = await import('webgpu');
      Object.assign(globalThis, globals);
      return create([]);
    })();
  }
  return gpuPromise;
}

const HELP =
  'No WebGPU adapter in Node. Dawn (npm package "webgpu") needs a Vulkan driver: on a machine without a GPU ' +
  'install chromium (apt-get install chromium) and run with VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json ' +
  `(now: ${process.env.VK_ICD_FILENAMES ?? 'unset'}). Mesa's lavapipe is refused by Dawn.`;

/** A GpuBackend on Dawn. Destroy it in afterAll. Autotune is off unless asked. */
export async function createTestBackend(opts: Omit<GpuBackendOptions, 'gpu'> = {}): Promise<GpuBackend> {
  const gpu = await nodeGpu();
  try {
    return await GpuBackend.create({ ...opts, gpu });
  } catch (e) {
    if (e instanceof WebGpuUnavailableError) throw new Error(`${HELP} (${e.message.split('. ')[0]})`);
    throw e;
  }
}
