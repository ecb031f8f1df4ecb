/** Loss and accuracy of a model over a whole set of examples, in chunks. */
import { IGNORE_LABEL, sliceRows, targetCount } from '../data/examples.ts';
import type { Examples } from '../data/examples.ts';
import type { Backend } from './backend.ts';
import type { StageChain } from './stage-chain.ts';

export interface Evaluation {
  /** Mean cross-entropy, nats per target (per example for the MLPs, per non-padded position for the GPT). */
  loss: number;
  /** Fraction of targets whose largest logit is the label. */
  accuracy: number;
  /** Targets counted. */
  n: number;
}

export async function evaluate(be: Backend, model: StageChain, ex: Examples, chunk = 4096): Promise<Evaluation> {
  let lossSum = 0;
  let correct = 0;
  const targets = targetCount(ex);
  for (let start = 0; start < ex.n; start += chunk) {
    const part = sliceRows(ex, start, Math.min(ex.n, start + chunk));
    const input = model.inputTensor(part);
    const logits = await model.logits(input);
    be.dispose(input);
    const labels = be.tensor(part.labels, [part.labels.length], 'i32');
    const { loss, dlogits } = be.softmaxCrossEntropy(logits, labels, 1);
    be.dispose(dlogits);
    be.dispose(labels);
    const [L, lossValue] = await Promise.all([be.read(logits), be.read(loss)]);
    lossSum += lossValue[0];
    be.dispose(logits);
    be.dispose(loss);
    const c = logits.shape[1];
    for (let r = 0; r < part.labels.length; r++) {
      if (part.labels[r] === IGNORE_LABEL) continue;
      let arg = 0;
      for (let j = 1; j < c; j++) if (L[r * c + j] > L[r * c + arg]) arg = j;
      if (arg === part.labels[r]) correct++;
    }
  }
  return { loss: lossSum / targets, accuracy: correct / targets, n: targets };
}
