/**
 * The mixture-of-experts ops of the WebGPU backend (kernels in shaders/moe.wgsl, layouts and shape rules in
 * src/nn/moe/moe-shapes.ts). GpuBackend's methods of the same names call these; checked against the float64
 * reference in moe-ops.test.ts. The routing tensors (sel, slot, rowToken, the load counts) are computed on the device:
 * they have no host copy, and nothing here waits for the GPU.
 */
import moeSrc from '../../shaders/moe.wgsl?raw';
import { ConfigError } from '../util/errors.ts';
import type { MatmulOptions, MoeRoute, Tensor } from '../nn/backend.ts';
import { checkRows, checkRowToken, choiceDims, groupedDims, routeDims } from '../nn/moe/moe-shapes.ts';
import { check2d, checkDType, checkSameShape } from '../nn/shapes.ts';
import type { GpuTensor } from './gpu-tensor.ts';
import type { BindingKind, KernelSpec } from './pipelines.ts';

/** What the MoE ops need from the backend: checked inputs, allocation (i32 too), a launch, and a release. */
export interface MoeOpHost {
  own(field: string, t: Tensor): GpuTensor;
  f32(field: string, t: Tensor): GpuTensor;
  alloc(shape: readonly number[], dtype: 'f32' | 'i32'): GpuTensor;
  dispose(t: Tensor): void;
  /** Dispatches `spec` over a grid-stride range of n items (workgroups: null, the one-thread kernel). */
  launch(op: string, spec: KernelSpec, params: Uint8Array, bindings: readonly (GpuTensor | null)[], n: number | null): void;
}

const U: BindingKind = 'uniform';
const R: BindingKind = 'read';
const W: BindingKind = 'rw';
const _ = null;
const k = (entry: string, bindings: (BindingKind | null)[]): KernelSpec => ({ file: 'moe', source: moeSrc, entry, bindings });

export const MOE_KERNELS = {
  softmax: k('softmax_rows', [U, R, _, _, _, W]),
  softmaxBwd: k('softmax_rows_bwd', [U, R, R, _, _, W]),
  topk: k('moe_topk', [U, R, _, _, _, _, W]),
  capacity: k('moe_capacity', [U, _, _, R, _, W, W, W]),
  gates: k('moe_gates', [U, R, _, R, _, W]),
  gatesBwd: k('moe_gates_bwd', [U, R, R, R, _, W]),
  aux: k('moe_aux', [U, R, _, R, _, W, _, _, W]),
  auxSum: k('moe_aux_sum', [U, R, _, _, _, W]),
  dispatch: k('moe_dispatch', [U, R, _, R, _, W]),
  dispatchBwd: k('moe_dispatch_bwd', [U, R, _, R, _, W]),
  combine: k('moe_combine', [U, R, R, R, _, W]),
  combineBwdRows: k('moe_combine_bwd_rows', [U, R, R, R, _, W]),
  combineBwdGates: k('moe_combine_bwd_gates', [U, R, R, R, _, W]),
  grouped: k('grouped_matmul', [U, R, R, _, _, W]),
} as const;

/** The uniform block of moe.wgsl (Params), in field order. */
function params(f: Partial<Record<'n' | 'S' | 'E' | 'k' | 'C' | 'cap' | 'M' | 'N' | 'K' | 'ac' | 'bc' | 'flags', number>>): Uint8Array {
  const order = ['n', 'S', 'E', 'k', 'C', 'cap', 'M', 'N', 'K', 'ac', 'bc', 'flags'] as const;
  return new Uint8Array(Uint32Array.from(order.map((key) => f[key] ?? 0)).buffer);
}

function i32(g: MoeOpHost, field: string, t: Tensor): GpuTensor {
  const o = g.own(field, t);
  checkDType(field, o, 'i32');
  return o;
}

