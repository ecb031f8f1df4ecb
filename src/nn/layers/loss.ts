/**
 * Softmax cross-entropy, fused with its gradient: one call gives the loss
 * [1] = scale · Σ_rows −log softmax(logits)[label] and dlogits. With scale =
 * 1 / (batch size) the losses and gradients of a step's micro-batches sum to
 * the batch mean, so gradient accumulation is exact.
 */
import type { Backend, Tensor } from '../backend.ts';

export class SoftmaxCrossEntropy {
  constructor(
    private readonly be: Backend,
    readonly name: string,
  ) {}

  forward(logits: Tensor, labels: Tensor, scale: number): { loss: Tensor; dlogits: Tensor } {
    return this.be.softmaxCrossEntropy(logits, labels, scale);
  }
}
