/**
 * Test support (Node only): writes a bundle to a folder and runs its train.py
 * under Debian's torchrun (`/usr/bin/torchrun --redirects 1 --tee 1`, CPU,
 * gloo), with a timeout, and parses what it prints. Shared by the Node test
 * (src/export/torch-export.test.ts) and the browser proof (e2e/torch-export.spec.ts).
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { expectSameNames } from '../../util/rel-err.ts';
import { readSafetensors } from '../../util/safetensors.ts';
import type { BundleFile } from '../torch-bundle.ts';
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
  heldout: number;
}

/** Runs `torchrun --nproc_per_node=ranks train.py ...args` in dir; resolves whatever the exit code (see `code`). */
export async function runTorchrun(dir: string, ranks: number, args: readonly string[] = [], timeoutMs = 240_000): Promise<TorchrunResult> {
  const port = await freePort();
  const argv = [...TORCHRUN_LAUNCH_FLAGS, `--nproc_per_node=${ranks}`, `--master_port=${port}`, 'train.py', ...args];
  const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
    execFile(TORCHRUN, argv, { cwd: dir, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const c = err ? ((err as { code?: unknown }).code as number | null | undefined) : 0;
      resolve({ code: typeof c === 'number' ? c : err ? -1 : 0, output: stdout + stderr });
    });
  });
  const losses: number[] = [];
  const stepMs: number[] = [];
  // Numbers read strictly: under load torchrun's tee can glue another process's prefixed output to a line's end.
  for (const m of output.matchAll(/step (\d+) loss ([-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|nan|inf)) ms (\d+(?:\.\d+)?)/gi)) {
    losses[Number(m[1])] = Number(m[2]);
    stepMs[Number(m[1])] = Number(m[3]);
  }
  const h = /heldout loss (\S+)/.exec(output);
  return { code, output, losses, stepMs, heldout: h ? Number(h[1]) : NaN };
}

/** Where `python3 train.py` runs without torchrun (checks that stop a process before any process group starts). */
export const PYTHON = process.env.PIPELAB_PYTHON ?? '/usr/bin/python3';

/** Runs `python3 train.py ...args` in dir with extra environment variables (RANK, WORLD_SIZE), synchronously. */
export function runPython(dir: string, env: Readonly<Record<string, string>>, args: readonly string[] = [], timeoutMs = 60_000): { code: number | null; output: string } {
  const r = spawnSync(PYTHON, ['train.py', ...args], { cwd: dir, env: { ...process.env, ...env }, timeout: timeoutMs, killSignal: 'SIGKILL', encoding: 'utf8' });
  return { code: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}` };
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
