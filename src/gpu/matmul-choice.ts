/**
 * Which matmul variant each form (NN, NT, TN, TT) runs, and the encoding of a
 * matmul with a variant: one dispatch on the tensors as they are. The vec4
 * kinds (register, workgroup-memory and subgroup tiles) run their ragged
 * specialisation for an operand whose rows, or K, are not multiples of 4
 * (kernels.ts, raggedOperands).
 * The choice is the default variant (kernels.ts, DEFAULT_MATMUL_VARIANT), one
 * forced variant, or what the autotune (autotune.ts) found fastest.
 */
import type { MatmulOptions } from '../nn/backend.ts';
import { matmulDims } from '../nn/shapes.ts';
import { ConfigError } from '../util/errors.ts';
import type { GpuCore } from './gpu-core.ts';
import type { GpuTensor } from './gpu-tensor.ts';
import { DEFAULT_MATMUL_VARIANT, matmulSpec, needsVec4, raggedOperands, requireMatmulVariant, requireUsableVariant, type MatmulVariant } from './kernels.ts';
import { Params } from './uniforms.ts';

export type MatmulForm = 'NN' | 'NT' | 'TN' | 'TT';
export const MATMUL_FORMS: readonly MatmulForm[] = ['NN', 'NT', 'TN', 'TT'];

export function matmulForm(opts: MatmulOptions = {}): MatmulForm {
  return `${opts.transA ? 'T' : 'N'}${opts.transB ? 'T' : 'N'}` as MatmulForm;
}

export class MatmulChoice {
  private readonly choice: Record<MatmulForm, MatmulVariant>;

  /** `forced`: one variant for every form; default DEFAULT_MATMUL_VARIANT. */
  constructor(
    private readonly core: GpuCore,
    forced?: string,
  ) {
    const fixed = requireMatmulVariant('matmulVariant', forced ?? DEFAULT_MATMUL_VARIANT);
    requireUsableVariant('matmulVariant', fixed, core.subgroupSize);
    this.choice = { NN: fixed, NT: fixed, TN: fixed, TT: fixed };
  }

  /** The variant name each form uses now. */
  names(): Record<MatmulForm, string> {
    return { NN: this.choice.NN.name, NT: this.choice.NT.name, TN: this.choice.TN.name, TT: this.choice.TT.name };
  }

  /** Uses variant `v` for the given forms. */
  set(v: MatmulVariant, forms: readonly MatmulForm[]): void {
    requireUsableVariant('matmulVariant', v, this.core.subgroupSize);
    for (const f of forms) this.choice[f] = v;
  }

  get(form: MatmulForm): MatmulVariant {
    return this.choice[form];
  }

  /** Encodes out (+)= op(a) · op(b) with `variant` (null: the current choice for the form). */
  encode(variant: string | null, out: GpuTensor, a: GpuTensor, b: GpuTensor, opts: MatmulOptions, acc: boolean): void {
    const [M, N, Kd] = matmulDims(a, b, opts);
    const transA = !!opts.transA;
    const transB = !!opts.transB;
    const v = variant === null ? this.choice[matmulForm(opts)] : requireMatmulVariant('matmulVariant', variant);
    const [ar, ac] = a.shape;
    const [br, bc] = b.shape;
    const spec = matmulSpec(v, transA, transB, this.core.subgroupSize, raggedOperands(ac, bc, Kd));
    let groups: [number, number];
    if (needsVec4(v)) groups = [Math.ceil(N / (v.tn * Number(spec.consts?.WG_X))), Math.ceil(M / (v.tm * v.wgy))];
    else if (v.kind === 'shared') groups = [Math.ceil(N / (v.tn * v.wgx)), Math.ceil(M / (v.tm * v.wgy))];
    else groups = [Math.ceil(N / v.wgx), Math.ceil(M / v.wgy)];
    this.checkGroups(groups);
    const p = Params.of().U(M).U(N).U(Kd).U(ac).U(bc).U(ar).U(br).U(acc ? 1 : 0);
    this.core.run('matmul', spec, p, needsVec4(v) ? [null, a, b, out, a, b] : [null, a, b, out], groups);
  }

  private checkGroups(g: [number, number]): void {
    if (g[0] > 65535 || g[1] > 65535) throw new ConfigError('matmul shape', g, 'is too large for one dispatch (at most 65535 workgroups per axis)');
  }
}
