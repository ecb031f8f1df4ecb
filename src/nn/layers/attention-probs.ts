/** The causal attention probabilities of a GPT block (gpt-block.ts, gpt-moe-block.ts: the same attention half). */
import type { Backend, Tensor } from '../backend.ts';
import { GPT_LN_EPS, torchLinearForward, type TorchLayerNorm, type TorchLinear } from './torch-linear.ts';

/** The causal attention probabilities [B·H·T, T] from qkv, over `heads` heads of sequences of T rows. */
export function causalProbs(be: Backend, qkv: Tensor, heads: number, T: number, scale: number): Tensor {
  const S = be.attentionScores(qkv, heads, T, scale);
  const P = be.causalSoftmax(S);
  be.dispose(S);
  return P;
}

/** The attention probabilities [B·H·T, T] a pre-LayerNorm block (ln1, then the qkv linear) gives its input x (for pictures; nothing kept). */
export function blockAttentionProbs(be: Backend, ln1: TorchLayerNorm, attn: TorchLinear, x: Tensor, heads: number, T: number, scale: number): Tensor {
  const l1 = be.layerNorm(x, ln1.weight.value, ln1.bias.value, GPT_LN_EPS);
  const qkv = torchLinearForward(be, attn, l1.y);
  for (const t of [l1.y, l1.mean, l1.rstd]) be.dispose(t);
  const P = causalProbs(be, qkv, heads, T, scale);
  be.dispose(qkv);
  return P;
}
