/**
 * The matmul autotune: times the variants at representative sizes on this
 * device and keeps the fastest per tuned form (untuned forms take the NN
 * winner). Used by the benchmark and tests (GpuBackend.create({ autotune })
 * or backend.autotune()); the app runs the default variant.
 */
import { ConfigError } from '../util/errors.ts';
import type { MatmulOptions, Tensor } from '../nn/backend.ts';
import type { GpuCore } from './gpu-core.ts';
import { MATMUL_VARIANTS, matmulSpec, requireMatmulVariant, requireUsableVariant, type MatmulVariant } from './kernels.ts';
import { MATMUL_FORMS, type MatmulChoice, type MatmulForm } from './matmul-choice.ts';
import type { SpanResult } from './timing.ts';

export interface AutotuneOptions {
  /** Problem sizes [M, N, K] to time; the variant with the least total time wins. Default: autotuneDefaults (256³, and 1024³ on hardware). */
  sizes?: readonly (readonly [number, number, number])[];
  /** Timed repeats per variant and size (median kept). Default 3. */
  repeats?: number;
  /** Variant names to try. Default: defaultCandidates (every variant except 'naive'; subgroup ones where the device has subgroups; on a software adapter no workgroup-memory ones). */
  candidates?: readonly string[];
  /** Forms tuned separately; the others take the NN winner. Default: autotuneDefaults (NN on a software adapter, where pipeline compiles dominate; NN, NT, TN on hardware). */
  forms?: readonly MatmulForm[];
  /** A candidate whose warm-up run is this many times slower than the best so far is not timed further. Default 3. */
  skipFactor?: number;
}

export interface AutotuneTiming {
  variant: string;
  /** Median milliseconds per size, in the order of `sizes`. */
  ms: number[];
  /** GFLOP/s over all sizes (total flops / total median time). */
  gflops: number;
  /** Only the warm-up run was timed (it was far slower than the best). */
  skipped: boolean;
}

export interface AutotuneReport {
  sizes: [number, number, number][];
  timingSource: SpanResult['source'];
  forms: { form: MatmulForm; winner: string; gflops: number; timings: AutotuneTiming[] }[];
  /** Time spent compiling the candidates' pipelines, and in all. */
  compileMs: number;
  totalMs: number;
}

/**
 * Each candidate gets one warm-up run per size; one more than `skipFactor`
 * times slower than the best so far is not timed further (it cannot win).
 */
/** What the autotuner needs of a backend: the core's buffers and timing, and a matmul by variant name. */
export interface AutotuneHost extends GpuCore {
  matmulAccWith(variant: string | null, out: Tensor, a: Tensor, b: Tensor, opts?: MatmulOptions): void;
}

