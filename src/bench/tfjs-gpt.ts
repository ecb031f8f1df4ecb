/**
 * PipeLab's GPT (src/nn/layers/gpt-*.ts, makemore's transformer) written in
 * TensorFlow.js from the same ModelSpec, for the training benchmark's peer.
 * Attention is built from tf ops:
 *
 * - embedding:  tf.gather(wte, idx) + wpe (positions 0 … T−1, broadcast over the batch)
 * - block:      pre-LayerNorm (tf.moments, eps 1e-5); c_attn x·Wᵀ + b (tf.matMul
 *               transposeB: PyTorch's [out, in] layout, as ours holds it); q | k | v
 *               split by tf.split, heads by reshape + transpose; scores
 *               tf.matMul(q, k, false, true)·1/√D plus a causal mask of −1e9 above
 *               the diagonal (tf.linalg.bandPart), tf.softmax, tf.matMul(P, v);
 *               c_proj, residual; ln_2, c_fc, GELU (tanh form), mlp.c_proj, residual
 * - head:       ln_f, lm_head (no bias)
 * - loss:       −Σ one-hot · logSoftmax over the targets that take a loss, divided
 *               by their count (padded targets, label −1, one-hot to a zero row)
 *
 * Parameters are tf.variables under our names ('transformer.h.0.attn.c_attn.weight', ...)
 * and start from the values our model holds.
 */
import { GPT_LN_EPS } from '../nn/layers/torch-linear.ts';
import type { ModelSpec } from '../nn/model-spec.ts';
import { tfGeluTanh, tfLayerNorm, variableMaker, type Tf, type TfjsBatch, type TfjsModel } from './tfjs-models.ts';

type TfTensor = import('@tensorflow/tfjs').Tensor;
type TfVariable = import('@tensorflow/tfjs').Variable;

const MASKED = -1e9;

/** Whether `spec` is the GPT (its layers are the gpt-* kinds). */
export function isGptSpec(spec: ModelSpec): boolean {
  return spec.blocks.some((b) => b.layers.some((l) => l.kind === 'gpt-block'));
}

/** Builds the TF.js GPT of `spec` with the given initial values (by our global parameter names). */
export function buildTfjsGpt(tf: Tf, spec: ModelSpec, init: Readonly<Record<string, ArrayLike<number>>>): TfjsModel {
  const vars: Record<string, TfVariable> = {};
  const variable = variableMaker(tf, init, vars);
  const layerNorm = (name: string, dim: number) => {
    const g = variable(`${name}.weight`, [dim]);
    const b = variable(`${name}.bias`, [dim]);
    return (x: TfTensor): TfTensor => tfLayerNorm(tf, x, g, b, GPT_LN_EPS);
  };
  const linear = (name: string, inCols: number, outCols: number, bias = true) => {
    const W = variable(`${name}.weight`, [outCols, inCols]);
    const b = bias ? variable(`${name}.bias`, [outCols]) : null;
    return (x: TfTensor): TfTensor => {
      const z = tf.matMul(x, W, false, true);
      return b ? tf.add(z, b) : z;
    };
  };
  const gelu = (x: TfTensor): TfTensor => tfGeluTanh(tf, x);

  type Fn = (x: TfTensor, batch: number) => TfTensor;
  const fns: Fn[] = [];
  const masks: TfTensor[] = [];
  for (const block of spec.blocks) {
    for (const l of block.layers) {
      switch (l.kind) {
        case 'gpt-embedding': {
          const wte = variable('transformer.wte.weight', [l.vocab, l.dim]);
          const wpe = variable('transformer.wpe.weight', [l.blockSize, l.dim]);
          const T = l.blockSize, C = l.dim;
          fns.push((idx, B) => tf.reshape(tf.add(tf.reshape(tf.gather(wte, tf.reshape(idx, [-1])), [B, T, C]), wpe), [B * T, C]));
          break;
        }
        case 'gpt-block': {
          const C = l.dim, H = l.heads, D = C / H, T = l.blockSize, p = l.prefix;
          const ln1 = layerNorm(`${p}.ln_1`, C);
          const attn = linear(`${p}.attn.c_attn`, C, 3 * C);
          const proj = linear(`${p}.attn.c_proj`, C, C);
          const ln2 = layerNorm(`${p}.ln_2`, C);
          const fc = linear(`${p}.mlp.c_fc`, C, 4 * C);
          const mproj = linear(`${p}.mlp.c_proj`, 4 * C, C);
          // 0 on and below the diagonal, −1e9 above it: [T, T], broadcast over batch and heads.
          const mask = tf.tidy(() => tf.mul(tf.sub(1, tf.linalg.bandPart(tf.ones([T, T]), -1, 0)), MASKED));
          masks.push(mask);
          const scale = 1 / Math.sqrt(D);
          const heads = (t: TfTensor, B: number) => tf.reshape(tf.transpose(tf.reshape(t, [B, T, H, D]), [0, 2, 1, 3]), [B * H, T, D]);
          fns.push((x, B) => {
            const [q, k, v] = tf.split(attn(ln1(x)), 3, -1);
            const s = tf.add(tf.reshape(tf.mul(tf.matMul(heads(q, B), heads(k, B), false, true), scale), [B, H, T, T]), mask);
            const P = tf.reshape(tf.softmax(s, -1), [B * H, T, T]);
            const o = tf.reshape(tf.transpose(tf.reshape(tf.matMul(P, heads(v, B)), [B, H, T, D]), [0, 2, 1, 3]), [B * T, C]);
            const x1 = tf.add(x, proj(o));
            return tf.add(x1, mproj(gelu(fc(ln2(x1)))));
          });
          break;
        }
        case 'gpt-head': {
          const lnf = layerNorm('transformer.ln_f', l.dim);
          const lm = linear('lm_head', l.dim, l.vocab, false);
          fns.push((x) => lm(lnf(x)));
          break;
        }
        case 'softmax-cross-entropy':
          break; // applied in loss()
        default:
          throw new Error(`tfjs gpt: layer kind ${l.kind} is not a GPT layer`);
      }
    }
  }
  return {
    vars,
    loss(b: TfjsBatch): TfTensor {
      const B = b.x.shape[0];
      let x = b.x;
      for (const f of fns) x = f(x, B);
      // y: one-hot [B·T, V]; a padded target (label −1) is a zero row, so it adds nothing to either sum.
      const nll = tf.neg(tf.sum(tf.mul(b.y, tf.logSoftmax(x, -1))));
      return tf.div(nll, tf.sum(b.y));
    },
    dispose() {
      for (const v of Object.values(vars)) v.dispose();
      for (const m of masks) m.dispose();
    },
  };
}
