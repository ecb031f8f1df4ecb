/**
 * The kernel table: which WGSL file and entry point each op runs, its
 * bindings, and the matmul variants with their specialisation constants.
 */
import matmulCommonSrc from '../../shaders/matmul_common.wgsl?raw';
import matmulSrc from '../../shaders/matmul.wgsl?raw';
import matmulTiledSrc from '../../shaders/matmul_tiled.wgsl?raw';
import matmulSubgroupSrc from '../../shaders/matmul_subgroup.wgsl?raw';
import elementwiseSrc from '../../shaders/elementwise.wgsl?raw';
import normSrc from '../../shaders/norm.wgsl?raw';
import embeddingSrc from '../../shaders/embedding.wgsl?raw';
import softmaxXentSrc from '../../shaders/softmax_xent.wgsl?raw';
import optimizerSrc from '../../shaders/optimizer.wgsl?raw';
import { ConfigError, requireOneOf } from '../util/errors.ts';
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
  actFwd: ew('act_fwd', [U, R, null, W]),
  actBwd: ew('act_bwd', [U, R, R, W]),
  axpy: ew('axpy', [U, R, null, W]),
  scale: ew('scale', [U, null, null, W]),
  lnFwd: spec('norm', normSrc, 'ln_fwd', [U, R, R, R, W, W, W]),
  lnBwdInput: spec('norm', normSrc, 'ln_bwd_input', [U, R, R, R, R, R, W]),
  embGather: spec('embedding', embeddingSrc, 'emb_gather', [U, R, R, W]),
  embScatterAcc: spec('embedding', embeddingSrc, 'emb_scatter_acc', [U, R, R, W]),
  sxRows: spec('softmax_xent', softmaxXentSrc, 'sx_rows', [U, R, R, W, W]),
  sxReduce: spec('softmax_xent', softmaxXentSrc, 'sx_reduce', [U, R, null, W]),
  sgd: spec('optimizer', optimizerSrc, 'sgd', [U, R, W, W]),
  adamw: spec('optimizer', optimizerSrc, 'adamw', [U, R, W, W, W]),
} as const;

/** Threads per workgroup of the one-dimensional kernels (WG in the WGSL files). */
export const WG1D = 64;

/**
 * The matmul families: 'reg' register tiles with vec4 loads and no barriers,
 * 'tiled' workgroup-memory tiles with vec4 loads, 'subgroup' register tiles
 * whose subgroup shares the A block (needs the subgroups feature and one
 * subgroup size), 'shared' scalar shared-memory tiles, 'naive'.
 */
export type MatmulKind = 'reg' | 'tiled' | 'subgroup' | 'shared' | 'naive';

export interface MatmulVariant {
  readonly name: string;
  readonly kind: MatmulKind;
  /** Outputs per thread: rows, columns (multiples of 4 for the vec4 kinds). */
  readonly tm: number;
  readonly tn: number;
  /** Workgroup size: threads along columns, rows ('subgroup': 0 along columns, i.e. the device's subgroup size). */
  readonly wgx: number;
  readonly wgy: number;
  /** k-tile depth ('shared', 'tiled'). */
  readonly bk: number;
  readonly description: string;
}

function variant(v: Omit<MatmulVariant, 'bk'> & { bk?: number }): MatmulVariant {
  return { bk: 8, ...v };
}

/**
 * The kinds that read operands with vec4 loads: an operand whose stored rows
 * are not a multiple of 4 floats, or any operand when K is not, is ragged and
 * read by bounds-checked scalar loads in the same kernel (matmulSpec's
 * `ragged`; matmul_common.wgsl).
 */
export function needsVec4(v: MatmulVariant): boolean {
  return v.kind === 'reg' || v.kind === 'tiled' || v.kind === 'subgroup';
}

/** Every matmul variant; the autotune times the candidates among them and keeps the fastest. */
export const MATMUL_VARIANTS: readonly MatmulVariant[] = [
  variant({ name: 'reg4x4', kind: 'reg', tm: 4, tn: 4, wgx: 8, wgy: 8, description: 'register tile 4x4 per thread, vec4 loads, no barriers, 8x8 threads' }),
  variant({ name: 'reg8x4', kind: 'reg', tm: 8, tn: 4, wgx: 8, wgy: 8, description: 'register tile 8x4 per thread, vec4 loads, no barriers, 8x8 threads' }),
  variant({ name: 'reg4x8', kind: 'reg', tm: 4, tn: 8, wgx: 8, wgy: 8, description: 'register tile 4x8 per thread, vec4 loads, no barriers, 8x8 threads' }),
  variant({ name: 'reg8x8', kind: 'reg', tm: 8, tn: 8, wgx: 8, wgy: 8, description: 'register tile 8x8 per thread, vec4 loads, no barriers, 8x8 threads' }),
  variant({ name: 'tile64', kind: 'tiled', tm: 4, tn: 4, wgx: 16, wgy: 16, bk: 16, description: 'workgroup-memory 64x64x16 tiles, vec4 loads prefetched, 4x4 outputs per thread, 16x16 threads' }),
  variant({ name: 'tile128x64', kind: 'tiled', tm: 8, tn: 4, wgx: 16, wgy: 16, bk: 16, description: 'workgroup-memory 128x64x16 tiles, vec4 loads prefetched, 8x4 outputs per thread, 16x16 threads' }),
  variant({ name: 'tile128', kind: 'tiled', tm: 8, tn: 8, wgx: 16, wgy: 16, bk: 8, description: 'workgroup-memory 128x128x8 tiles, vec4 loads prefetched, 8x8 outputs per thread, 16x16 threads' }),
  variant({ name: 'sg8x4', kind: 'subgroup', tm: 8, tn: 4, wgx: 0, wgy: 1, description: 'one subgroup per workgroup, 8x4 outputs per lane, the A block shared by subgroupBroadcast' }),
  variant({ name: 'sg8x8', kind: 'subgroup', tm: 8, tn: 8, wgx: 0, wgy: 1, description: 'one subgroup per workgroup, 8x8 outputs per lane, the A block shared by subgroupBroadcast' }),
  variant({ name: 'shared64', kind: 'shared', tm: 4, tn: 4, wgx: 16, wgy: 16, bk: 16, description: 'shared-memory 64x64x16 tiles, 4x4 outputs per thread, 16x16 threads' }),
  variant({ name: 'shared32', kind: 'shared', tm: 2, tn: 2, wgx: 16, wgy: 16, bk: 16, description: 'shared-memory 32x32x16 tiles, 2x2 outputs per thread, 16x16 threads' }),
  variant({ name: 'naive', kind: 'naive', tm: 1, tn: 1, wgx: 16, wgy: 16, description: 'one output per thread (baseline)' }),
];

