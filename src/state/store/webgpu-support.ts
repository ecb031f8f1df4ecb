/**
 * Whether this browser can train: WebGPU needs a secure context, the API
 * (navigator.gpu) and an adapter. The page still simulates without it.
 */
import { classifyAdapter, type AdapterKind } from '../../gpu/adapter-kind.ts';
import { requestAdapterRetrying } from '../../gpu/request-adapter.ts';

export type WebGpuSupport =
  | { state: 'checking' }
  /** `kind`: a hardware GPU or software rendering (src/gpu/adapter-kind.ts), which sizes the page's default GPT. */
  | { state: 'available'; adapter: string; kind?: AdapterKind }
  | { state: 'unavailable'; reason: 'insecure-context' | 'no-api' | 'no-adapter' | 'error'; detail: string };

export async function detectWebGpu(): Promise<WebGpuSupport> {
  if (typeof window !== 'undefined' && !window.isSecureContext) {
    return { state: 'unavailable', reason: 'insecure-context', detail: 'WebGPU needs a secure context: open PipeLab over https or from localhost / 127.0.0.1.' };
  }
  const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
  if (!gpu) return { state: 'unavailable', reason: 'no-api', detail: 'This browser has no navigator.gpu.' };
  try {
    const { adapter, attempts } = await requestAdapterRetrying(gpu);
    if (!adapter) return { state: 'unavailable', reason: 'no-adapter', detail: `navigator.gpu is there, but no GPU adapter was granted (asked ${attempts} times).` };
    const info = adapter.info;
    const name = [info?.vendor, info?.architecture, info?.device].filter((s) => s && s.length > 0).join(' ');
    const fallback = (adapter as GPUAdapter & { isFallbackAdapter?: boolean }).isFallbackAdapter === true;
    return { state: 'available', adapter: name || 'WebGPU adapter', kind: classifyAdapter(info, fallback) };
  } catch (e) {
    return { state: 'unavailable', reason: 'error', detail: `requestAdapter failed: ${e instanceof Error ? e.message : String(e)}` };
  }
}

/** `?webgpu=off` pretends WebGPU is missing (to see and test the page without it). */
export function webGpuForcedOff(search: string): boolean {
  return new URLSearchParams(search).get('webgpu') === 'off';
}
