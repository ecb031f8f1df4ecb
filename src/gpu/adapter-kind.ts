/**
 * Is this WebGPU adapter a hardware GPU, or software rendering on the CPU?
 * Decided from what the adapter says of itself (GPUAdapterInfo: vendor,
 * architecture, device, description, isFallbackAdapter): a fallback adapter,
 * or one that names a software renderer (SwiftShader reports vendor "google",
 * architecture "swiftshader"; Mesa's llvmpipe and lavapipe, Microsoft's WARP /
 * Basic Render Driver), is software; one that names nothing is not trusted to
 * be a GPU (some browsers hide the adapter's info); any other is a GPU.
 */

/** The fields of GPUAdapterInfo this reads (all optional: browsers differ). */
export interface AdapterInfoLike {
  vendor?: string;
  architecture?: string;
  device?: string;
  description?: string;
  isFallbackAdapter?: boolean;
}

export interface AdapterKind {
  hardware: boolean;
  /** The adapter as a person reads it, e.g. "nvidia hopper" or "google swiftshader". */
  label: string;
  /** Why, in a clause: "it is SwiftShader, a software renderer on the CPU". */
  why: string;
}

const SOFTWARE: readonly [RegExp, string][] = [
  [/swiftshader/i, 'SwiftShader'],
  [/llvmpipe/i, 'llvmpipe (Mesa)'],
  [/lavapipe/i, 'lavapipe (Mesa)'],
  [/softpipe/i, 'softpipe (Mesa)'],
  [/\bwarp\b|basic render/i, 'WARP (Microsoft Basic Render Driver)'],
  [/software|cpu rasterizer/i, 'a software adapter'],
];

export function classifyAdapter(info: AdapterInfoLike | null | undefined, adapterIsFallback = false): AdapterKind {
  const fields = [info?.vendor, info?.architecture, info?.device, info?.description].map((s) => (typeof s === 'string' ? s.trim() : ''));
  const label = fields.slice(0, 2).filter((s) => s.length > 0).join(' ') || fields.slice(2).find((s) => s.length > 0) || 'an unnamed adapter';
  // A renderer it names is said by name (Chromium's SwiftShader is also flagged as a fallback adapter).
  const text = fields.join(' ');
  for (const [re, name] of SOFTWARE) {
    if (re.test(text)) return { hardware: false, label, why: `it is ${name}, a software renderer on the CPU (${label})` };
  }
  if (info?.isFallbackAdapter === true || adapterIsFallback) {
    return { hardware: false, label, why: `the browser gave a fallback adapter (${label}), which renders in software` };
  }
  if (fields.every((s) => s.length === 0)) {
    return { hardware: false, label, why: 'the adapter does not say what it is, so it is not taken for a GPU' };
  }
  return { hardware: true, label, why: `it is a GPU (${label})` };
}
