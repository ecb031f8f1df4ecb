/**
 * The mixture-of-experts ops of the float64 CPU reference (cpu-backend.ts delegates here): the shapes checked by
 * moe-shapes.ts, the values computed by moe-reference.ts.
 */
import { ConfigError } from '../../util/errors.ts';
import type { MatmulOptions, MoeRoute, Tensor } from '../backend.ts';
import { CpuTensor, floats, ints } from '../cpu-tensor.ts';
import { check2d, checkSameShape } from '../shapes.ts';
import { auxLossRef, LOAD_COLS, combineBackwardRef, combineRef, dispatchBackwardRef, dispatchRef, gatesBackwardRef, gatesRef, routeRef, softmaxRowsBackwardRef, softmaxRowsRef } from './moe-reference.ts';
import { checkRows, checkRowToken, choiceDims, groupedDims, routeDims } from './moe-shapes.ts';

export function softmaxRows(x: Tensor): CpuTensor {
  const [n, c] = check2d('softmaxRows x', x);
  return new CpuTensor([n, c], 'f32', softmaxRowsRef(floats(x), n, c));
}

export function softmaxRowsBackward(p: Tensor, dp: Tensor): CpuTensor {
  const [n, c] = check2d('softmaxRowsBackward p', p);
  checkSameShape('softmaxRowsBackward dp', dp, p, 'p');
  return new CpuTensor([n, c], 'f32', softmaxRowsBackwardRef(floats(p), floats(dp), n, c));
}

export function moeRoute(probs: Tensor, k: number, capacity: number): MoeRoute {
  const { S, E } = routeDims('moeRoute', probs, k, capacity);
  const r = routeRef(floats(probs), S, E, k, capacity);
  return {
    sel: new CpuTensor([S, k], 'i32', r.sel), slot: new CpuTensor([S, k], 'i32', r.slot), rowToken: new CpuTensor([E * capacity], 'i32', r.rowToken),
    load: new CpuTensor([E, LOAD_COLS], 'f32', r.load),
  };
}

export function moeGates(probs: Tensor, sel: Tensor): CpuTensor {
  const [S, E] = check2d('moeGates probs', probs);
  const { k } = choiceDims('moeGates sel', sel, S);
  return new CpuTensor([S, k], 'f32', gatesRef(floats(probs), ints(sel), S, E, k));
}

export function moeGatesBackward(probs: Tensor, sel: Tensor, dGates: Tensor): CpuTensor {
  const [S, E] = check2d('moeGatesBackward probs', probs);
  const { k } = choiceDims('moeGatesBackward sel', sel, S);
  checkRows('moeGatesBackward dGates', dGates, S, k);
  return new CpuTensor([S, E], 'f32', gatesBackwardRef(floats(probs), ints(sel), floats(dGates), S, E, k));
}

export function moeAuxLoss(probs: Tensor, sel: Tensor): { loss: CpuTensor; dProbs: CpuTensor } {
  const [S, E] = check2d('moeAuxLoss probs', probs);
  const { k } = choiceDims('moeAuxLoss sel', sel, S);
  const r = auxLossRef(floats(probs), ints(sel), S, E, k);
  return { loss: new CpuTensor([1], 'f32', Float64Array.of(r.loss)), dProbs: new CpuTensor([S, E], 'f32', r.dprobs) };
}

export function moeDispatch(x: Tensor, rowToken: Tensor, k: number): CpuTensor {
  const [, C] = check2d('moeDispatch x', x);
  const R = checkRowToken('moeDispatch rowToken', rowToken);
  return new CpuTensor([R, C], 'f32', dispatchRef(floats(x), ints(rowToken), C, k));
}

export function moeDispatchBackward(dxe: Tensor, slot: Tensor): CpuTensor {
  const [, C] = check2d('moeDispatchBackward dxe', dxe);
  const { S, k } = choiceDims('moeDispatchBackward slot', slot);
  return new CpuTensor([S, C], 'f32', dispatchBackwardRef(floats(dxe), ints(slot), S, k, C));
}

export function moeCombine(ye: Tensor, slot: Tensor, gates: Tensor): CpuTensor {
  const [, C] = check2d('moeCombine ye', ye);
  const { S, k } = choiceDims('moeCombine slot', slot);
  checkRows('moeCombine gates', gates, S, k);
  return new CpuTensor([S, C], 'f32', combineRef(floats(ye), ints(slot), floats(gates), S, k, C));
}

export function moeCombineBackward(dy: Tensor, ye: Tensor, slot: Tensor, gates: Tensor, rowToken: Tensor): { dye: CpuTensor; dGates: CpuTensor } {
  const [R, C] = check2d('moeCombineBackward ye', ye);
  const { S, k } = choiceDims('moeCombineBackward slot', slot);
  checkRows('moeCombineBackward dy', dy, S, C);
  checkRows('moeCombineBackward gates', gates, S, k);
  if (checkRowToken('moeCombineBackward rowToken', rowToken) !== R) throw new ConfigError('moeCombineBackward rowToken.shape', rowToken.shape, `must be [${R}], one per row of ye`);
  const r = combineBackwardRef(floats(dy), floats(ye), ints(slot), floats(gates), ints(rowToken), S, k, C);
  return { dye: new CpuTensor([R, C], 'f32', r.dye), dGates: new CpuTensor([S, k], 'f32', r.dgates) };
}


/** The per-group views of a grouped matmul's operands (sharing their storage): part g is matmul(a_g, b_g) into out_g. */
export function groupViews(out: Tensor, a: Tensor, b: Tensor, groups: number, opts: MatmulOptions): { out: CpuTensor; a: CpuTensor; b: CpuTensor }[] {
  const { M, N, ar, br } = groupedDims(a, b, groups, opts);
  checkRows('groupedMatmul out', out, groups * M, N);
  const A = floats(a), B = floats(b), O = floats(out);
  const ac = a.shape[1], bc = b.shape[1];
  const view = (arr: Float64Array, g: number, rows: number, cols: number) => new CpuTensor([rows, cols], 'f32', arr.subarray(g * rows * cols, (g + 1) * rows * cols));
  return Array.from({ length: groups }, (_, g) => ({ out: view(O, g, M, N), a: view(A, g, ar, ac), b: view(B, g, br, bc) }));
}
