/**
 * A trainable parameter and its deterministic initialisation.
 *
 * Initial values depend only on (seed, global parameter name): the stream is
 * `new Rng(seed).fork(name)`, so a parameter gets the same values whether the
 * model is one stage or cut into eight, and whichever worker builds it.
 */
import { Rng } from '../util/rng.ts';
import type { Backend, Tensor } from './backend.ts';
import { tpPieceName, tpShape, tpSlice, type TpRule } from './tp-shard.ts';

export interface Param {
  /** Global name, e.g. 'block1.linear.W'. */
  readonly name: string;
  readonly value: Tensor;
  /** Gradient, accumulated over the micro-batches of a step. */
  readonly grad: Tensor;
  /** Whether weight decay applies (matrices and embedding tables; not biases or LayerNorm gain/shift). */
  readonly decay: boolean;
}

export type InitSpec = { kind: 'normal'; std: number } | { kind: 'const'; value: number };

export function initValues(name: string, size: number, init: InitSpec, seed: number): Float64Array {
  const out = new Float64Array(size);
  if (init.kind === 'const') {
    out.fill(Math.fround(init.value));
    return out;
  }
  const rng = new Rng(seed).fork(name);
  // Rounded to float32 so the CPU reference and the GPU start from identical weights.
  for (let i = 0; i < size; i++) out[i] = Math.fround(init.std * rng.normal());
  return out;
}

export function createParam(be: Backend, name: string, shape: readonly number[], init: InitSpec, seed: number, decay: boolean): Param {
  const size = shape.reduce((a, b) => a * b, 1);
  return tagged(be, { name, value: be.tensor(initValues(name, size, init, seed), shape), grad: be.zeros(shape), decay });
}

/** Counts a parameter's value as weights and its gradient as gradients (nn/memory-ledger.ts). */
export function tagged(be: Backend, p: Param): Param {
  be.tag(p.value, 'weights');
  be.tag(p.grad, 'grads');
  return p;
}

export function disposeParam(be: Backend, p: Param): void {
  be.dispose(p.value);
  be.dispose(p.grad);
}

/**
 * Tensor-parallel worker j's piece of parameter `name` (whole shape `shape`) under `rule` over t workers:
 * named `name@tpJ/T`, its initial values the same entries of the whole parameter's (tp-shard.ts), so the
 * pieces of t workers are the whole model's initialisation.
 */
export function createTpParam(
  be: Backend,
  name: string,
  shape: readonly number[],
  init: InitSpec,
  seed: number,
  decay: boolean,
  split: { rule: TpRule; t: number; j: number },
): Param {
  const { rule, t, j } = split;
  if (t === 1 || rule.kind === 'whole') return createParam(be, name, shape, init, seed, decay);
  const size = shape.reduce((a, b) => a * b, 1);
  const piece = tpShape(shape, rule, t);
  return tagged(be, { name: tpPieceName(name, j, t), value: be.tensor(tpSlice(initValues(name, size, init, seed), shape, rule, t, j), piece), grad: be.zeros(piece), decay });
}

/** Sums the gradients of `ps` over a group of workers in one exchange (`allReduceMany` takes copies), written back in place. */
export async function sumGradsOver(be: Backend, ps: readonly Param[], group: { allReduceMany(xs: readonly Tensor[]): Promise<Tensor[]> }): Promise<void> {
  if (ps.length === 0) return;
  const sums = await group.allReduceMany(ps.map((p) => be.clone(p.grad)));
  ps.forEach((p, i) => {
    be.copyInto(p.grad, sums[i]);
    be.dispose(sums[i]);
  });
}
