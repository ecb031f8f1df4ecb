/**
 * SGD (momentum, weight decay) and AdamW over a list of parameters, with the
 * state (velocity; first and second moments) kept next to each parameter on
 * the same backend. Applied per parameter, so a model split into stages and
 * stepped stage by stage gets exactly the update one device would.
 *
 * Weight decay applies to parameters with `decay` (matrices and embedding
 * tables), not to biases or LayerNorm gain/shift.
 *
 * The state reads out and loads back by parameter name, under PyTorch's slot
 * names (OPTIMIZER_SLOTS), with the step count: a model and optimizer loaded
 * from a checkpoint continue exactly as the run that wrote it.
 */
import { ConfigError, requireFinite, requireInt, requireOneOf } from '../util/errors.ts';
import type { Backend, Tensor } from './backend.ts';
import type { Param } from './param.ts';

export type OptimizerName = 'sgd' | 'adamw';
export const OPTIMIZERS: readonly OptimizerName[] = ['sgd', 'adamw'];

export interface OptimizerConfig {
  optimizer: OptimizerName;
  lr: number;
  /** SGD momentum in [0, 1). */
  momentum: number;
  /** Decoupled for AdamW (p *= 1 − lr·wd); added to the gradient for SGD. */
  weightDecay: number;
  /** AdamW β1, β2, ε (defaults 0.9, 0.999, 1e-8). */
  beta1?: number;
  beta2?: number;
  eps?: number;
}

/** AdamW's β1, β2 and ε when a configuration does not set them (PyTorch's defaults too). */
export const ADAMW_DEFAULTS = { beta1: 0.9, beta2: 0.999, eps: 1e-8 } as const;

/**
 * The one rule for a learning rate, used by the configuration check and by
 * every optimizer step: finite, above 0, at least `min` and at most 10. A
 * configured rate must be at least 1e-6; a step's rate (the cosine schedule
 * decays to lr/10) at least 1e-7, so a configuration that passes never
 * fails in a step.
 */
export const LR_LIMITS = { min: 1e-6, stepMin: 1e-7, max: 10 } as const;

export function requireLr(field: string, lr: unknown, min: number = LR_LIMITS.min): number {
  const v = requireFinite(field, lr, { min: 0, exclusiveMin: true });
  if (v < min) throw new ConfigError(field, v, `must be at least ${min} (smaller rates vanish in float32 weight updates)`);
  if (v > LR_LIMITS.max) throw new ConfigError(field, v, `must be at most ${LR_LIMITS.max}`);
  return v;
}

export function validateOptimizerConfig(cfg: OptimizerConfig): void {
  requireOneOf('optimizer', cfg.optimizer, OPTIMIZERS);
  requireLr('lr', cfg.lr);
  requireFinite('momentum', cfg.momentum, { min: 0 });
  if (cfg.momentum >= 1) throw new ConfigError('momentum', cfg.momentum, 'must be less than 1');
  requireFinite('weightDecay', cfg.weightDecay, { min: 0, max: 1 });
  for (const [field, v] of [['beta1', cfg.beta1], ['beta2', cfg.beta2]] as const) {
    if (v === undefined) continue;
    requireFinite(field, v, { min: 0 });
    if (v >= 1) throw new ConfigError(field, v, 'must be less than 1');
  }
  if (cfg.eps !== undefined) requireFinite('eps', cfg.eps, { min: 0, exclusiveMin: true });
}

/** PyTorch's names for each optimizer's per-parameter state (torch.optim.AdamW's moments; SGD's velocity), in slot order. */
export const OPTIMIZER_SLOTS: Readonly<Record<OptimizerName, readonly string[]>> = { adamw: ['exp_avg', 'exp_avg_sq'], sgd: ['momentum_buffer'] };

/** An optimizer's state: per parameter (global name), per slot (OPTIMIZER_SLOTS), the values in the parameter's layout. */
export interface OptimizerState<V extends ArrayLike<number> = Float32Array | Float64Array> {
  name: OptimizerName;
  /** Steps taken (AdamW's bias correction counts them). */
  steps: number;
  slots: Record<string, Record<string, V>>;
}

export interface Optimizer {
  readonly name: OptimizerName;
  /** Steps taken so far. */
  readonly steps: number;
  /** The learning rate of the next step (a schedule may change it between steps). */
  lr: number;
  /** Updates every parameter from its grad · gradScale (1 when the loss scale already averages). */
  step(gradScale?: number): void;
  /** The step count and every slot of every parameter, by name. */
  readState(): Promise<OptimizerState>;
  /**
   * Sets the step count and every slot from `state` (names of parameters this
   * optimizer does not hold are ignored). Checked whole before anything is set:
   * a wrong optimizer, a missing parameter or slot, or a wrong length throws a
   * ConfigError naming it, and leaves the state as it was.
   */
  loadState(state: OptimizerState<ArrayLike<number>>): void;
  dispose(): void;
}

/** Bytes of an optimizer's state over `params`: slots per weight (AdamW: 2 moments; SGD: 1 velocity) × weights × bytes per value (float32 on the GPU). */
export function optimizerStateBytes(params: readonly Param[], optimizer: OptimizerName, bytesPerValue = 4): number {
  const slots = optimizer === 'adamw' ? 2 : 1;
  return slots * params.reduce((s, p) => s + p.value.size, 0) * bytesPerValue;
}

export function createOptimizer(be: Backend, params: readonly Param[], cfg: OptimizerConfig): Optimizer {
  validateOptimizerConfig(cfg);
  return cfg.optimizer === 'sgd' ? new Sgd(be, params, cfg) : new AdamW(be, params, cfg);
}

