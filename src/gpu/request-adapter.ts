/**
 * navigator.gpu.requestAdapter, asked again when it answers null. Chromium
 * on Linux with a GPU (headless, ANGLE on Vulkan; seen on an NVIDIA H200,
 * bench/GPU.md) answered a page's first request with null while its GPU
 * process was still coming up, and a dedicated worker's request made a moment
 * later with the GPU's adapter. A browser that has no adapter answers null
 * every time, so the wait is short and bounded: the delays below, 1.75 s in all.
 */
export const ADAPTER_RETRY_DELAYS_MS: readonly number[] = [250, 500, 1000];

export interface AdapterRequest {
  adapter: GPUAdapter | null;
  /** How many times requestAdapter was asked (1 when the first answer was an adapter). */
  attempts: number;
}

export async function requestAdapterRetrying(gpu: GPU, options?: GPURequestAdapterOptions, delaysMs: readonly number[] = ADAPTER_RETRY_DELAYS_MS): Promise<AdapterRequest> {
  let adapter = await gpu.requestAdapter(options);
  let attempts = 1;
  for (const ms of delaysMs) {
    if (adapter) break;
    await new Promise((r) => setTimeout(r, ms));
    adapter = await gpu.requestAdapter(options);
    attempts++;
  }
  return { adapter, attempts };
}