export function softmaxRows(g: MoeOpHost, x: Tensor): GpuTensor {
  const [n, E] = check2d('softmaxRows x', x);
  const X = g.f32('softmaxRows x', x);
  const out = g.alloc([n, E], 'f32');
  g.launch('softmaxRows', MOE_KERNELS.softmax, params({ n, E }), [null, X, null, null, null, out], n);
  return out;
}

export function softmaxRowsBackward(g: MoeOpHost, p: Tensor, dp: Tensor): GpuTensor {
  const [n, E] = check2d('softmaxRowsBackward p', p);
  checkSameShape('softmaxRowsBackward dp', dp, p, 'p');
  const P = g.f32('softmaxRowsBackward p', p), DP = g.f32('softmaxRowsBackward dp', dp);
  const out = g.alloc([n, E], 'f32');
  g.launch('softmaxRowsBackward', MOE_KERNELS.softmaxBwd, params({ n, E }), [null, P, DP, null, null, out], n);
  return out;
}

export function moeRoute(g: MoeOpHost, probs: Tensor, kk: number, cap: number): MoeRoute {
  const { S, E } = routeDims('moeRoute', probs, kk, cap);
  const P = g.f32('moeRoute probs', probs);
  const sel = g.alloc([S, kk], 'i32'), slot = g.alloc([S, kk], 'i32'), rowToken = g.alloc([E * cap], 'i32'), load = g.alloc([E, 3], 'f32');
  const u = params({ S, E, k: kk, cap });
  g.launch('moeRoute', MOE_KERNELS.topk, u, [null, P, null, null, null, null, sel], S);
  g.launch('moeRoute', MOE_KERNELS.capacity, u, [null, null, null, sel, null, load, slot, rowToken], E);
  return { sel, slot, rowToken, load };
}

export function moeGates(g: MoeOpHost, probs: Tensor, sel: Tensor): GpuTensor {
  const [S, E] = check2d('moeGates probs', probs);
  const { k: kk } = choiceDims('moeGates sel', sel, S);
  const out = g.alloc([S, kk], 'f32');
  g.launch('moeGates', MOE_KERNELS.gates, params({ S, E, k: kk }), [null, g.f32('moeGates probs', probs), null, i32(g, 'moeGates sel', sel), null, out], S);
  return out;
}

export function moeGatesBackward(g: MoeOpHost, probs: Tensor, sel: Tensor, dGates: Tensor): GpuTensor {
  const [S, E] = check2d('moeGatesBackward probs', probs);
  const { k: kk } = choiceDims('moeGatesBackward sel', sel, S);
  checkRows('moeGatesBackward dGates', dGates, S, kk);
  const out = g.alloc([S, E], 'f32');
  const b = [null, g.f32('moeGatesBackward probs', probs), g.f32('moeGatesBackward dGates', dGates), i32(g, 'moeGatesBackward sel', sel), null, out];
  g.launch('moeGatesBackward', MOE_KERNELS.gatesBwd, params({ S, E, k: kk }), b, S);
  return out;
}

export function moeAuxLoss(g: MoeOpHost, probs: Tensor, sel: Tensor): { loss: GpuTensor; dProbs: GpuTensor } {
  const [S, E] = check2d('moeAuxLoss probs', probs);
  const { k: kk } = choiceDims('moeAuxLoss sel', sel, S);
  const dProbs = g.alloc([S, E], 'f32'), parts = g.alloc([E], 'f32'), loss = g.alloc([1], 'f32');
  const u = params({ S, E, k: kk });
  g.launch('moeAuxLoss', MOE_KERNELS.aux, u, [null, g.f32('moeAuxLoss probs', probs), null, i32(g, 'moeAuxLoss sel', sel), null, dProbs, null, null, parts], E);
  g.launch('moeAuxLoss', MOE_KERNELS.auxSum, u, [null, parts, null, null, null, loss], null);
  g.dispose(parts);
  return { loss, dProbs };
}

