/**
 * The run-state file crosses between the tab and PyTorch: src/export/torch/checkpoint.py
 * (run with /usr/bin/python3 and Debian's torch) reads what src/run-state/codec.ts
 * writes and the codec reads what checkpoint.py writes.
 *
 * - A state after k steps of the float64 single-device loop (AdamW; SGD with
 *   momentum), encoded in TS, read in Python and loaded into fresh torch
 *   tensors and a torch.optim AdamW / SGD (load_state_dict): every weight,
 *   every moment and the step count come back out of torch equal to the
 *   state's, bit for bit.
 * - Python writes that state again from the torch tensors and optimizer (F64,
 *   and F32 as train.py's float32 run holds it); decodeRunState (every check
 *   of the format, against the expected configuration) gives the same state
 *   (F32: each value rounded to float32).
 * - Damaged files are refused in Python with a message naming what is wrong,
 *   and 200 mutated files (flipped bytes, truncations, wrong header lengths;
 *   behind a resealed checksum: wrong dtypes, shapes and offsets, tensors
 *   dropped or renamed, bad metadata) that the TS codec refuses are each
 *   refused by checkpoint.py too, with a CheckpointError (any other exception
 *   fails the probe).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice, type TrainProgress } from '../nn/train.ts';
import { runPipeline } from '../runtime/coordinator.ts';
import { InProcessRankHost } from '../runtime/executor/in-process-host.ts';
import { namesModelSwitch } from '../nn/train-config.ts';
import { CheckpointError } from '../run-state/checkpoint-error.ts';
import { decodeRunState, encodeRunState, previousTensorName, slotTensorName } from '../run-state/codec.ts';
import { MAX_CHECKPOINT_BYTES, runStateOf, type RunState } from '../run-state/run-state.ts';
import { editHeader, editMetadata, type Header } from '../run-state/testing/edit-file.ts';
import { defaultRunConfig, toTrainConfig, withDataset, type RunConfig } from '../config/run-config.ts';
import { writeSafetensors } from '../util/safetensors.ts';
import { PYTHON } from './testing/torchrun.ts';

const PROGRAM_DIR = fileURLToPath(new URL('./torch/', import.meta.url));
const PROBE = fileURLToPath(new URL('./testing/checkpoint_probe.py', import.meta.url));

const spiral: RunConfig = { ...defaultRunConfig(), hidden: 8, layers: 3, batchSize: 16, microbatches: 4, steps: 8, evalEvery: 2, optimizer: 'adamw' };
const names: RunConfig = { ...withDataset(defaultRunConfig(), 'names'), hidden: 16, embedDim: 4, layers: 3, batchSize: 16, microbatches: 2, steps: 4, evalEvery: 0 };
const gptSgd: RunConfig = { ...names, ...namesModelSwitch('gpt', 3), width: 8, heads: 2, blockSize: 16, batchSize: 8, microbatches: 2, optimizer: 'sgd', lr: 0.05, momentum: 0.9 };

type Job = { op: 'dump' | 'read'; path: string } | { op: 'rewrite'; path: string; out: string; dtype: 'F32' | 'F64'; configExtra?: Record<string, unknown> };
interface Dump {
  params: Record<string, number[]>;
  slots: Record<string, number[]>;
  steps: number | null;
  stepsDone: number;
  losses: number[];
  lrNext: number;
  dtype: Record<string, string>;
}
type Result = Dump | { written: string } | { ok: true } | { refused: string };

/** Runs the probe once on all jobs (one Python start, one torch import). */
function probe(dir: string, jobs: Job[]): Result[] {
  const jobsFile = join(dir, `jobs-${Math.random().toString(36).slice(2)}.json`);
  const resultsFile = `${jobsFile}.out`;
  writeFileSync(jobsFile, JSON.stringify(jobs));
  const r = spawnSync(PYTHON, [PROBE, jobsFile, resultsFile], { env: { ...process.env, PYTHONPATH: PROGRAM_DIR }, encoding: 'utf8', timeout: 120_000, killSignal: 'SIGKILL' });
  if (r.status !== 0) throw new Error(`checkpoint_probe.py exited ${r.status}: ${r.stdout}${r.stderr}`);
  return JSON.parse(readFileSync(resultsFile, 'utf8')) as Result[];
}

