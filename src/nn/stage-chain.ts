/**
 * A model's stages run in sequence on one device: the single-device training
 * loop, evaluation and sampling use it, and it is the reference the pipeline
 * runtime is compared with (one stage, or the same model cut into N).
 */
import type { Examples } from '../data/examples.ts';
import type { Backend, Tensor } from './backend.ts';
import { blockCosts } from './model-spec.ts';
import type { CostMeasure, ModelSpec } from './model-spec.ts';
import { partitionBlocks } from './partition.ts';
import type { BlockRange } from './partition.ts';
import { Stage } from './stage.ts';
import type { ParamValues, StageOptions } from './stage.ts';
import type { Param } from './param.ts';
import type { StageRouteLoad } from './layers/layer.ts';

export class StageChain {
  readonly stages: readonly Stage[];
  readonly ranges: readonly BlockRange[];

  constructor(
    private readonly be: Backend,
    readonly spec: ModelSpec,
    stages: number,
    seed: number,
    opts: StageOptions & { cost?: CostMeasure; ranges?: readonly BlockRange[] } = {},
  ) {
    // Given ranges (a run's own cut) must hold `stages` stages; otherwise cut by `cost`.
    this.ranges = opts.ranges && opts.ranges.length === stages ? opts.ranges : partitionBlocks(spec.blocks.length, blockCosts(spec, opts.cost), stages);
    this.stages = this.ranges.map((r, i) => new Stage(be, spec, i, [r[0], r[1]], seed, opts));
  }

  get params(): Param[] {
    return this.stages.flatMap((s) => s.params);
  }

  zeroGrads(): void {
    for (const s of this.stages) s.zeroGrads();
  }

  /** into += every stage's aux loss since the last call (Stage.takeAuxLoss). */
  takeAuxLoss(into: Tensor): void {
    for (const s of this.stages) s.takeAuxLoss(into);
  }

  /** Every stage's MoE routing counts since the last call (Stage.takeRouteLoads); the caller disposes them. */
  takeRouteLoads(): StageRouteLoad[] {
    return this.stages.flatMap((s) => s.takeRouteLoads());
  }

  inputTensor(ex: Examples): Tensor {
    return this.be.tensor(ex.inputs, [ex.n, ex.inputCols], ex.inputDType);
  }

  /**
   * Forward and backward of one micro-batch through every stage (forward in
   * order, then backward in reverse), accumulating into the param grads.
   * Returns the micro-batch's loss tensor [1] (lossScale · Σ per-row losses).
   */
  async forwardBackward(mb: number, ex: Examples, lossScale: number): Promise<Tensor> {
    let x = this.inputTensor(ex);
    const labels = this.be.tensor(ex.labels, [ex.labels.length], 'i32');
    for (const s of this.stages) x = await s.forward(mb, x, s.isLast ? labels : undefined, lossScale);
    this.be.dispose(labels);
    let d: Tensor | null = null;
    for (let i = this.stages.length - 1; i >= 0; i--) d = await this.stages[i].backward(mb, d);
    if (d) this.be.dispose(d);
    return x;
  }

  /** Logits [n, classes] for the given inputs (no stash, no loss). Does not take `input`. */
  async logits(input: Tensor): Promise<Tensor> {
    let x = input;
    for (const s of this.stages) {
      const y = await s.infer(x);
      if (x !== input) this.be.dispose(x);
      x = y;
    }
    return x;
  }

  async readParams(): Promise<ParamValues> {
    const out: ParamValues = {};
    for (const s of this.stages) Object.assign(out, await s.readParams());
    return out;
  }

  async readGrads(): Promise<ParamValues> {
    const out: ParamValues = {};
    for (const s of this.stages) Object.assign(out, await s.readGrads());
    return out;
  }

  loadParams(values: Readonly<Record<string, ArrayLike<number>>>): void {
    for (const s of this.stages) s.loadParams(values);
  }

  dispose(): void {
    for (const s of this.stages) s.dispose();
  }
}