export async function autotuneMatmul(be: AutotuneHost, choice: MatmulChoice, o: AutotuneOptions = {}): Promise<AutotuneReport> {
  const t0 = now();
  const defaults = autotuneDefaults(be);
  const sizes = (o.sizes ?? defaults.sizes).map((s) => [s[0], s[1], s[2]] as [number, number, number]);
  const repeats = o.repeats ?? 3;
  const skipFactor = o.skipFactor ?? 3;
  const candidates = o.candidates ? o.candidates.map((n) => requireMatmulVariant('autotune candidates', n)) : defaultCandidates(be);
  for (const v of candidates) requireUsableVariant('autotune candidates', v, be.subgroupSize);
  if (candidates.length === 0) throw new ConfigError('autotune candidates', [], 'must name at least one variant');
  const forms = o.forms ?? defaults.forms;
  // Compile first, off the clock (pipeline creation is slow on software adapters).
  for (const f of forms) for (const v of candidates) be.precompile(matmulSpec(v, f[0] === 'T', f[1] === 'T', be.subgroupSize));
  const compileMs = now() - t0;
  const report: AutotuneReport = { sizes, timingSource: be.hasTimestamps ? 'timestamp' : 'wall', forms: [], compileMs, totalMs: 0 };
  for (const form of forms) {
    const opts = { transA: form[0] === 'T', transB: form[1] === 'T' };
    const timings: AutotuneTiming[] = candidates.map((v) => ({ variant: v.name, ms: [], gflops: 0, skipped: false }));
    let flops = 0;
    for (const [M, N, Kd] of sizes) {
      flops += 2 * M * N * Kd;
      const a = be.tensor(randomData(M * Kd), opts.transA ? [Kd, M] : [M, Kd]);
      const b = be.tensor(randomData(Kd * N), opts.transB ? [N, Kd] : [Kd, N]);
      const c = be.zeros([M, N]);
      await be.sync();
      let best = Infinity;
      for (let vi = 0; vi < candidates.length; vi++) {
        const v = candidates[vi];
        const warm = (await be.time(() => be.matmulAccWith(v.name, c, a, b, opts))).ms;
        const runs: number[] = [warm];
        if (warm <= skipFactor * best) {
          runs.length = 0;
          for (let r = 0; r < repeats; r++) runs.push((await be.time(() => be.matmulAccWith(v.name, c, a, b, opts))).ms);
        } else {
          timings[vi].skipped = true;
        }
        runs.sort((x, y) => x - y);
        const med = runs[Math.floor(runs.length / 2)];
        timings[vi].ms.push(med);
        best = Math.min(best, med);
      }
      be.dispose(a);
      be.dispose(b);
      be.dispose(c);
    }
    let bi = 0;
    timings.forEach((t, i) => {
      const total = t.ms.reduce((x, y) => x + y, 0);
      t.gflops = total > 0 ? flops / (total * 1e6) : 0;
      if (t.gflops > timings[bi].gflops) bi = i;
    });
    choice.set(candidates[bi], [form]);
    report.forms.push({ form, winner: candidates[bi].name, gflops: timings[bi].gflops, timings });
  }
  const untuned = MATMUL_FORMS.filter((f) => !forms.includes(f));
  choice.set(choice.get(forms.includes('NN') ? 'NN' : forms[0]), untuned);
  await be.sync();
  report.totalMs = now() - t0;
  return report;
}

/**
 * The default sizes and forms. A software adapter: 256³, NN only (each
 * pipeline takes a second or more to compile there, and the other forms do as
 * NN does). Hardware: 256³ and 1024³, whose time dominates the total (the
 * workgroup-memory kernels pay off at the big sizes, where time is spent), and
 * NN, NT, TN separately (their loads differ: a transposed operand is stored
 * through workgroup memory differently).
 */
export function autotuneDefaults(be: Pick<GpuCore, 'isSoftware'>): { sizes: [number, number, number][]; forms: MatmulForm[] } {
  return be.isSoftware
    ? { sizes: [[256, 256, 256]], forms: ['NN'] }
    : {
        sizes: [
          [256, 256, 256],
          [1024, 1024, 1024],
        ],
        forms: ['NN', 'NT', 'TN'],
      };
}

/**
 * The default candidates: every variant but 'naive'; the subgroup ones only
 * where the device has subgroups of one size; on a software adapter
 * (SwiftShader: barriers are emulated, and each such pipeline takes seconds to
 * compile) none of the workgroup-memory ones.
 */
export function defaultCandidates(be: Pick<GpuCore, 'isSoftware' | 'subgroupSize'>): MatmulVariant[] {
  return MATMUL_VARIANTS.filter((v) => {
    if (v.kind === 'naive') return false;
    if (v.kind === 'subgroup') return be.subgroupSize >= 4;
    if (v.kind === 'shared' || v.kind === 'tiled') return !be.isSoftware;
    return true;
  });
}

function now(): number {
  return typeof performance !== 'undefined' ? performance.now() : Date.now();
}

function randomData(n: number): Float32Array {
  const a = new Float32Array(n);
  let s = 0x9e3779b9;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = s / 4294967296 - 0.5;
  }
  return a;
}