/** What every optimizer holds: the parameters, per-parameter state slots, the lr of the next step, and the steps taken. */
abstract class SlotOptimizer implements Optimizer {
  abstract readonly name: OptimizerName;
  steps = 0;
  lr: number;
  /** slots[k][i]: state k (zeros at first) of parameter i. */
  protected readonly slots: Tensor[][];

  constructor(
    protected readonly be: Backend,
    protected readonly params: readonly Param[],
    protected readonly cfg: OptimizerConfig,
    slotCount: number,
  ) {
    this.lr = cfg.lr;
    this.slots = Array.from({ length: slotCount }, () => params.map((p) => be.memory.scope('optimizer', () => be.zeros(p.value.shape))));
  }

  step(gradScale = 1): void {
    requireFinite('gradScale', gradScale, { min: 0, exclusiveMin: true });
    requireLr('lr', this.lr, LR_LIMITS.stepMin);
    const step = this.steps + 1;
    this.params.forEach((p, i) => this.update(p, i, p.decay ? this.cfg.weightDecay : 0, gradScale, step));
    this.steps = step;
  }

  /** Updates parameter `p` (index i) for step `step` (1-based). */
  protected abstract update(p: Param, i: number, weightDecay: number, gradScale: number, step: number): void;

  async readState(): Promise<OptimizerState> {
    const names = OPTIMIZER_SLOTS[this.name];
    // Every slot read at once: one wait for the device's queue, not one per parameter and slot.
    const values = await Promise.all(this.params.map((_, i) => Promise.all(names.map((_, k) => this.be.read(this.slots[k][i])))));
    const slots: OptimizerState['slots'] = {};
    this.params.forEach((p, i) => {
      const own: Record<string, Float32Array | Float64Array> = {};
      names.forEach((slot, k) => {
        const v = values[i][k];
        own[slot] = v instanceof Int32Array ? Float64Array.from(v) : v;
      });
      slots[p.name] = own;
    });
    return { name: this.name, steps: this.steps, slots };
  }

  loadState(state: OptimizerState<ArrayLike<number>>): void {
    const steps = checkOptimizerState(this.name, state, this.params.map((p) => ({ name: p.name, size: p.value.size, shape: p.value.shape })));
    const names = OPTIMIZER_SLOTS[this.name];
    for (const [i, p] of this.params.entries()) {
      for (const [k, slot] of names.entries()) {
        const t = this.be.tensor(state.slots[p.name][slot], p.value.shape);
        this.be.copyInto(this.slots[k][i], t);
        this.be.dispose(t);
      }
    }
    this.steps = steps;
  }

  dispose(): void {
    for (const t of this.slots.flat()) this.be.dispose(t);
  }
}

class Sgd extends SlotOptimizer {
  readonly name = 'sgd';

  constructor(be: Backend, params: readonly Param[], cfg: OptimizerConfig) {
    super(be, params, cfg, 1);
  }

  protected update(p: Param, i: number, weightDecay: number, gradScale: number): void {
    this.be.sgdStep(p.value, p.grad, this.slots[0][i], { lr: this.lr, momentum: this.cfg.momentum, weightDecay, gradScale });
  }
}

class AdamW extends SlotOptimizer {
  readonly name = 'adamw';

  constructor(be: Backend, params: readonly Param[], cfg: OptimizerConfig) {
    super(be, params, cfg, 2);
  }

  protected update(p: Param, i: number, weightDecay: number, gradScale: number, step: number): void {
    const { beta1 = ADAMW_DEFAULTS.beta1, beta2 = ADAMW_DEFAULTS.beta2, eps = ADAMW_DEFAULTS.eps } = this.cfg;
    this.be.adamwStep(p.value, p.grad, this.slots[0][i], this.slots[1][i], { lr: this.lr, beta1, beta2, eps, weightDecay, step, gradScale });
  }
}

/**
 * Checks a saved optimizer state whole before any of it is set (the device optimizer's and the host's, ZeRO-Offload):
 * its name is `name`, its step count a whole number, and every parameter of `params` has each slot of that
 * optimizer at its size. Returns the step count.
 */
export function checkOptimizerState(name: OptimizerName, state: OptimizerState<ArrayLike<number>>, params: readonly { name: string; size: number; shape?: readonly number[] }[]): number {
  if (state === null || typeof state !== 'object') throw new ConfigError('optimizer state', state, 'must be an object {name, steps, slots}');
  if (state.name !== name) throw new ConfigError('optimizer state.name', state.name, `must be "${name}", the optimizer of this run`);
  const steps = requireInt('optimizer state.steps', state.steps, 0);
  const names = OPTIMIZER_SLOTS[name];
  for (const p of params) {
    const own = state.slots !== null && typeof state.slots === 'object' && Object.hasOwn(state.slots, p.name) ? state.slots[p.name] : undefined;
    if (own === null || typeof own !== 'object') throw new ConfigError(`optimizer state.slots["${p.name}"]`, 'missing', `must hold ${names.join(' and ')} of this parameter`);
    for (const slot of names) {
      const v = Object.hasOwn(own, slot) ? own[slot] : undefined;
      if (v === undefined) throw new ConfigError(`optimizer state.slots["${p.name}"].${slot}`, 'missing', `must be given (${name} keeps ${names.join(' and ')})`);
      if (v.length !== p.size) throw new ConfigError(`optimizer state.slots["${p.name}"].${slot}.length`, v.length, `must be ${p.size}${p.shape ? ` (shape [${p.shape.join(', ')}])` : ''}`);
    }
  }
  return steps;
}
