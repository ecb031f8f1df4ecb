/**
 * The float64 reference of the causal self-attention ops (layouts in
 * attention-shapes.ts), on plain arrays: the CpuBackend calls these, and the
 * GPU kernels in shaders/attention.wgsl are checked against them.
 */
import type { AttentionDims } from './attention-shapes.ts';

type F = Float64Array;

/**
 * [B·H·T, T]: for j ≤ t, scale · Σ_d a[row b·T+t, aOff + h·D + d] · qkv[row b·T+j, bOff + h·D + d]
 * (a has aCols columns); 0 above the diagonal.
 */
function causalPairDots(a: F, aCols: number, aOff: number, qkv: F, bOff: number, { B, T, H, D, C }: AttentionDims, scale: number): F {
  const out = new Float64Array(B * H * T * T);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++)
      for (let t = 0; t < T; t++)
        for (let j = 0; j <= t; j++) {
          let s = 0;
          for (let d = 0; d < D; d++) s += a[(b * T + t) * aCols + aOff + h * D + d] * qkv[(b * T + j) * 3 * C + bOff + h * D + d];
          out[((b * H + h) * T + t) * T + j] = scale * s;
        }
  return out;
}

/** scale · q_t · k_j. */
export function scoresRef(qkv: F, dims: AttentionDims, scale: number): F {
  return causalPairDots(qkv, 3 * dims.C, 0, qkv, dims.C, dims, scale);
}

export function causalSoftmaxRef(s: F, T: number): F {
  const out = new Float64Array(s.length);
  for (let r = 0; r < s.length / T; r++) {
    const t = r % T, o = r * T;
    let mx = -Infinity;
    for (let j = 0; j <= t; j++) mx = Math.max(mx, s[o + j]);
    let sum = 0;
    for (let j = 0; j <= t; j++) sum += Math.exp(s[o + j] - mx);
    for (let j = 0; j <= t; j++) out[o + j] = Math.exp(s[o + j] - mx) / sum;
  }
  return out;
}

export function causalSoftmaxBackwardRef(p: F, dp: F, T: number): F {
  const out = new Float64Array(p.length);
  for (let r = 0; r < p.length / T; r++) {
    const t = r % T, o = r * T;
    let dot = 0;
    for (let j = 0; j <= t; j++) dot += p[o + j] * dp[o + j];
    for (let j = 0; j <= t; j++) out[o + j] = p[o + j] * (dp[o + j] - dot);
  }
  return out;
}

export function valuesRef(p: F, qkv: F, { B, T, H, D, C }: AttentionDims): F {
  const y = new Float64Array(B * T * C);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++)
      for (let t = 0; t < T; t++)
        for (let d = 0; d < D; d++) {
          let s = 0;
          for (let j = 0; j <= t; j++) s += p[((b * H + h) * T + t) * T + j] * qkv[(b * T + j) * 3 * C + 2 * C + h * D + d];
          y[(b * T + t) * C + h * D + d] = s;
        }
  return y;
}

/** dP = dy_t · v_j. */
export function probsGradRef(qkv: F, dy: F, dims: AttentionDims): F {
  return causalPairDots(dy, dims.C, 0, qkv, 2 * dims.C, dims, 1);
}

export function qkvGradRef(qkv: F, p: F, ds: F, dy: F, { B, T, H, D, C }: AttentionDims, scale: number): F {
  const g = new Float64Array(B * T * 3 * C);
  const row = (b: number, t: number) => (b * T + t) * 3 * C;
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++)
      for (let t = 0; t < T; t++)
        for (let j = 0; j <= t; j++) {
          const r = ((b * H + h) * T + t) * T + j;
          for (let d = 0; d < D; d++) {
            const c = h * D + d;
            g[row(b, t) + c] += scale * ds[r] * qkv[row(b, j) + C + c]; // dq_t
            g[row(b, j) + C + c] += scale * ds[r] * qkv[row(b, t) + c]; // dk_j
            g[row(b, j) + 2 * C + c] += p[r] * dy[(b * T + t) * C + c]; // dv_j
          }
        }
  return g;
}
