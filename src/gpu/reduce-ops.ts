/**
 * Sums over rows, per column (kernels in shaders/reduce_rows.wgsl): the bias
 * gradient (colSumAcc) and the LayerNorm weight gradients
 * (layerNormBackwardWeightAcc). The rows are cut into parts of `chunk` rows;
 * pass 1 sums each part per column into a [parts, cols] scratch buffer, pass 2
 * adds the parts into the outputs. With one part pass 1 accumulates directly
 * (one dispatch). GpuBackend's methods of the same names check their inputs
 * and call these; checked against the float64 reference in ops.test.ts (the
 * backend's own cut) and reduce-ops.test.ts (every kind of cut).
 */
import reduceRowsSrc from '../../shaders/reduce_rows.wgsl?raw';
import type { GpuCore } from './gpu-core.ts';
import type { GpuTensor } from './gpu-tensor.ts';
import type { BindingKind, KernelSpec } from './pipelines.ts';
import { WG1D } from './kernels.ts';
import { Params } from './uniforms.ts';

const U: BindingKind = 'uniform';
const R: BindingKind = 'read';
const W: BindingKind = 'rw';
const k = (entry: string, bindings: (BindingKind | null)[]): KernelSpec => ({ file: 'reduce_rows', source: reduceRowsSrc, entry, bindings });

export const REDUCE_KERNELS = {
  colSumPart: k('col_sum_part', [U, R, null, null, null, W]),
  lnWeightPart: k('ln_weight_part', [U, R, R, R, R, W, W]),
  sumParts: k('sum_parts', [U, R, null, null, null, W]),
  sumParts2: k('sum_parts2', [U, R, R, null, null, W, W]),
} as const;

/**
 * Rows per part for a sum over `rows` rows. A GPU wants many threads: about
 * √rows rows per part (at least 8), so both passes are short. A software
 * adapter (SwiftShader: workgroups spread over a few CPU threads, each
 * dispatch costly) wants one part up to 2048 rows, then parts of at least
 * 1024 rows, at most 8 of them.
 */
export function rowChunk(rows: number, isSoftware: boolean): number {
  const n = Math.max(1, rows);
  if (isSoftware) return n <= SOFTWARE_ONE_PART_ROWS ? n : Math.max(SOFTWARE_PART_ROWS, Math.ceil(n / SOFTWARE_MAX_PARTS));
  return Math.max(8, Math.ceil(Math.sqrt(n)), Math.ceil(n / 65535));
}
// Measured on SwiftShader (2 cores, process CPU time per call): at 512 and 1024 rows one part
// costs what the one-thread-per-column kernel did and any split costs more (the second
// dispatch); at 4096 × 64 parts of 1024 rows took half the time of one part.
const SOFTWARE_ONE_PART_ROWS = 2048;
const SOFTWARE_PART_ROWS = 1024;
const SOFTWARE_MAX_PARTS = 8;

interface Cut {
  parts: number;
  params: Params;
  groups: [number, number];
}

function cut(core: GpuCore, rows: number, cols: number, chunk: number): Cut {
  const c = Math.max(1, Math.min(Math.ceil(chunk), Math.max(1, rows)));
  const parts = Math.max(1, Math.ceil(rows / c));
  const params = Params.of().U(rows).U(cols).U(c).U(parts).U(parts === 1 ? 1 : 0).U(0).U(0).U(0);
  return { parts, params, groups: [Math.max(1, Math.min(Math.ceil(cols / WG1D), 65535)), parts] };
}

/** out[c] += Σ_r dy[r, c] (dy [rows, cols], out [cols]); `chunk`: rows per part (default rowChunk). */
export function colSumAcc(core: GpuCore, out: GpuTensor, dy: GpuTensor, rows: number, cols: number, chunk = rowChunk(rows, core.isSoftware)): void {
  const { parts, params, groups } = cut(core, rows, cols, chunk);
  if (parts === 1) {
    core.run('colSumAcc', REDUCE_KERNELS.colSumPart, params, [null, dy, null, null, null, out], groups);
    return;
  }
  const part = core.temp(parts * cols * 4);
  core.run('colSumAcc', REDUCE_KERNELS.colSumPart, params, [null, dy, null, null, null, part], groups);
  core.run('colSumAcc', REDUCE_KERNELS.sumParts, params, [null, part, null, null, null, out], core.grid(cols));
  core.stream.releaseAfterSubmit(part);
}

/** dgamma[c] += Σ_r dy·x̂, dbeta[c] += Σ_r dy, x̂ = (x - mean[r]) · rstd[r]; `chunk` as colSumAcc's. */
export function layerNormWeightAcc(
  core: GpuCore,
  dgamma: GpuTensor,
  dbeta: GpuTensor,
  x: GpuTensor,
  mean: GpuTensor,
  rstd: GpuTensor,
  dy: GpuTensor,
  rows: number,
  cols: number,
  chunk = rowChunk(rows, core.isSoftware),
): void {
  const { parts, params, groups } = cut(core, rows, cols, chunk);
  const op = 'layerNormBackwardWeightAcc';
  if (parts === 1) {
    core.run(op, REDUCE_KERNELS.lnWeightPart, params, [null, x, mean, rstd, dy, dgamma, dbeta], groups);
    return;
  }
  const pg = core.temp(parts * cols * 4);
  const pb = core.temp(parts * cols * 4);
  core.run(op, REDUCE_KERNELS.lnWeightPart, params, [null, x, mean, rstd, dy, pg, pb], groups);
  core.run(op, REDUCE_KERNELS.sumParts2, params, [null, pg, pb, null, null, dgamma, dbeta], core.grid(cols));
  core.stream.releaseAfterSubmit(pg);
  core.stream.releaseAfterSubmit(pb);
}
