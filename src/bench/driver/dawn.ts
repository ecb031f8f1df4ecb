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
 *   npm run bench:node -- [--quick] [--big] [--kernels-only] [--out DIR]
 *       (--big adds 1024³, 2048³ and 4096³ matmuls; --kernels-only skips the training rows)
 *   PIPELAB_REAL_GPU=1 npm run bench:node                  (the machine's GPU)
 *   PIPELAB_REAL_GPU=1 npm run bench:node -- --train-gpt 3000
 *       trains makemore's GPT (4 layers, 4 heads, 64 wide) on names with the app's own loop
 *       (nn/train.ts) and prints the held-out loss every 500 steps
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { nodeGpu } from '../../gpu/testing/node-gpu.ts';
import { benchKernelReduce, benchKernelSize, kernelsSetup, kernelsTeardown, type KernelBenchRow } from '../kernels-suite.ts';
import { REDUCE_BENCH_CASES, type ReduceBenchRow } from '../reduce-bench.ts';
import { BENCH_SIZES, BIG_BENCH_SIZES, type MatmulSize } from '../matmul-bench.ts';
import { benchTraining, type TrainingBenchRow } from '../training-suite.ts';
import { GpuBackend } from '../../gpu/gpu-backend.ts';
import { defaultGptConfig, MAKEMORE_GPT } from '../../nn/model-config.ts';
import { defaultTrainConfig, type TrainConfig } from '../../nn/train-config.ts';
import { trainSingleDevice } from '../../nn/train.ts';

interface Args {
  quick: boolean;
  big: boolean;
  /** Only the kernel rows (matmuls, reductions), no training. */
  kernelsOnly: boolean;
  out: string;
  /** Train makemore's GPT for this many steps instead of the suites (0: run the suites). */
  trainGpt: number;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { quick: false, big: false, kernelsOnly: false, out: resolve('bench'), trainGpt: 0 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') args.quick = true;
    else if (a === '--big') args.big = true;
    else if (a === '--kernels-only') args.kernelsOnly = true;
    else if (a === '--out') args.out = resolve(argv[++i] ?? '');
    else if (a === '--train-gpt') {
      const v = argv[++i] ?? '';
      args.trainGpt = Number(v);
      if (!/^\d+$/.test(v) || args.trainGpt < 1) throw new Error(`--train-gpt = ${JSON.stringify(v)}: must be a whole number of steps ≥ 1`);
    } else throw new Error(`unknown option ${JSON.stringify(a)}; usage: bench:node [--quick] [--big] [--kernels-only] [--out DIR] [--train-gpt STEPS]`);
  }
  return args;
}

const x = (v: number): string => `${v.toFixed(2)}×`;
const geomean = (xs: number[]): number => Math.exp(xs.reduce((s, v) => s + Math.log(v), 0) / xs.length);

function markdown(adapter: string, date: string, kernels: KernelBenchRow[], reduce: ReduceBenchRow[], training: TrainingBenchRow[]): string {
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
    '## Reductions over rows (ms per call)',
    '',
    '| op | rows×cols | ours ms | TF.js ms | TF.js / ours |',
    '| --- | --- | --- | --- | --- |',
    ...reduce.map((r) => `| ${r.op} | ${r.rows}×${r.cols} | ${r.oursMs.toFixed(3)} | ${r.tfjsMs.toFixed(3)} | ${x(r.ratio)} |`),
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

/** Makemore's recipe (ENVIRONMENT.md's reference figures): AdamW, batch 64, lr 2e-3 cosine, weight decay 0.1. */
async function trainGpt(args: Args): Promise<void> {
  const cfg: TrainConfig = {
    ...defaultTrainConfig('names'),
    ...defaultGptConfig(),
    ...MAKEMORE_GPT,
    optimizer: 'adamw',
    batchSize: 64,
    microbatches: 1,
    lr: 2e-3,
    lrSchedule: 'cosine',
    weightDecay: 0.1,
    steps: args.trainGpt,
    evalEvery: 500,
  };
  const be = await GpuBackend.create();
  try {
    const t0 = performance.now();
    const r = await trainSingleDevice(be, cfg, {
      onEval: (e) => console.log(`after ${e.step} steps: held-out ${e.valLoss.toFixed(4)} nats/char, ${((performance.now() - t0) / 1000).toFixed(1)} s`),
    });
    const line = `makemore GPT ${cfg.layers}x${cfg.heads}x${cfg.width}, ${r.stepsDone} steps in ${(r.ms / 1000).toFixed(1)} s (${(r.ms / r.stepsDone).toFixed(2)} ms/step): held-out ${r.final.valLoss.toFixed(4)} nats/char`;
    console.log(line);
    mkdirSync(args.out, { recursive: true });
    writeFileSync(join(args.out, 'gpt-train.json'), `${JSON.stringify({ date: new Date().toISOString(), config: cfg, evals: r.evals, ms: r.ms }, null, 2)}\n`);
  } finally {
    be.destroy();
  }
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

  if (args.trainGpt > 0) return trainGpt(args);
  const setup = await kernelsSetup();
  console.log(`bench:node: autotune ${JSON.stringify(setup.choice)} in ${setup.createMs.toFixed(0)} ms`);
  const sizes: MatmulSize[] = [...BENCH_SIZES, ...(args.big ? BIG_BENCH_SIZES : [])];
  const kernels: KernelBenchRow[] = [];
  for (const size of sizes) {
    for (const k of await benchKernelSize(size, args.quick ? { warmup: 1, repeats: 3 } : { warmup: 3, repeats: 9 })) {
      console.log(`${k.M}x${k.N}x${k.K} ${k.op}: ours ${k.oursGflops.toFixed(2)} GFLOP/s (${k.variant}), TF.js ${k.tfjsGflops.toFixed(2)}: ${x(k.ratio)}`);
      kernels.push(k);
    }
  }
  const reduce: ReduceBenchRow[] = [];
  for (const c of REDUCE_BENCH_CASES) {
    const r = await benchKernelReduce(c, args.quick ? { warmup: 1, repeats: 3 } : { warmup: 3, repeats: 9 });
    console.log(`${r.op} ${r.rows}x${r.cols}: ours ${r.oursMs.toFixed(3)} ms, TF.js ${r.tfjsMs.toFixed(3)} ms: ${x(r.ratio)}`);
    reduce.push(r);
  }
  kernelsTeardown();

  const training: TrainingBenchRow[] = [];
  for (const dataset of args.kernelsOnly ? [] : (['spiral', 'names'] as const)) {
    const r = await benchTraining({ dataset, warmup: 5, steps: args.quick ? 10 : 40 });
    console.log(`${dataset}: ours ${r.ours.samplesPerSecond.toFixed(0)} samples/s, TF.js ${r.tfjs.samplesPerSecond.toFixed(0)}: ${x(r.ratio)}`);
    training.push(r);
  }

  const date = new Date().toISOString();
  const name = (info.vendor || 'adapter').replace(/[^\w-]/g, '');
  mkdirSync(args.out, { recursive: true });
  const kernelRows = kernels.map(({ ours: _o, tfjs: _t, ...k }) => k);
  writeFileSync(join(args.out, `dawn-${name}.json`), `${JSON.stringify({ date, adapter, quick: args.quick, autotune: setup, kernels: kernelRows, reduce, training }, null, 2)}\n`);
  const md = markdown(adapter, date, kernels, reduce, training);
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
