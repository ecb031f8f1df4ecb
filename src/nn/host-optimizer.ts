/**
 * The optimizer on the CPU for ZeRO-Offload (Ren et al. 2021): SGD with momentum and AdamW over host vectors, the
 * state (velocity; the two moments) kept in the worker's memory, not on its device. The arithmetic is the device's
 * own, operation for operation: beside a float32 device (the GPU) every value is rounded to float32 after each
 * operation (Math.fround) in the order shaders/optimizer.wgsl computes it, its uniforms rounded as the host writes
 * them (bias corrections, 1 − β and the decay computed in float64 first); beside the float64 CPU reference it is
 * that backend's expression (cpu-backend.ts sgdStep, adamwStep), so a run offloaded there equals one device exactly.
 * A GPU may fuse a multiply-add or round a square root otherwise: the two agree within 1e-6 relative per update
 * (host-optimizer-gpu.test.ts).
 *
 * The state reads out and loads back by parameter name under PyTorch's slot names, as every optimizer's does.
 */
import { ConfigError, requireInt } from '../util/errors.ts';
import { ADAMW_DEFAULTS, checkOptimizerState, OPTIMIZER_SLOTS, type OptimizerConfig, type OptimizerName, type OptimizerState } from './optimizer.ts';

export type HostVector = Float32Array | Float64Array;

/** A parameter as the host optimizer knows it: its name, its number of values and whether weight decay applies. */
export interface HostParam {
  name: string;
  size: number;
  decay: boolean;
}

export interface SgdHostOptions {
  lr: number;
  momentum: number;
  weightDecay: number;
  gradScale: number;
}

export interface AdamWHostOptions {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  step: number;
  gradScale: number;
}

const f = Math.fround;

/** SGD in place on host vectors (v = μv + (s·g + wd·p); p −= lr·v), float32 as the WGSL kernel when `p` is a Float32Array. */
export function hostSgdStep(p: HostVector, g: HostVector, vel: HostVector, o: SgdHostOptions): void {
  if (p instanceof Float64Array) {
    for (let i = 0; i < p.length; i++) {
      vel[i] = o.momentum * vel[i] + (o.gradScale * g[i] + o.weightDecay * p[i]);
      p[i] -= o.lr * vel[i];
    }
    return;
  }
  const lr = f(o.lr), mu = f(o.momentum), wd = f(o.weightDecay), s = f(o.gradScale);
  for (let i = 0; i < p.length; i++) {
    const pv = p[i];
    const v = f(f(mu * vel[i]) + f(f(s * g[i]) + f(wd * pv)));
    vel[i] = v;
    p[i] = f(pv - f(lr * v));
  }
}

/** AdamW in place on host vectors (decoupled decay; bias corrections of step `o.step`), float32 as the WGSL kernel when `p` is a Float32Array. */
export function hostAdamwStep(p: HostVector, g: HostVector, m1: HostVector, m2: HostVector, o: AdamWHostOptions): void {
  const bc1 = 1 - Math.pow(o.beta1, o.step);
  const bc2 = 1 - Math.pow(o.beta2, o.step);
  if (p instanceof Float64Array) {
    for (let i = 0; i < p.length; i++) {
      const gi = o.gradScale * g[i];
      m1[i] = o.beta1 * m1[i] + (1 - o.beta1) * gi;
      m2[i] = o.beta2 * m2[i] + (1 - o.beta2) * gi * gi;
      const mh = m1[i] / bc1;
      const vh = m2[i] / bc2;
      p[i] = p[i] * (1 - o.lr * o.weightDecay) - (o.lr * mh) / (Math.sqrt(vh) + o.eps);
    }
    return;
  }
  // The uniforms as gpu-backend.ts writes them: float64 on the host, then float32.
  const lr = f(o.lr), b1 = f(o.beta1), b2 = f(o.beta2), eps = f(o.eps), decay = f(1 - o.lr * o.weightDecay), s = f(o.gradScale);
  const c1 = f(bc1), c2 = f(bc2), omb1 = f(1 - o.beta1), omb2 = f(1 - o.beta2);
  for (let i = 0; i < p.length; i++) {
    const gi = f(s * g[i]);
    const m = f(f(b1 * m1[i]) + f(omb1 * gi));
    const v = f(f(b2 * m2[i]) + f(f(omb2 * gi) * gi));
    m1[i] = m;
    m2[i] = v;
    const mh = f(m / c1);
    const vh = f(v / c2);
    p[i] = f(f(p[i] * decay) - f(f(lr * mh) / f(f(Math.sqrt(vh)) + eps)));
  }
}

