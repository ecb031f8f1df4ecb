/**
 * WebGPU device acquisition: find `navigator.gpu` (page or worker) or use a
 * given GPU object (Dawn in Node), ask for an adapter and a device with the
 * features this project uses, and turn every way that can fail into a message
 * a person can act on.
 */
import { requestAdapterRetrying } from './request-adapter.ts';

/** How to get WebGPU in Chrome, for messages shown when it is missing. */
export const ENABLE_WEBGPU_HELP =
  'WebGPU needs a secure context (a page served over https, or from http://localhost / http://127.0.0.1) ' +
  'in a browser that has it: Chrome or Edge 113+ on Windows, macOS and ChromeOS. ' +
  'On Linux (and wherever the adapter is blocked), enable it with chrome://flags/#enable-unsafe-webgpu ' +
  'or start Chrome with --enable-unsafe-webgpu --enable-features=Vulkan ' +
  '(on machines without a GPU add --use-vulkan=swiftshader --use-webgpu-adapter=swiftshader for the software adapter).';

export class WebGpuUnavailableError extends Error {
  constructor(reason: string) {
    super(`${reason} ${ENABLE_WEBGPU_HELP}`);
    this.name = 'WebGpuUnavailableError';
  }
}

export class DeviceLostError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeviceLostError';
  }
}

export interface AcquireOptions {
  powerPreference?: GPUPowerPreference;
  /** Ask for timestamp-query when the adapter has it (default true). */
  timestamps?: boolean;
  /** Ask for the subgroups feature when the adapter has it (default true). */
  subgroups?: boolean;
  /** Waits before asking requestAdapter again after a null (default ADAPTER_RETRY_DELAYS_MS; [] asks once). */
  adapterRetryDelaysMs?: readonly number[];
}

export interface AdapterSummary {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** The browser's own word that this is a fallback (software) adapter. */
  isFallbackAdapter: boolean;
}

const SOFTWARE_ARCHITECTURES = ['swiftshader', 'llvmpipe', 'lavapipe', 'warp'];

/** True for a software adapter (SwiftShader, llvmpipe, lavapipe, WARP), by its own name or the browser's fallback flag. */
export function isSoftwareAdapter(info: Pick<AdapterSummary, 'architecture' | 'description'> & { isFallbackAdapter?: boolean }): boolean {
  const arch = `${info.architecture} ${info.description}`.toLowerCase();
  return info.isFallbackAdapter === true || SOFTWARE_ARCHITECTURES.some((s) => arch.includes(s));
}

export interface AcquiredDevice {
  adapter: GPUAdapter;
  device: GPUDevice;
  adapterInfo: AdapterSummary;
  /** True when the device was created with the timestamp-query feature. */
  hasTimestamps: boolean;
  /**
   * The subgroup size when the device was created with the subgroups feature
   * and the adapter reports one size (subgroupMinSize = subgroupMaxSize); 0 otherwise.
   * Kernels that lay out a workgroup as one subgroup need it fixed.
   */
  subgroupSize: number;
  /** Resolves, with a readable message, when the device is lost or destroyed. */
  lost: Promise<{ message: string; reason: string }>;
}

function findGpu(): GPU | undefined {
  const nav = (globalThis as { navigator?: { gpu?: GPU } }).navigator;
  return nav?.gpu;
}

function summarize(adapter: GPUAdapter): AdapterSummary {
  const info = (adapter as { info?: GPUAdapterInfo }).info;
  // Older browsers put the flag on the adapter itself.
  const legacy = (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter;
  return {
    vendor: info?.vendor ?? '',
    architecture: info?.architecture ?? '',
    device: info?.device ?? '',
    description: info?.description ?? '',
    isFallbackAdapter: info?.isFallbackAdapter ?? legacy ?? false,
  };
}

/**
 * Gets a WebGPU device. `gpu` defaults to `navigator.gpu` (window or worker).
 * Throws WebGpuUnavailableError with instructions when WebGPU is missing or no
 * adapter is offered.
 */
export async function acquireDevice(gpu?: GPU, opts: AcquireOptions = {}): Promise<AcquiredDevice> {
  const g = gpu ?? findGpu();
  if (!g) {
    const secure = (globalThis as { isSecureContext?: boolean }).isSecureContext;
    const reason =
      secure === false
        ? 'WebGPU is not available: this page is not a secure context (navigator.gpu exists only on https or localhost).'
        : 'WebGPU is not available in this browser (navigator.gpu is missing).';
    throw new WebGpuUnavailableError(reason);
  }
  let adapter: GPUAdapter | null;
  try {
    ({ adapter } = await requestAdapterRetrying(g, { powerPreference: opts.powerPreference }, opts.adapterRetryDelaysMs));
  } catch (e) {
    throw new WebGpuUnavailableError(`WebGPU requestAdapter failed: ${(e as Error).message ?? String(e)}.`);
  }
  if (!adapter) {
    throw new WebGpuUnavailableError(
      'WebGPU is present but offered no adapter (the GPU is blocklisted, or no Vulkan/Metal/D3D12 driver was found).',
    );
  }
  const wantTimestamps = opts.timestamps !== false && adapter.features.has('timestamp-query');
  const wantSubgroups = opts.subgroups !== false && adapter.features.has('subgroups');
  const requiredFeatures: GPUFeatureName[] = [...(wantTimestamps ? ['timestamp-query' as const] : []), ...(wantSubgroups ? ['subgroups' as const] : [])];
  // Big tensors: ask for the adapter's own buffer limits rather than the defaults.
  const requiredLimits: Record<string, number> = {
    maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
    maxBufferSize: adapter.limits.maxBufferSize,
    maxStorageBuffersPerShaderStage: Math.min(adapter.limits.maxStorageBuffersPerShaderStage, 10),
    maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize,
    maxComputeInvocationsPerWorkgroup: adapter.limits.maxComputeInvocationsPerWorkgroup,
  };
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({ requiredFeatures, requiredLimits });
  } catch (e) {
    throw new WebGpuUnavailableError(`WebGPU requestDevice failed: ${(e as Error).message ?? String(e)}.`);
  }
  const lost = device.lost.then((info) => {
    const reason = String(info.reason ?? 'unknown');
    const message =
      reason === 'destroyed'
        ? 'the WebGPU device was lost (destroyed)'
        : `the WebGPU device was lost (${reason}): ${info.message || 'no message'}. Reload the page (or restart the run) to get a new device.`;
    return { message, reason };
  });
  return { adapter, device, adapterInfo: summarize(adapter), hasTimestamps: wantTimestamps, subgroupSize: wantSubgroups ? fixedSubgroupSize(adapter) : 0, lost };
}

/** The adapter's subgroup size when it has one size only (min = max), else 0. */
function fixedSubgroupSize(adapter: GPUAdapter): number {
  const info = (adapter as { info?: GPUAdapterInfo }).info;
  const lo = info?.subgroupMinSize ?? 0;
  const hi = info?.subgroupMaxSize ?? 0;
  return lo > 0 && lo === hi ? lo : 0;
}
