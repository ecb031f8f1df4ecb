/**
 * `npm run bench:node`: the kernels and training suites in Node on Dawn (the npm
 * package `webgpu`), the same functions the bench page runs, PipeLab beside
 * TensorFlow.js's WebGPU backend in one process on one adapter. Dawn uses the
 * machine's Vulkan driver as the tests and `npm run bench` choose it: SwiftShader
 * (Debian's chromium package) unless PIPELAB_REAL_GPU=1 or VK_ICD_FILENAMES says otherwise.
 *
 * It is bundled first (scripts/bundle-dawn-bench.mjs: WGSL inlined, `webgpu`
 * left outside), so the one file also runs on a machine that has only Node and
 * the `webgpu` package (how bench/GPU.md's figures were taken).
 *
 *   npm run bench:node -- [--quick] [--big] [--out DIR]     (--big adds 1024³ and 2048³ matmuls)
 *   PIPELAB_REAL_GPU=1 npm run bench:node                  (the machine's GPU)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { nodeGpu } from '../../gpu/testing/node-gpu.ts';
import { benchKernelSize, kernelsSetup, kernelsTeardown, type KernelBenchRow } from '../kernels-suite.ts';
import { BENCH_SIZES, type MatmulSize } from '../matmul-bench.ts';
import { benchTraining, type TrainingBenchRow } from '../training-suite.ts';

interface Args {
  quick: boolean;
  big: boolean;
  out: string;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { quick: false, big: false, out: resolve('bench') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') args.quick = true;
    else if (a === '--big') args.big = true;
    else if (a === '--out') args.out = resolve(argv[++i] ?? '');
    else throw new Error(`unknown option ${JSON.stringify(a)}; usage: bench:node [--quick] [--big] [--out DIR]`);
  }
  return args;
}

const x = (v: number): string => `${v.toFixed(2)}×`;
const geomean = (xs: number[]): number => Math.exp(xs.reduce((s, v) => s + Math.log(v), 0) / xs.length);

function markdown(adapter: string, date: string, kernels: KernelBenchRow[], training: TrainingBenchRow[]): string {
  const lines = [
    `# PipeLab on Dawn in Node: ${adapter}`,
    '',
    `Measured ${date} by \`npm run bench:node\` (src/bench/driver/dawn.ts). Ours beside TensorFlow.js's WebGPU backend,`,
    'same process, same adapter, each figure the median of timed repeats; read the ratios, not the lone times.',
    '',
    '## Matmul (GFLOP/s)',
    '',
    '| M×N×K | op | ours | variant | TF.js | ours / TF.js |',
    '| --- | --- | --- | --- | --- | --- |',
    ...kernels.map((k) => `| ${k.M}×${k.N}×${k.K} | ${k.op} | ${k.oursGflops.toFixed(1)} | ${k.variant} | ${k.tfjsGflops.toFixed(1)} | ${x(k.ratio)} |`),
    '',
    `Geometric mean ours / TF.js: ${x(geomean(kernels.map((k) => k.ratio)))}.`,
    '',
    '## One training step of the whole model on one device',
    '',
    '| model | batch | ours samples/s | ours ms/step | TF.js samples/s | TF.js ms/step | ours / TF.js | loss ours | loss TF.js |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...training.map(
      (r) =>
        `| ${r.dataset} | ${r.batchSize} | ${r.ours.samplesPerSecond.toFixed(0)} | ${r.ours.medianStepMs.toFixed(2)} | ${r.tfjs.samplesPerSecond.toFixed(0)} | ${r.tfjs.medianStepMs.toFixed(2)} | ${x(r.ratio)} | ${r.ours.finalLoss.toFixed(4)} | ${r.tfjs.finalLoss.toFixed(4)} |`,
    ),
    '',
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const gpu = await nodeGpu();
  const g = globalThis as { navigator?: { gpu?: GPU } };
  if (!g.navigator) Object.defineProperty(globalThis, 'navigator', { value: {}, configurable: true, writable: true });
  g.navigator!.gpu = gpu;
  const info = (await gpu.requestAdapter())?.info;
  if (!info) throw new Error(`Dawn found no WebGPU adapter (VK_ICD_FILENAMES = ${process.env.VK_ICD_FILENAMES ?? 'unset'}): it needs a Vulkan driver, a GPU's with PIPELAB_REAL_GPU=1 or SwiftShader's (apt-get install chromium)`);
  const adapter = `${info.vendor} ${info.architecture} ${info.description}`.replace(/\s+/g, ' ').trim();
  console.log(`bench:node: adapter ${adapter}`);

  const setup = await kernelsSetup();
  console.log(`bench:node: autotune ${JSON.stringify(setup.choice)} in ${setup.createMs.toFixed(0)} ms`);
  const sizes: MatmulSize[] = [...BENCH_SIZES, ...(args.big ? ([[1024, 1024, 1024], [2048, 2048, 2048]] as const) : [])];
  const kernels: KernelBenchRow[] = [];
  for (const size of sizes) {
    for (const k of await benchKernelSize(size, args.quick ? { warmup: 1, repeats: 3 } : { warmup: 3, repeats: 9 })) {
      console.log(`${k.M}x${k.N}x${k.K} ${k.op}: ours ${k.oursGflops.toFixed(2)} GFLOP/s (${k.variant}), TF.js ${k.tfjsGflops.toFixed(2)}: ${x(k.ratio)}`);
      kernels.push(k);
    }
  }
  kernelsTeardown();

  const training: TrainingBenchRow[] = [];
  for (const dataset of ['spiral', 'names'] as const) {
    const r = await benchTraining({ dataset, warmup: 5, steps: args.quick ? 10 : 40 });
    console.log(`${dataset}: ours ${r.ours.samplesPerSecond.toFixed(0)} samples/s, TF.js ${r.tfjs.samplesPerSecond.toFixed(0)}: ${x(r.ratio)}`);
    training.push(r);
  }

  const date = new Date().toISOString();
  const name = (info.vendor || 'adapter').replace(/[^\w-]/g, '');
  mkdirSync(args.out, { recursive: true });
  const kernelRows = kernels.map(({ ours: _o, tfjs: _t, ...k }) => k);
  writeFileSync(join(args.out, `dawn-${name}.json`), `${JSON.stringify({ date, adapter, quick: args.quick, autotune: setup, kernels: kernelRows, training }, null, 2)}\n`);
  const md = markdown(adapter, date, kernels, training);
  writeFileSync(join(args.out, `DAWN-${name}.md`), md);
  console.log(`\n${md}`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(`bench:node: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  },
);
