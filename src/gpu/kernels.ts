/**
 * The kernel table: which WGSL file and entry point each op runs, its
 * bindings, and the matmul variants with their specialisation constants.
 */
import matmulSrc from '../../shaders/matmul.wgsl?raw';
import elementwiseSrc from '../../shaders/elementwise.wgsl?raw';
import normSrc from '../../shaders/norm.wgsl?raw';
import embeddingSrc from '../../shaders/embedding.wgsl?raw';
import softmaxXentSrc from '../../shaders/softmax_xent.wgsl?raw';
import optimizerSrc from '../../shaders/optimizer.wgsl?raw';
import { requireOneOf } from '../util/errors.ts';
import type { BindingKind, KernelSpec } from './pipelines.ts';

const U: BindingKind = 'uniform';
const R: BindingKind = 'read';
const W: BindingKind = 'rw';

function spec(file: string, source: string, entry: string, bindings: (BindingKind | null)[]): KernelSpec {
  return { file, source, entry, bindings };
}

const ew = (entry: string, bindings: (BindingKind | null)[]): KernelSpec => spec('elementwise', elementwiseSrc, entry, bindings);

/** Fixed kernels (no specialisation constants). Binding i of the array is binding i of the shader. */
export const K = {
  fill: ew('fill', [U, null, null, W]),
  biasAdd: ew('bias_add', [U, R, R, W]),
  colSumAcc: ew('col_sum_acc', [U, R, null, W]),
  actFwd: ew('act_fwd', [U, R, null, W]),
  actBwd: ew('act_bwd', [U, R, R, W]),
  axpy: ew('axpy', [U, R, null, W]),
  scale: ew('scale', [U, null, null, W]),
  pad2d: ew('pad2d', [U, R, null, W]),
  lnFwd: spec('norm', normSrc, 'ln_fwd', [U, R, R, R, W, W, W]),
  lnBwdInput: spec('norm', normSrc, 'ln_bwd_input', [U, R, R, R, R, R, W]),
  lnBwdWeightAcc: spec('norm', normSrc, 'ln_bwd_weight_acc', [U, R, R, R, R, W, W]),
  embGather: spec('embedding', embeddingSrc, 'emb_gather', [U, R, R, W]),
  embScatterAcc: spec('embedding', embeddingSrc, 'emb_scatter_acc', [U, R, R, W]),
  sxRows: spec('softmax_xent', softmaxXentSrc, 'sx_rows', [U, R, R, W, W]),
  sxReduce: spec('softmax_xent', softmaxXentSrc, 'sx_reduce', [U, R, null, W]),
  sgd: spec('optimizer', optimizerSrc, 'sgd', [U, R, W, W]),
  adamw: spec('optimizer', optimizerSrc, 'adamw', [U, R, W, W, W]),
} as const;

/** Threads per workgroup of the one-dimensional kernels (WG in the WGSL files). */
export const WG1D = 64;

export type MatmulKind = 'reg' | 'shared' | 'naive';

export interface MatmulVariant {
  readonly name: string;
  readonly kind: MatmulKind;
  /** Outputs per thread: rows, columns (multiples of 4 for 'reg'). */
  readonly tm: number;
  readonly tn: number;
  /** Workgroup size: threads along columns, rows. */
  readonly wgx: number;
  readonly wgy: number;
  /** k-tile depth ('shared'). */
  readonly bk: number;
  readonly description: string;
}

function variant(v: Omit<MatmulVariant, 'bk'> & { bk?: number }): MatmulVariant {
  return { bk: 8, ...v };
}

/** Every matmul variant; the autotune times the candidates among them and keeps the fastest. */
export const MATMUL_VARIANTS: readonly MatmulVariant[] = [
  variant({ name: 'reg4x4', kind: 'reg', tm: 4, tn: 4, wgx: 8, wgy: 8, description: 'register tile 4x4 per thread, vec4 loads, no barriers, 8x8 threads' }),
  variant({ name: 'reg8x4', kind: 'reg', tm: 8, tn: 4, wgx: 8, wgy: 8, description: 'register tile 8x4 per thread, vec4 loads, no barriers, 8x8 threads' }),
  variant({ name: 'reg4x8', kind: 'reg', tm: 4, tn: 8, wgx: 8, wgy: 8, description: 'register tile 4x8 per thread, vec4 loads, no barriers, 8x8 threads' }),
  variant({ name: 'reg8x8', kind: 'reg', tm: 8, tn: 8, wgx: 8, wgy: 8, description: 'register tile 8x8 per thread, vec4 loads, no barriers, 8x8 threads' }),
  variant({ name: 'shared64', kind: 'shared', tm: 4, tn: 4, wgx: 16, wgy: 16, bk: 16, description: 'shared-memory 64x64x16 tiles, 4x4 outputs per thread, 16x16 threads' }),
  variant({ name: 'shared32', kind: 'shared', tm: 2, tn: 2, wgx: 16, wgy: 16, bk: 16, description: 'shared-memory 32x32x16 tiles, 2x2 outputs per thread, 16x16 threads' }),
  variant({ name: 'naive', kind: 'naive', tm: 1, tn: 1, wgx: 16, wgy: 16, description: 'one output per thread (baseline)' }),
];

/**
 * The variant used when the autotune is off: register tiles with vec4 loads
 * run well on real GPUs and on SwiftShader, and 4x8 compiles in a fraction of
 * the time 8x8 takes on a software adapter.
 */
export const DEFAULT_MATMUL_VARIANT = 'reg4x8';

export const MATMUL_VARIANT_NAMES: readonly string[] = MATMUL_VARIANTS.map((v) => v.name);

/** The variant called `name`; a ConfigError naming `field` and the variants otherwise. */
export function requireMatmulVariant(field: string, name: unknown): MatmulVariant {
  const n = requireOneOf(field, name, MATMUL_VARIANT_NAMES);
  return MATMUL_VARIANTS.find((v) => v.name === n) as MatmulVariant;
}

export function matmulSpec(v: MatmulVariant, transA: boolean, transB: boolean): KernelSpec {
  return {
    file: 'matmul',
    source: matmulSrc,
    entry: v.kind === 'reg' ? `matmul_reg${v.tm}x${v.tn}` : v.kind === 'shared' ? 'matmul_shared' : 'matmul_naive',
    bindings: [U, R, R, W],
    consts: {
      TRANS_A: transA,
      TRANS_B: transB,
      TM: v.tm,
      TN: v.tn,
      WG_X: v.wgx,
      WG_Y: v.wgy,
      BK: v.bk,
    },
  };
}