async function trainedState(cfg: RunConfig, k: number): Promise<RunState> {
  let done = 0;
  const r = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg), { onStep: () => void done++, shouldStop: () => done >= k }, { readProgress: true });
  return runStateOf(cfg, r.progress!);
}

function asFloat32(s: RunState): RunState {
  const f32 = (r: Record<string, Float32Array | Float64Array>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Float32Array.from(v)]));
  return { ...s, params: f32(s.params), optimizer: { ...s.optimizer, slots: Object.fromEntries(Object.entries(s.optimizer.slots).map(([k, v]) => [k, f32(v)])) } };
}

/** Fields a checkpoint does not keep (stateConfig): checkpoint.py drops them from the configuration it writes. */
const NOT_KEPT = { checkpointEvery: 5, recovery: 'fewer', fault: { kind: 'crash', worker: 0, step: 1 } };

const cases = [
  ['spiral MLP, AdamW', spiral, 3],
  ['GPT, SGD with momentum', gptSgd, 2],
] as const;

describe('checkpoint.py and the TS codec read each other', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pipelab-ckpt-py-'));
  const states: RunState[] = [];
  let results: Result[] = [];

  beforeAll(async () => {
    const jobs: Job[] = [];
    for (const [i, [, cfg, k]] of cases.entries()) {
      const s = await trainedState(cfg, k);
      states.push(s);
      const path = join(dir, `page-${i}.safetensors`);
      writeFileSync(path, encodeRunState(s));
      jobs.push({ op: 'dump', path }, { op: 'rewrite', path, out: join(dir, `py64-${i}.safetensors`), dtype: 'F64' }, { op: 'rewrite', path, out: join(dir, `py32-${i}.safetensors`), dtype: 'F32', configExtra: NOT_KEPT });
    }
    results = probe(dir, jobs);
  }, 120_000);

  for (const [i, [name, cfg, k]] of cases.entries()) {
    it(`${name}: a page-written state loads into torch tensors and a torch.optim optimizer unchanged`, () => {
      const s = states[i];
      const d = results[3 * i] as Dump;
      expect(d.stepsDone).toBe(k);
      expect(d.losses).toEqual(s.losses);
      expect(d.lrNext).toBe(s.lrNext);
      expect(Object.keys(d.params)).toEqual(Object.keys(s.params));
      for (const [p, v] of Object.entries(s.params)) {
        expect(d.dtype[p]).toBe('torch.float64');
        expect(d.params[p]).toEqual(Array.from(v));
        for (const [slot, m] of Object.entries(s.optimizer.slots[p])) expect(d.slots[slotTensorName(p, slot)], `${p} ${slot}`).toEqual(Array.from(m));
      }
      // The moments really differ from zero, so the comparison is not of empty state.
      expect(Object.values(d.slots).some((v) => v.some((x) => x !== 0))).toBe(true);
      // torch AdamW counts its bias-correction steps in state['step']; SGD keeps none.
      expect(d.steps).toBe(cfg.optimizer === 'adamw' ? s.optimizer.steps : null);
      expect(s.optimizer.steps).toBe(k);
    });

    it(`${name}: what checkpoint.py writes from torch's tensors and optimizer decodes in TS to the same state (F64; F32 rounded, written from a configuration with a fault, checkpointEvery and recovery, which it drops)`, () => {
      const s = states[i];
      const f64 = decodeRunState(new Uint8Array(readFileSync(join(dir, `py64-${i}.safetensors`))), { config: cfg });
      expect(f64).toEqual({ ...s, producer: 'PipeLab train.py' });
      const f32 = decodeRunState(new Uint8Array(readFileSync(join(dir, `py32-${i}.safetensors`))), { config: cfg });
      expect(f32).toEqual({ ...asFloat32(s), producer: 'PipeLab train.py' });
    });
  }

  it('a damaged, truncated, newer, foreign or oversized file is refused in Python with a message saying what is wrong', () => {
    const good = encodeRunState(states[0]);
    const files: [string, Uint8Array | number, RegExp][] = [];
    const flipped = good.slice();
    flipped[flipped.length - 5] ^= 0x10;
    files.push(['flipped', flipped, /corrupted checkpoint: its checksum is [0-9a-f]{8} but its bytes give [0-9a-f]{8}/]);
    files.push(['truncated', good.slice(0, good.length - 12), /truncated checkpoint: .*need \d+ bytes, the file has \d+/]);
    files.push(['short', good.slice(0, 5), /truncated checkpoint: .*5 bytes, fewer than the 8/]);
    const hugeHeader = good.slice();
    new DataView(hugeHeader.buffer).setBigUint64(0, 1n << 40n, true);
    files.push(['huge-header', hugeHeader, /header length 1099511627776 is out of range/]);
    files.push(['newer', editMetadata(good, 'version', '2'), /checkpoint format version 2 is newer than this train\.py reads \(version 1\)/]);
    files.push(['weights-export', writeSafetensors({ w: { data: new Float32Array(4), shape: [2, 2] } }, { format: 'pt' }), /not a PipeLab checkpoint: a safetensors file of format 'pt'/]);
    const firstParam = Object.keys(states[0].params)[0];
    files.push(['missing-slot', editHeader(good, (h) => void delete h[slotTensorName(firstParam, 'exp_avg')]), /not a checkpoint, or a damaged one: .*begins at/]);
    files.push(['bad-losses', editMetadata(good, 'losses', '[1,2]'), /corrupted checkpoint: losses must be a list of 3 losses/]);
    files.push(['bad-steps', editMetadata(good, 'stepsDone', '99'), /corrupted checkpoint: stepsDone = 99: must be a whole number from 0 to 8/]);
    files.push(['bad-dtype', editHeader(good, (h) => void ((h[firstParam] as { dtype: string }).dtype = 'I64')), /dtype 'I64' is not one of F32, F64/]);
    files.push(['over-1-GiB', MAX_CHECKPOINT_BYTES + 1, /the file is 1073741825 bytes; a checkpoint may be at most 1 GiB .*it was not read/]);
    const jobs: Job[] = files.map(([name, bytes]) => {
      const path = join(dir, `bad-${name}.safetensors`);
      if (typeof bytes === 'number') {
        writeFileSync(path, good);
        truncateSync(path, bytes); // sparse: nothing of it is read
      } else writeFileSync(path, bytes);
      return { op: 'read', path };
    });
    jobs.push({ op: 'read', path: join(dir, 'page-0.safetensors') });
    const got = probe(dir, jobs);
    for (const [j, [name, , pattern]] of files.entries()) {
      const r = got[j] as { refused?: string };
      expect(r.refused, name).toMatch(pattern);
      expect(r.refused, name).toContain(`bad-${name}.safetensors: `);
    }
    expect(got[files.length]).toEqual({ ok: true });
  }, 120_000);

  it("a PipeDream-2BW state from inside its stream loads in Python: its latest weights are the parameters, its previous version (previous.*) kept aside, checked", async () => {
    const cfg: RunConfig = { ...spiral, schedule: 'pipedream-2bw', ranks: 2, microbatches: 2, steps: 6 };
    const saved: TrainProgress[] = [];
    await runPipeline(cfg, { hostFactory: (w) => new InProcessRankHost(w, new CpuBackend()), progressEvery: 2, onProgress: (p) => saved.push(p) });
    const s = runStateOf(cfg, saved[0]);
    expect(s.stepsDone).toBe(2);
    const bytes = encodeRunState(s);
    const path = join(dir, 'page-2bw.safetensors');
    writeFileSync(path, bytes);
    const first = Object.keys(s.params)[0];
    const bad = join(dir, 'bad-2bw.safetensors');
    // The previous version of the first parameter flattened: the same values, another shape.
    writeFileSync(bad, editHeader(bytes, (h) => void ((h[previousTensorName(first)] as { shape: number[] }).shape = [s.params[first].length])));
    const [d, refused] = probe(dir, [{ op: 'dump', path }, { op: 'read', path: bad }]) as [Dump, { refused?: string }];
    expect(Object.keys(d.params)).toEqual(Object.keys(s.params));
    for (const [p, v] of Object.entries(s.params)) expect(d.params[p]).toEqual(Array.from(v));
    expect(refused.refused).toMatch(/bad-2bw\.safetensors: corrupted checkpoint: tensor previous\..* is \[\d+\]; its parameter is \[\d+, \d+\]/);
  }, 120_000);

  it('200 mutated files the TS codec refuses are each refused by checkpoint.py with a CheckpointError', () => {
    let seed = 20;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return Math.floor((seed / 2147483648) * n);
    };
    const good = encodeRunState(states[1]);
    const tensorNames = Object.keys(states[1].params).flatMap((p) => [p, ...Object.keys(states[1].optimizer.slots[p]).map((s) => slotTensorName(p, s))]);
    const pick = (): string => tensorNames[rand(tensorNames.length)];
    type Entry = { dtype: string; shape: number[]; data_offsets: number[] };
    const entry = (h: Header, n: string) => h[n] as Entry;
    const edits: ((h: Header) => void)[] = [
      (h) => void (entry(h, pick()).dtype = ['I32', 'BF16', 'F16', 'x'][rand(4)]),
      (h) => void (entry(h, pick()).dtype = 'F32'), // the state is F64: the offsets no longer fit
      (h) => void entry(h, pick()).shape.push(2),
      (h) => void (entry(h, pick()).shape = [2 ** 40, 2 ** 40]),
      (h) => void (entry(h, pick()).data_offsets[1] += 4),
      (h) => void (entry(h, pick()).data_offsets = [-4, 0]),
      (h) => void delete h[pick()],
      (h) => {
        const n = pick();
        h[`${n}x`] = h[n];
        delete h[n];
      },
      (h) => void (h.__metadata__.version = String(2 + rand(5))),
      (h) => void (h.__metadata__.format = 'pt'),
      (h) => void (h.__metadata__.stepsDone = String(100 + rand(9))),
      (h) => void (h.__metadata__.losses = JSON.stringify([1])),
      (h) => void (h.__metadata__.optimizer = JSON.stringify({ name: 'adamw', steps: 1 })),
      (h) => void (h.__metadata__.data = JSON.stringify({ seed: -1, nextBatch: 2 })),
      (h) => void (h.__metadata__.lrNext = '"fast"'),
      (h) => void (h.__metadata__.evals = '{'),
      (h) => void (h.__metadata__.config = '[]'),
    ];
    const mutants: Uint8Array[] = [];
    for (let i = 0; i < 200; i++) {
      const kind = i % 4;
      if (kind === 0) {
        const b = good.slice();
        b[rand(b.length)] ^= 1 << rand(8);
        mutants.push(b);
      } else if (kind === 1) mutants.push(good.slice(0, rand(good.length)));
      else if (kind === 2) {
        const b = good.slice();
        new DataView(b.buffer).setBigUint64(0, BigInt([0, 1, 7, b.length, b.length - 7, 2 ** 31][rand(6)]), true);
        mutants.push(b);
      } else mutants.push(editHeader(good, edits[rand(edits.length)]));
    }
    const jobs: Job[] = mutants.map((bytes, i) => {
      expect(() => decodeRunState(bytes), `mutant ${i}`).toThrow(CheckpointError);
      const path = join(dir, `mutant-${i}.safetensors`);
      writeFileSync(path, bytes);
      return { op: 'read', path };
    });
    const got = probe(dir, jobs);
    const accepted = got.flatMap((r, i) => ('refused' in r ? [] : [i]));
    expect(accepted).toEqual([]);
  }, 120_000);
});
