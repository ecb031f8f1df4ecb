/**
 * PipeLab's models written in TensorFlow.js, layer for layer from the same
 * ModelSpec (src/nn/model-spec.ts), for the training benchmark's peer:
 *
 * - linear:      x·W + b (tf.matMul, tf.add), W [in, out] as ours
 * - embedding:   tf.gather(table, idx) reshaped to [n, context·dim]
 * - layernorm:   tf.moments over the last axis, (x − mean)·rsqrt(var + eps)·γ + β
 * - activation:  tf.relu, tf.tanh, and GELU in its tanh form (ours; TF.js has no gelu op)
 * - loss:        tf.losses.softmaxCrossEntropy on one-hot labels, mean over the batch
 *
 * Parameters are tf.variables named as ours ('block0.linear.W', ...) and start
 * from the values our model holds, so both runs start from the same weights.
 * Only the bench page loads this file (TensorFlow.js stays out of the app).
 */
import type { ModelSpec } from '../nn/model-spec.ts';

export type Tf = typeof import('@tensorflow/tfjs');
type TfTensor = import('@tensorflow/tfjs').Tensor;
type TfVariable = import('@tensorflow/tfjs').Variable;

export interface TfjsBatch {
  /** f32 [n, cols] features or i32 [n, context] indices. */
  x: TfTensor;
  /** One-hot labels, f32 [n, classes]. */
  y: TfTensor;
}

export interface TfjsModel {
  readonly vars: Record<string, TfVariable>;
  /** Mean cross-entropy over the batch (a scalar), as a function of the variables. */
  loss(b: TfjsBatch): TfTensor;
  dispose(): void;
}

const GELU_C = Math.sqrt(2 / Math.PI);
const GELU_K = 0.044715;

/** Builds the TF.js model of `spec` with the given initial values (by our global parameter names). */
/** A maker of trainable tf.variables named as ours, each from its initial value in `init`, collected into `vars`. */
export function variableMaker(tf: Tf, init: Readonly<Record<string, ArrayLike<number>>>, vars: Record<string, TfVariable>): (name: string, shape: number[]) => TfVariable {
  return (name, shape) => {
    const v = init[name];
    if (!v) throw new Error(`tfjs model: no initial value for ${name}`);
    const t = tf.tensor(Float32Array.from(v), shape, 'float32');
    vars[name] = tf.variable(t, true, name);
    t.dispose();
    return vars[name];
  };
}

/** (x − mean)·rsqrt(var + eps)·γ + β over the last axis (population variance, as ours and PyTorch). */
export function tfLayerNorm(tf: Tf, x: TfTensor, gamma: TfTensor, beta: TfTensor, eps: number): TfTensor {
  const { mean, variance } = tf.moments(x, -1, true);
  return tf.add(tf.mul(tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, eps))), gamma), beta);
}

/** GELU in its tanh form, as ours (TF.js has no gelu op). */
export function tfGeluTanh(tf: Tf, x: TfTensor): TfTensor {
  return tf.mul(tf.mul(x, 0.5), tf.add(1, tf.tanh(tf.mul(tf.add(x, tf.mul(tf.pow(x, 3), GELU_K)), GELU_C))));
}

export function buildTfjsModel(tf: Tf, spec: ModelSpec, init: Readonly<Record<string, ArrayLike<number>>>): TfjsModel {
  const vars: Record<string, TfVariable> = {};
  const variable = variableMaker(tf, init, vars);
  type Fn = (x: TfTensor) => TfTensor;
  const fns: Fn[] = [];
  for (const block of spec.blocks) {
    for (const l of block.layers) {
      const p = `${block.name}.${l.name}`;
      switch (l.kind) {
        case 'embedding': {
          const table = variable(`${p}.table`, [l.vocab, l.dim]);
          fns.push((idx) => tf.reshape(tf.gather(table, tf.reshape(idx, [-1])), [idx.shape[0], l.context * l.dim]));
          break;
        }
        case 'linear': {
          const W = variable(`${p}.W`, [l.in, l.out]);
          const b = variable(`${p}.b`, [l.out]);
          fns.push((x) => tf.add(tf.matMul(x, W), b));
          break;
        }
        case 'layernorm': {
          const gamma = variable(`${p}.gamma`, [l.dim]);
          const beta = variable(`${p}.beta`, [l.dim]);
          fns.push((x) => tfLayerNorm(tf, x, gamma, beta, l.eps));
          break;
        }
        case 'activation': {
          const fn = l.fn;
          if (fn === 'relu') fns.push((x) => tf.relu(x));
          else if (fn === 'tanh') fns.push((x) => tf.tanh(x));
          else if (fn === 'gelu') {
            fns.push((x) => tfGeluTanh(tf, x));
          } else fns.push((x) => x);
          break;
        }
        case 'softmax-cross-entropy':
          break; // applied in loss()
      }
    }
  }
  return {
    vars,
    loss(b: TfjsBatch): TfTensor {
      let x = b.x;
      for (const f of fns) x = f(x);
      return tf.losses.softmaxCrossEntropy(b.y, x); // mean over the batch
    },
    dispose() {
      for (const v of Object.values(vars)) v.dispose();
    },
  };
}

/** Uploads a batch (our Examples' arrays) as TF.js tensors. */
export function tfjsBatch(tf: Tf, inputs: Float32Array | Int32Array, n: number, cols: number, labels: Int32Array, classes: number): TfjsBatch {
  return tf.tidy(() => {
    const x = inputs instanceof Int32Array ? tf.tensor2d(inputs, [n, cols], 'int32') : tf.tensor2d(inputs, [n, cols], 'float32');
    const y = tf.oneHot(tf.tensor1d(labels, 'int32'), classes).toFloat();
    return { x, y };
  });
}