export function moeDispatch(g: MoeOpHost, x: Tensor, rowToken: Tensor, kk: number): GpuTensor {
  const [, C] = check2d('moeDispatch x', x);
  const R = checkRowToken('moeDispatch rowToken', rowToken);
  const out = g.alloc([R, C], 'f32');
  g.launch('moeDispatch', MOE_KERNELS.dispatch, params({ n: R * C, C, k: kk }), [null, g.f32('moeDispatch x', x), null, i32(g, 'moeDispatch rowToken', rowToken), null, out], R * C);
  return out;
}

export function moeDispatchBackward(g: MoeOpHost, dxe: Tensor, slot: Tensor): GpuTensor {
  const [, C] = check2d('moeDispatchBackward dxe', dxe);
  const { S, k: kk } = choiceDims('moeDispatchBackward slot', slot);
  const out = g.alloc([S, C], 'f32');
  const b = [null, g.f32('moeDispatchBackward dxe', dxe), null, i32(g, 'moeDispatchBackward slot', slot), null, out];
  g.launch('moeDispatchBackward', MOE_KERNELS.dispatchBwd, params({ n: S * C, C, k: kk }), b, S * C);
  return out;
}

export function moeCombine(g: MoeOpHost, ye: Tensor, slot: Tensor, gates: Tensor): GpuTensor {
  const [, C] = check2d('moeCombine ye', ye);
  const { S, k: kk } = choiceDims('moeCombine slot', slot);
  checkRows('moeCombine gates', gates, S, kk);
  const out = g.alloc([S, C], 'f32');
  const b = [null, g.f32('moeCombine ye', ye), g.f32('moeCombine gates', gates), i32(g, 'moeCombine slot', slot), null, out];
  g.launch('moeCombine', MOE_KERNELS.combine, params({ n: S * C, C, k: kk }), b, S * C);
  return out;
}

export function moeCombineBackward(g: MoeOpHost, dy: Tensor, ye: Tensor, slot: Tensor, gates: Tensor, rowToken: Tensor): { dye: GpuTensor; dGates: GpuTensor } {
  const [R, C] = check2d('moeCombineBackward ye', ye);
  const { S, k: kk } = choiceDims('moeCombineBackward slot', slot);
  checkRows('moeCombineBackward dy', dy, S, C);
  checkRows('moeCombineBackward gates', gates, S, kk);
  if (checkRowToken('moeCombineBackward rowToken', rowToken) !== R) throw new ConfigError('moeCombineBackward rowToken.shape', rowToken.shape, `must be [${R}], one per row of ye`);
  const DY = g.f32('moeCombineBackward dy', dy), YE = g.f32('moeCombineBackward ye', ye), G = g.f32('moeCombineBackward gates', gates);
  const dye = g.alloc([R, C], 'f32'), dGates = g.alloc([S, kk], 'f32');
  g.launch('moeCombineBackward', MOE_KERNELS.combineBwdRows, params({ n: R * C, C, k: kk }), [null, DY, G, i32(g, 'moeCombineBackward rowToken', rowToken), null, dye], R * C);
  g.launch('moeCombineBackward', MOE_KERNELS.combineBwdGates, params({ n: S * kk, C, k: kk }), [null, DY, YE, i32(g, 'moeCombineBackward slot', slot), null, dGates], S * kk);
  return { dye, dGates };
}

export function groupedMatmul(g: MoeOpHost, out: GpuTensor | null, a: Tensor, b: Tensor, groups: number, opts: MatmulOptions = {}): GpuTensor {
  const { M, N, K } = groupedDims(a, b, groups, opts);
  const A = g.f32('groupedMatmul a', a), B = g.f32('groupedMatmul b', b);
  if (out) checkRows('groupedMatmul out', out, groups * M, N);
  const o = out ?? g.alloc([groups * M, N], 'f32');
  const flags = (opts.transA ? 1 : 0) | (opts.transB ? 2 : 0) | (out ? 4 : 0);
  const n = groups * M * N;
  g.launch('groupedMatmul', MOE_KERNELS.grouped, params({ n, M, N, K, ac: A.shape[1], bc: B.shape[1], flags }), [null, A, B, null, null, o], n);
  return o;
}
