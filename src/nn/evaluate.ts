/** Loss and accuracy of a model over a whole set of examples, in chunks. */
import { sliceRows } from '../data/examples.ts';
import type { Examples } from '../data/examples.ts';
import type { Backend } from './backend.ts';
import type { StageChain } from './stage-chain.ts';

export interface Evaluation {
  /** Mean cross-entropy, nats per example. */
  loss: number;
  /** Fraction of examples whose largest logit is the label. */
  accuracy: number;
  n: number;
}

export async function evaluate(be: Backend, model: StageChain, ex: Examples, chunk = 4096): Promise<Evaluation> {
  let lossSum = 0;
  let correct = 0;
  for (let start = 0; start < ex.n; start += chunk) {
    const part = sliceRows(ex, start, Math.min(ex.n, start + chunk));
    const input = model.inputTensor(part);
    const logits = model.logits(input);
    be.dispose(input);
    const labels = be.tensor(part.labels, [part.n], 'i32');
    const { loss, dlogits } = be.softmaxCrossEntropy(logits, labels, 1);
    be.dispose(dlogits);
    be.dispose(labels);
    const L = await be.read(logits);
    lossSum += (await be.read(loss))[0];
    be.dispose(logits);
    be.dispose(loss);
    const c = logits.shape[1];
    for (let r = 0; r < part.n; r++) {
      let arg = 0;
      for (let j = 1; j < c; j++) if (L[r * c + j] > L[r * c + arg]) arg = j;
      if (arg === part.labels[r]) correct++;
    }
  }
  return { loss: lossSum / ex.n, accuracy: correct / ex.n, n: ex.n };
}
