/**
 * Sized for the device you have: on a hardware GPU the page's default GPT is
 * makemore's 4 × 4 × 64 with its recipe (MAKEMORE_RECIPE); on software WebGPU
 * (SwiftShader and the like) or before the adapter is known it stays small
 * (GPT_DEFAULTS), and the page says which it chose and why, in one line.
 */
import type { AdapterKind } from '../../gpu/adapter-kind.ts';
import { GPT_DEFAULTS, MAKEMORE_GPT } from '../../nn/model-config.ts';
import { MAKEMORE_RECIPE, type GptSize } from '../../nn/train-config.ts';
import { usePipeLab } from '../store/index.ts';
import type { WebGpuSupport } from '../store/index.ts';

export function gptSizeFor(kind: AdapterKind | undefined): GptSize {
  return kind?.hardware ? 'makemore' : 'small';
}

/** The page's default GPT size now. */
export function pageGptSize(): GptSize {
  const w = usePipeLab.getState().webgpu;
  return w.state === 'available' ? gptSizeFor(w.kind) : 'small';
}

const size = (g: { layers: number; heads: number; width: number }) => `${g.layers} layers × ${g.heads} heads × ${g.width} wide`;

/** The one line the page shows: which default GPT, and why. */
export function gptSizingLine(w: WebGpuSupport): string {
  if (w.state === 'available' && w.kind?.hardware) {
    const r = MAKEMORE_RECIPE;
    return `Default GPT: makemore's ${size(MAKEMORE_GPT)} with its recipe (AdamW, batch ${r.batchSize}, lr ${r.lr} cosine, weight decay ${r.weightDecay}, ${r.steps.toLocaleString('en-US')} steps), because ${w.kind.why}.`;
  }
  const why =
    w.state === 'available'
      ? w.kind
        ? w.kind.why
        : 'the adapter could not be classified'
      : w.state === 'checking'
        ? 'WebGPU is still being looked for'
        : 'WebGPU is not available here';
  return `Default GPT: the small ${size(GPT_DEFAULTS)}, because ${why}; makemore's ${size(MAKEMORE_GPT)} takes seconds a step without a GPU.`;
}
