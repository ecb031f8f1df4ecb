/** An elementwise activation (relu, gelu, tanh); saves its input, has no parameters. */
import type { Activation, Backend, Tensor } from '../backend.ts';
import type { Param } from '../param.ts';
import type { Layer, LayerForward } from './layer.ts';

export class ActivationLayer implements Layer {
  readonly params: readonly Param[] = [];

  constructor(
    private readonly be: Backend,
    readonly name: string,
    readonly fn: Activation,
  ) {}

  forward(x: Tensor, save: boolean): LayerForward {
    return { y: this.be.activation(this.fn, x), saved: save ? [x] : [] };
  }

  backwardInput(saved: readonly Tensor[], dy: Tensor): Tensor {
    return this.be.activationBackward(this.fn, saved[0], dy);
  }
}