/** Bytes of workgroup memory a 'tiled' or 'shared' variant takes (0 for the others). */
export function workgroupBytes(v: MatmulVariant): number {
  if (v.kind !== 'tiled' && v.kind !== 'shared') return 0;
  return 4 * v.bk * (v.wgy * v.tm + v.wgx * v.tn);
}

// Every thread of a 'tiled' workgroup loads the same number of vec4 per tile (matmul_tiled.wgsl).
for (const v of MATMUL_VARIANTS) {
  if (v.kind !== 'tiled') continue;
  const threads = v.wgx * v.wgy;
  if (v.tm % 4 || v.tn % 4 || v.bk % 4 || ((v.wgy * v.tm * v.bk) / 4) % threads || ((v.wgx * v.tn * v.bk) / 4) % threads) {
    throw new Error(`matmul variant ${v.name}: tiles do not split evenly into vec4 loads per thread`);
  }
}

/**
 * The variant used when the autotune is off: register tiles with vec4 loads
 * run well on real GPUs and on SwiftShader, and 4x8 compiles in a fraction of
 * the time 8x8 takes on a software adapter.
 */
export const DEFAULT_MATMUL_VARIANT = 'reg4x8';

/**
 * Which operands of op(A)[M,K] · op(B)[K,N] a vec4 kernel must read as ragged:
 * `aCols`, `bCols` are the stored operands' columns (their row strides). Ragged:
 * a row stride that is not a multiple of 4 floats, or K not a multiple of 4
 * (the k-blocks of 4 would run past K).
 */
export function raggedOperands(aCols: number, bCols: number, K: number): [boolean, boolean] {
  return [aCols % 4 !== 0 || K % 4 !== 0, bCols % 4 !== 0 || K % 4 !== 0];
}

export const MATMUL_VARIANT_NAMES: readonly string[] = MATMUL_VARIANTS.map((v) => v.name);

/** The variant called `name`; a ConfigError naming `field` and the variants otherwise. */
export function requireMatmulVariant(field: string, name: unknown): MatmulVariant {
  const n = requireOneOf(field, name, MATMUL_VARIANT_NAMES);
  return MATMUL_VARIANTS.find((v) => v.name === n) as MatmulVariant;
}

/** Throws a ConfigError naming `field` when variant `v` cannot run on a device of this subgroup size (0: no subgroups). */
export function requireUsableVariant(field: string, v: MatmulVariant, subgroupSize: number): void {
  if (v.kind === 'subgroup' && !(subgroupSize >= 4)) {
    throw new ConfigError(field, v.name, 'needs an adapter with the "subgroups" feature and one subgroup size (this device has none)');
  }
}

/**
 * The kernel of variant `v` for one form. `subgroupSize` is the device's
 * (GpuCore.subgroupSize): a 'subgroup' variant lays out its workgroup as one
 * subgroup and needs it (a ConfigError without). `ragged` (the vec4 kinds):
 * whether A, B are ragged (raggedOperands), i.e. read by checked scalar loads.
 */
export function matmulSpec(v: MatmulVariant, transA: boolean, transB: boolean, subgroupSize = 0, ragged: readonly [boolean, boolean] = [false, false]): KernelSpec {
  let file = 'matmul';
  let source = matmulSrc;
  let entry = v.kind === 'reg' ? `matmul_reg${v.tm}x${v.tn}` : v.kind === 'shared' ? 'matmul_shared' : 'matmul_naive';
  let wgx = v.wgx;
  if (v.kind === 'tiled') {
    file = 'matmul_tiled';
    source = matmulTiledSrc;
    entry = 'matmul_tiled';
  } else if (v.kind === 'subgroup') {
    requireUsableVariant('matmulVariant', v, subgroupSize);
    file = 'matmul_subgroup';
    source = matmulSubgroupSrc;
    entry = `matmul_sg${v.tm}x${v.tn}`;
    wgx = subgroupSize;
  }
  return {
    file,
    source: matmulCommonSrc + source,
    entry,
    // The vec4 kinds also bind A and B as scalars (4, 5: their ragged loads).
    bindings: needsVec4(v) ? [U, R, R, W, R, R] : [U, R, R, W],
    consts: {
      TRANS_A: transA,
      TRANS_B: transB,
      TM: v.tm,
      TN: v.tn,
      WG_X: wgx,
      WG_Y: v.wgy,
      BK: v.bk,
      ...(v.kind === 'subgroup' ? { SG: subgroupSize } : {}),
      // Read only by the vec4 kinds (the others load scalars, checked, whatever the shape): false there, one pipeline.
      RAGGED_A: needsVec4(v) && ragged[0],
      RAGGED_B: needsVec4(v) && ragged[1],
    },
  };
}