/** An optimizer whose state lives on the host: steps host vectors of weights with host vectors of gradients. */
export class HostOptimizer {
  readonly name: OptimizerName;
  steps = 0;
  lr: number;
  /** By parameter name, the slots in OPTIMIZER_SLOTS order; float64 until the first step meets a float32 device. */
  private slots = new Map<string, HostVector[]>();

  constructor(
    private readonly params: readonly HostParam[],
    private readonly cfg: OptimizerConfig,
  ) {
    this.name = cfg.optimizer;
    this.lr = cfg.lr;
    const n = OPTIMIZER_SLOTS[this.name].length;
    for (const p of params) this.slots.set(p.name, Array.from({ length: n }, () => new Float64Array(p.size)));
  }

  /** Bytes of its state in `bytesPerValue` (the device's float32: 4). */
  bytes(bytesPerValue = 4): number {
    return OPTIMIZER_SLOTS[this.name].length * this.params.reduce((s, p) => s + p.size, 0) * bytesPerValue;
  }

  /** One step: `values[i]` (parameter i's weights) updated in place from `grads[i]` · gradScale; the state takes their precision. */
  step(values: readonly HostVector[], grads: readonly HostVector[], gradScale = 1): void {
    const step = this.steps + 1;
    const { beta1 = ADAMW_DEFAULTS.beta1, beta2 = ADAMW_DEFAULTS.beta2, eps = ADAMW_DEFAULTS.eps } = this.cfg;
    this.params.forEach((p, i) => {
      const slots = this.precise(p.name, values[i]);
      const weightDecay = p.decay ? this.cfg.weightDecay : 0;
      if (this.name === 'sgd') hostSgdStep(values[i], grads[i], slots[0], { lr: this.lr, momentum: this.cfg.momentum, weightDecay, gradScale });
      else hostAdamwStep(values[i], grads[i], slots[0], slots[1], { lr: this.lr, beta1, beta2, eps, weightDecay, step, gradScale });
    });
    this.steps = step;
  }

  /** Parameter `name`'s slots in the precision of `like` (converted once: a float32 device keeps float32 state). */
  private precise(name: string, like: HostVector): HostVector[] {
    const slots = this.slots.get(name) as HostVector[];
    if (like instanceof Float32Array && slots[0] instanceof Float64Array) {
      const f32 = slots.map((s) => Float32Array.from(s));
      this.slots.set(name, f32);
      return f32;
    }
    return slots;
  }

  /** The step count and a copy of every slot, by parameter name. */
  async readState(): Promise<OptimizerState> {
    const names = OPTIMIZER_SLOTS[this.name];
    const slots: OptimizerState['slots'] = {};
    for (const [name, own] of this.slots) slots[name] = Object.fromEntries(names.map((slot, k) => [slot, own[k].slice()]));
    return { name: this.name, steps: this.steps, slots };
  }

  /** Sets the step count and every slot from `state` (by parameter name), checked whole first; each slot keeps its precision. */
  loadState(state: OptimizerState<ArrayLike<number>>): void {
    const steps = checkOptimizerState(this.name, state, this.params);
    const names = OPTIMIZER_SLOTS[this.name];
    for (const p of this.params) {
      const mine = this.slots.get(p.name) as HostVector[];
      names.forEach((slot, k) => mine[k].set(state.slots[p.name][slot]));
    }
    this.steps = steps;
  }
}
