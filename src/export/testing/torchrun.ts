/**
 * Test support (Node only): writes a bundle to a folder and runs its train.py
 * under Debian's torchrun (`/usr/bin/torchrun --redirects 1 --tee 1`, CPU,
 * gloo), with a timeout, and parses what it prints. Shared by the Node test
 * (src/export/torch-export.test.ts) and the browser proof (e2e/torch-export.spec.ts).
 * Every process of a launch imports torch (about a CPU-second each): runTorchrunMany
 * runs several bundles in one launch's processes, runPythonMany several checks that
 * stop before any process group starts in one process (./launch_bundles.py).
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expectSameNames } from '../../util/rel-err.ts';
import { readSafetensors } from '../../util/safetensors.ts';
import type { BundleFile } from '../torch-bundle.ts';
import { TORCH_PROGRAM_FILES } from '../torch-program.ts';
import { TORCHRUN_LAUNCH_FLAGS } from '../torchrun-command.ts';

/** Where the torch program runs; PIPELAB_TORCHRUN names another torchrun. */
export const TORCHRUN = process.env.PIPELAB_TORCHRUN ?? '/usr/bin/torchrun';

export function writeBundle(dir: string, files: readonly BundleFile[]): void {
  for (const f of files) {
    mkdirSync(dirname(join(dir, f.path)), { recursive: true });
    writeFileSync(join(dir, f.path), f.data);
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface TorchrunResult {
  code: number | null;
  output: string;
  /** Per step, from `step N loss X`. */
  losses: number[];
  /** Per step, the last stage's wall time in ms. */
  stepMs: number[];
  /** Per step, an MoE model's aux loss and the token choices its experts dropped (`… aux X dropped N` on the step's line); empty for a dense model. */
  auxLosses: number[];
  dropped: number[];
  heldout: number;
}

/** Runs `torchrun --nproc_per_node=ranks train.py ...args` in dir; resolves whatever the exit code (see `code`). */
export async function runTorchrun(dir: string, ranks: number, args: readonly string[] = [], timeoutMs = 240_000): Promise<TorchrunResult> {
  const { code, output } = await launch(dir, ranks, ['train.py', ...args], timeoutMs);
  return parseRun(code, output);
}

/** One exported run of a shared launch: its bundle folder, its world size (config.json's), train.py's flags. */
export interface TorchrunJob {
  dir: string;
  world: number;
  args?: readonly string[];
}

/** The driver that runs several bundles in one launch's processes. */
const LAUNCH_BUNDLES = fileURLToPath(new URL('./launch_bundles.py', import.meta.url));

/**
 * Each job's result, as runTorchrun gives it, from one torchrun launch per world size (./launch_bundles.py: the
 * jobs run one after another in the same processes, so each process imports torch once for all of them, not once
 * per run). A job's output is what each process printed during it, every line prefixed `[default<g>]:` as torchrun
 * prefixes it; its code is the first non-zero one of its processes, 0 when all ended with 0, or the launch's (else
 * -1) when a process never reported it (an earlier job failed: the launch stopped; the launch's output is added).
 * Jobs must hold the same program, each its own folder, and take train.py's default backend and timeout.
 */
export async function runTorchrunMany(jobs: readonly TorchrunJob[], timeoutMs = 60_000 + 60_000 * jobs.length): Promise<TorchrunResult[]> {
  const first = jobs.length > 0 ? programText(jobs[0].dir) : '';
  for (const job of jobs) {
    if (jobs.filter((j) => j.dir === job.dir).length > 1) throw new Error(`runTorchrunMany: ${job.dir} is given twice; each job needs its own folder`);
    const world = (JSON.parse(readFileSync(join(job.dir, 'config.json'), 'utf8')) as { world: number }).world;
    if (world !== job.world) throw new Error(`runTorchrunMany: ${job.dir} is for ${world} processes, not ${job.world}`);
    if (programText(job.dir) !== first) throw new Error(`runTorchrunMany: ${job.dir} holds another program than ${jobs[0].dir}`);
    const own = (job.args ?? []).find((a) => ['--backend', '--timeout', '--test-stall-rank'].includes(a));
    if (own) throw new Error(`runTorchrunMany: ${own} sets up the processes themselves: launch that run alone (runTorchrun)`);
  }
  const results: TorchrunResult[] = new Array(jobs.length);
  for (const world of [...new Set(jobs.map((j) => j.world))]) {
    const group = jobs.flatMap((job, i) => (job.world === world ? [{ job, i }] : []));
    for (const { job } of group) rmSync(join(job.dir, 'launch'), { recursive: true, force: true });
    const list = join(mkdtempSync(join(tmpdir(), 'pipelab-launch-')), 'jobs.json');
    writeFileSync(list, JSON.stringify(group.map(({ job }) => ({ dir: job.dir, args: job.args ?? [] }))));
    const launched = await launch(group[0].job.dir, world, [LAUNCH_BUNDLES, list], timeoutMs);
    for (const { job, i } of group) {
      const codes: (number | null)[] = [];
      const lines: string[] = [];
      for (let g = 0; g < world; g++) {
        const at = (ext: string) => join(job.dir, 'launch', `rank${g}.${ext}`);
        codes.push(existsSync(at('code')) ? Number(readFileSync(at('code'), 'utf8')) : null);
        if (existsSync(at('log'))) lines.push(...readFileSync(at('log'), 'utf8').split('\n').filter((l) => l !== '').map((l) => `[default${g}]:${l}`));
      }
      const code = codes.includes(null) ? (launched.code || -1) : (codes.find((c) => c !== 0) ?? 0);
      const output = lines.join('\n') + (code === 0 ? '' : `\n(the launch of ${group.length} runs:)\n${launched.output}`);
      results[i] = parseRun(code, output);
    }
  }
  return results;
}

/** A bundle's program files, one text (bundles of one launch or process must hold the same). */
function programText(dir: string): string {
  return TORCH_PROGRAM_FILES.map((f) => readFileSync(join(dir, f), 'utf8')).join('\0');
}

/**
 * `torchrun … program` in dir. The launcher looks at its processes every --monitor_interval seconds, and only then
 * sees that they ended: torch 1.13's default of 5 s added 2.5 s on average to every launch's wall time.
 */
async function launch(dir: string, ranks: number, program: readonly string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  const port = await freePort();
  const argv = [...TORCHRUN_LAUNCH_FLAGS, '--monitor_interval', '0.1', `--nproc_per_node=${ranks}`, `--master_port=${port}`, ...program];
  return new Promise((resolve) => {
    execFile(TORCHRUN, argv, { cwd: dir, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const c = err ? ((err as { code?: unknown }).code as number | null | undefined) : 0;
      resolve({ code: typeof c === 'number' ? c : err ? -1 : 0, output: stdout + stderr });
    });
  });
}

function parseRun(code: number | null, output: string): TorchrunResult {
  const losses: number[] = [];
  const stepMs: number[] = [];
  const auxLosses: number[] = [];
  const dropped: number[] = [];
  // Numbers read strictly: under load torchrun's tee can glue another process's prefixed output to a line's end.
  const num = String.raw`([-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|nan|inf))`;
  for (const m of output.matchAll(new RegExp(String.raw`step (\d+) loss ${num} ms (\d+(?:\.\d+)?)(?: aux ${num} dropped (\d+))?`, 'gi'))) {
    losses[Number(m[1])] = Number(m[2]);
    stepMs[Number(m[1])] = Number(m[3]);
    if (m[4] !== undefined) [auxLosses[Number(m[1])], dropped[Number(m[1])]] = [Number(m[4]), Number(m[5])];
  }
  const h = /heldout loss (\S+)/.exec(output);
  return { code, output, losses, stepMs, auxLosses, dropped, heldout: h ? Number(h[1]) : NaN };
}

/** Where `python3 train.py` runs without torchrun (checks that stop a process before any process group starts). */
export const PYTHON = process.env.PIPELAB_PYTHON ?? '/usr/bin/python3';

/** Runs `python3 train.py ...args` in dir with extra environment variables (RANK, WORLD_SIZE), synchronously. */
export function runPython(dir: string, env: Readonly<Record<string, string>>, args: readonly string[] = [], timeoutMs = 60_000): { code: number | null; output: string } {
  const r = spawnSync(PYTHON, ['train.py', ...args], { cwd: dir, env: { ...process.env, ...env }, timeout: timeoutMs, killSignal: 'SIGKILL', encoding: 'utf8' });
  return { code: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

/** One `python3 train.py` check of runPythonMany: its bundle folder, environment variables (RANK, WORLD_SIZE), flags. */
export interface PythonJob {
  dir: string;
  env: Readonly<Record<string, string>>;
  args?: readonly string[];
}

/**
 * What runPython gives for each job, from one Python process (./launch_bundles.py --alone: torch imported once):
 * for the checks that stop train.py before any process group starts. Jobs must hold the same program.
 */
export function runPythonMany(jobs: readonly PythonJob[], timeoutMs = 30_000 + 10_000 * jobs.length): { code: number | null; output: string }[] {
  if (jobs.length === 0) return [];
  const first = programText(jobs[0].dir);
  for (const job of jobs) if (programText(job.dir) !== first) throw new Error(`runPythonMany: ${job.dir} holds another program than ${jobs[0].dir}`);
  const folder = mkdtempSync(join(tmpdir(), 'pipelab-checks-'));
  writeFileSync(join(folder, 'jobs.json'), JSON.stringify(jobs.map((j) => ({ dir: j.dir, env: j.env, args: j.args ?? [] }))));
  const r = spawnSync(PYTHON, [LAUNCH_BUNDLES, '--alone', join(folder, 'jobs.json')], { cwd: jobs[0].dir, timeout: timeoutMs, killSignal: 'SIGKILL', encoding: 'utf8' });
  return jobs.map((_, i) => {
    const at = (ext: string) => join(folder, `job${i}.${ext}`);
    if (!existsSync(at('code'))) return { code: r.status ?? -1, output: `(never ran: the checks' process ended with ${r.status ?? r.signal})\n${r.stdout ?? ''}${r.stderr ?? ''}` };
    return { code: Number(readFileSync(at('code'), 'utf8')), output: readFileSync(at('log'), 'utf8') };
  });
}

/** The weights train.py wrote (out/trained.safetensors), by name. */
export function readTrainedWeights(dir: string): Record<string, Float32Array | Float64Array | Int32Array> {
  const parsed = readSafetensors(new Uint8Array(readFileSync(join(dir, 'out', 'trained.safetensors'))));
  return Object.fromEntries(Object.entries(parsed.tensors).map(([k, t]) => [k, t.data]));
}

/** Largest |a − b| / |b| over the steps. */
export function maxRelativeDiff(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) return Infinity;
  if (a.length === 0) throw new Error('maxRelativeDiff: no values to compare');
  return Math.max(...a.map((x, i) => Math.abs(x - b[i]) / Math.abs(b[i])));
}

/**
 * Per tensor ‖a − b‖ / ‖b‖ (L2; ‖a − b‖ where b is all zeros), the largest. Throws unless `a` holds exactly
 * `b`'s names, each with as many values (a gather that returned a tensor's first piece, or nothing, fails).
 */
export function maxWeightDiff(a: Readonly<Record<string, ArrayLike<number>>> | undefined, b: Readonly<Record<string, ArrayLike<number>>> | undefined): number {
  if (!b) throw new Error('weights: no reference to compare with');
  expectSameNames(a, b);
  let worst = 0;
  for (const [name, ref] of Object.entries(b)) {
    const got = a[name];
    if (got.length !== ref.length) throw new Error(`weights: "${name}" has ${got.length} values, the reference ${ref.length}`);
    let num = 0, den = 0;
    for (let i = 0; i < ref.length; i++) {
      num += (got[i] - ref[i]) ** 2;
      den += ref[i] ** 2;
    }
    worst = Math.max(worst, den === 0 ? Math.sqrt(num) : Math.sqrt(num / den));
  }
  return worst;
}

/**
 * The GPT's key bias (the middle third of each `attn.c_attn.bias`) has a zero gradient in exact arithmetic
 * (adding a constant to every key leaves each softmax row unchanged): its float32 gradient is rounding noise,
 * which Adam normalises into steps of up to ~lr/10, different on each side. Comparing two runs, that slice says
 * nothing about agreement, so it is zeroed in a copy; every other weight is compared as it is.
 */
export function withoutKeyBias(weights: Readonly<Record<string, ArrayLike<number>>>, width: number): Record<string, ArrayLike<number>> {
  const out: Record<string, ArrayLike<number>> = { ...weights };
  for (const [name, w] of Object.entries(weights)) {
    if (!name.endsWith('attn.c_attn.bias')) continue;
    const copy = Float64Array.from(w);
    copy.fill(0, width, 2 * width);
    out[name] = copy;
  }
  return out;
}
