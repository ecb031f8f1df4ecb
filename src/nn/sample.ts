/** Plugs a trained next-character model into sampleNames (src/data/sample-names.ts). */
import type { NextCharLogits } from '../data/sample-names.ts';
import type { Backend } from './backend.ts';
import type { StageChain } from './stage-chain.ts';

/** Logits for a batch of contexts, computed by `model` on `be` (inputs and outputs disposed). */
export function nextCharLogits(be: Backend, model: StageChain): NextCharLogits {
  const k = model.spec.input.cols;
  return async (contexts, rows) => {
    const x = be.tensor(contexts, [rows, k], 'i32');
    const logits = model.logits(x);
    be.dispose(x);
    const values = await be.read(logits);
    be.dispose(logits);
    return values;
  };
}
