/**
 * Pipeline cache: one shader module per (WGSL file, specialisation constants),
 * one compute pipeline per (module, entry point), with explicit bind group
 * layouts so an entry point may leave some bindings of its file unused.
 *
 * Specialisation constants are the only WGSL the host writes: each becomes one
 * line `const NAME = value;` prepended to the file (booleans as bool, integers
 * as u32, other numbers as f32). Global directives in the source (`enable`,
 * `requires`, `diagnostic(...)` lines) are moved above those lines, where WGSL
 * wants them, so a file may sit after another (matmul_common.wgsl + a family).
 */

/** What sits at one binding: the uniform params block, a read-only or a read-write storage buffer. */
export type BindingKind = 'uniform' | 'read' | 'rw';

export type ConstValue = boolean | number;

export interface KernelSpec {
  /** Short name of the WGSL file (for labels and cache keys), e.g. 'matmul'. */
  file: string;
  /** The WGSL source of that file. */
  source: string;
  entry: string;
  /** Binding number -> kind; null (or a hole) for a binding the entry point does not use. */
  bindings: readonly (BindingKind | null)[];
  consts?: Readonly<Record<string, ConstValue>>;
}

export function constPrefix(consts: Readonly<Record<string, ConstValue>> | undefined): string {
  if (!consts) return '';
  let out = '';
  for (const name of Object.keys(consts).sort()) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`bad specialisation constant name ${name}`);
    const v = consts[name];
    let lit: string;
    if (typeof v === 'boolean') lit = v ? 'true' : 'false';
    else if (Number.isInteger(v) && v >= 0 && v <= 0xffffffff) lit = `${v}u`;
    else if (Number.isFinite(v)) lit = `${v}f`;
    else throw new Error(`bad specialisation constant ${name} = ${v}`);
    out += `const ${name} = ${lit};\n`;
  }
  return out;
}

const DIRECTIVE_LINE = /^[ \t]*(?:enable|requires)[ \t][^;\n]*;[ \t]*$|^[ \t]*diagnostic[ \t]*\([^;\n]*\)[ \t]*;[ \t]*$/gm;

/** The WGSL module for `source` with constants `prefix`: global directives first, then the constants, then the rest. */
export function moduleCode(prefix: string, source: string): string {
  const directives = source.match(DIRECTIVE_LINE) ?? [];
  const body = directives.length ? source.replace(DIRECTIVE_LINE, '') : source;
  return directives.map((d) => `${d.trim()}\n`).join('') + prefix + body;
}

export class PipelineCache {
  private readonly modules = new Map<string, GPUShaderModule>();
  private readonly pipelines = new Map<string, GPUComputePipeline>();
  private readonly layouts = new Map<string, { bgl: GPUBindGroupLayout; pl: GPUPipelineLayout }>();

  constructor(private readonly device: GPUDevice) {}

  get size(): number {
    return this.pipelines.size;
  }

  key(spec: KernelSpec): string {
    return `${spec.file}#${spec.entry}|${constPrefix(spec.consts).replace(/\n/g, ' ')}`;
  }

  layout(bindings: readonly (BindingKind | null)[]): { bgl: GPUBindGroupLayout; pl: GPUPipelineLayout } {
    const key = bindings.map((b) => b ?? '-').join(',');
    let l = this.layouts.get(key);
    if (!l) {
      const entries: GPUBindGroupLayoutEntry[] = [];
      bindings.forEach((kind, binding) => {
        if (!kind) return;
        const type: GPUBufferBindingType = kind === 'uniform' ? 'uniform' : kind === 'read' ? 'read-only-storage' : 'storage';
        entries.push({ binding, visibility: GPUShaderStage.COMPUTE, buffer: { type } });
      });
      const bgl = this.device.createBindGroupLayout({ label: key, entries });
      const pl = this.device.createPipelineLayout({ label: key, bindGroupLayouts: [bgl] });
      l = { bgl, pl };
      this.layouts.set(key, l);
    }
    return l;
  }

  get(spec: KernelSpec): { pipeline: GPUComputePipeline; bgl: GPUBindGroupLayout } {
    const key = this.key(spec);
    const l = this.layout(spec.bindings);
    let pipeline = this.pipelines.get(key);
    if (!pipeline) {
      pipeline = this.device.createComputePipeline({
        label: key,
        layout: l.pl,
        compute: { module: this.module(spec), entryPoint: spec.entry },
      });
      this.pipelines.set(key, pipeline);
    }
    return { pipeline, bgl: l.bgl };
  }

  /** The cache keys of the pipelines built so far (which kernels this device compiled). */
  keys(): string[] {
    return [...this.pipelines.keys()];
  }

  /**
   * Builds the pipelines of `specs` not yet cached, all at once with
   * createComputePipelineAsync (the driver may compile them in parallel, and
   * the caller's thread is free meanwhile). Resolves with how many were built.
   */
  async prepare(specs: Iterable<KernelSpec>): Promise<number> {
    const todo = new Map<string, KernelSpec>();
    for (const spec of specs) {
      const key = this.key(spec);
      if (!this.pipelines.has(key)) todo.set(key, spec);
    }
    const built = await Promise.all(
      [...todo].map(async ([key, spec]) => {
        const pipeline = await this.device.createComputePipelineAsync({
          label: key,
          layout: this.layout(spec.bindings).pl,
          compute: { module: this.module(spec), entryPoint: spec.entry },
        });
        return [key, pipeline] as const;
      }),
    );
    for (const [key, pipeline] of built) if (!this.pipelines.has(key)) this.pipelines.set(key, pipeline);
    return built.length;
  }

  private module(spec: KernelSpec): GPUShaderModule {
    const prefix = constPrefix(spec.consts);
    const mkey = `${spec.file}|${prefix}`;
    let m = this.modules.get(mkey);
    if (!m) {
      m = this.device.createShaderModule({ label: `${spec.file}.wgsl`, code: moduleCode(prefix, spec.source) });
      this.modules.set(mkey, m);
    }
    return m;
  }

  clear(): void {
    this.modules.clear();
    this.pipelines.clear();
    this.layouts.clear();
  }
}
