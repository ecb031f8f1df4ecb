/**
 * The run-state file: a state encodes and decodes back equal (F64 from the CPU
 * reference, F32 as from WebGPU, non-finite losses); a state written after k
 * steps of the float64 single-device loop, read back and resumed, gives
 * exactly the run of 2k steps; every refusal is a CheckpointError naming what
 * is wrong.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice } from '../nn/train.ts';
import { defaultRunConfig, toTrainConfig, withDataset, type RunConfig } from '../config/run-config.ts';
import { lrAt, namesModelSwitch } from '../nn/train-config.ts';
import { writeSafetensors } from '../util/safetensors.ts';
import { CheckpointError } from './checkpoint-error.ts';
import { decodeRunState, encodeRunState, readRunStateFile, slotTensorName, type CheckpointSource } from './codec.ts';
import { initialRunState, MAX_CHECKPOINT_BYTES, runStateOf, type RunState } from './run-state.ts';
import { refusal } from './testing/refusal.ts';
import { editHeader, editMetadata, headerOf } from './testing/edit-file.ts';

const cpu = new CpuBackend();
const spiral: RunConfig = { ...defaultRunConfig(), hidden: 8, layers: 3, batchSize: 16, microbatches: 4, steps: 8, evalEvery: 2 };
const names: RunConfig = { ...withDataset(defaultRunConfig(), 'names'), hidden: 16, embedDim: 4, layers: 3, batchSize: 16, microbatches: 2, steps: 4, evalEvery: 0 };
const gpt: RunConfig = { ...names, ...namesModelSwitch('gpt', 3), width: 8, heads: 2, blockSize: 16, batchSize: 8, microbatches: 2 };


/** The state with every array as float32, as a WebGPU run reads it back. */
function asFloat32(s: RunState): RunState {
  const f32 = (r: Record<string, Float32Array | Float64Array>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Float32Array.from(v)]));
  return { ...s, params: f32(s.params), optimizer: { ...s.optimizer, slots: Object.fromEntries(Object.entries(s.optimizer.slots).map(([k, v]) => [k, f32(v)])) } };
}

async function trainedState(cfg: RunConfig, k: number): Promise<RunState> {
  let done = 0;
  const r = await trainSingleDevice(cpu, toTrainConfig(cfg), { onStep: () => void done++, shouldStop: () => done >= k }, { readProgress: true });
  return runStateOf(cfg, r.progress!);
}

describe('a state encodes and decodes back equal', () => {
  for (const [name, cfg] of [['spiral MLP', spiral], ['char-MLP', names], ['GPT', gpt]] as const) {
    it(`${name}: F64, and F32 as from WebGPU`, async () => {
      const s = await trainedState({ ...cfg, optimizer: name === 'char-MLP' ? 'sgd' : 'adamw', lr: name === 'char-MLP' ? 0.05 : cfg.lr }, 3);
      for (const state of [s, asFloat32(s)]) {
        const bytes = encodeRunState(state);
        const back = decodeRunState(bytes);
        expect(back).toEqual(state);
        expect(Object.keys(back.params)).toEqual(Object.keys(state.params));
        const h = headerOf(bytes);
        const dtype = state.params[Object.keys(state.params)[0]] instanceof Float64Array ? 'F64' : 'F32';
        for (const p of Object.keys(state.params)) {
          expect((h[p] as { dtype: string }).dtype).toBe(dtype);
          for (const slot of Object.keys(state.optimizer.slots[p])) expect((h[slotTensorName(p, slot)] as { dtype: string }).dtype).toBe(dtype);
        }
      }
    });
  }

  it('the GPT keeps makemore\'s state-dict names and PyTorch layouts', async () => {
    const h = headerOf(encodeRunState(await initialRunState(gpt)));
    expect(h['transformer.h.0.attn.c_attn.weight']).toMatchObject({ shape: [24, 8] });
    expect(h['optimizer.transformer.h.0.attn.c_attn.weight.exp_avg_sq']).toMatchObject({ shape: [24, 8] });
    expect(h['lm_head.weight']).toMatchObject({ shape: [28, 8] });
    expect(h.__metadata__).toMatchObject({ format: 'pipelab-run-state', version: '1', stepsDone: '0', losses: '[]' });
  });

  it('non-finite losses and evaluations (a diverged run, the names set\'s unmeasured train loss) survive', async () => {
    const s = await initialRunState(spiral);
    const state: RunState = { ...s, stepsDone: 3, lrNext: lrAt(spiral, 3), data: { seed: s.config.seed, nextBatch: 3 }, losses: [1.25, NaN, Infinity], evals: [{ step: 2, trainLoss: NaN, trainAccuracy: NaN, valLoss: -Infinity, valAccuracy: 0.5 }] };
    const bytes = encodeRunState(state);
    expect(headerOf(bytes).__metadata__.losses).toBe('[1.25,"NaN","Infinity"]');
    expect(decodeRunState(bytes)).toEqual(state);
  });
});

describe('k steps, written, read back, k more steps: exactly the run of 2k steps (float64 CPU loop)', () => {
  const cases: [string, RunConfig][] = [
    ['AdamW, cosine schedule, weight decay', { ...spiral, weightDecay: 0.05, lrSchedule: 'cosine' }],
    ['SGD with momentum, cosine schedule', { ...spiral, optimizer: 'sgd', lr: 0.1, momentum: 0.9, weightDecay: 0.01, lrSchedule: 'cosine' }],
    ['the GPT, AdamW', { ...gpt, steps: 4 }],
  ];
  for (const [name, cfg] of cases) {
    it(name, async () => {
      const k = cfg.steps / 2;
      const whole = await trainSingleDevice(cpu, toTrainConfig(cfg));
      const bytes = encodeRunState(await trainedState(cfg, k));
      const state = decodeRunState(bytes, { config: cfg });
      expect(state.stepsDone).toBe(k);
      const resumed = await trainSingleDevice(cpu, toTrainConfig(cfg), {}, { from: state });
      expect(resumed.losses).toEqual(whole.losses);
      expect(resumed.params).toEqual(whole.params);
      expect(resumed.evals).toEqual(whole.evals);
    });
  }
});

describe('refusals name what is wrong', () => {
  let file: Uint8Array | undefined;
  const load = async () => (file ??= encodeRunState(await trainedState(spiral, 2)));

  it('truncated: the bytes expected and the bytes there', async () => {
    const b = await load();
    const e = refusal(() => decodeRunState(b.subarray(0, b.length - 100)));
    expect(e.kind).toBe('truncated');
    expect(e.message).toContain(`truncated checkpoint: safetensors: truncated: the header's tensors need ${b.length} bytes, the file has ${b.length - 100}`);
    expect(refusal(() => decodeRunState(b.subarray(0, 40))).kind).toBe('truncated');
  });

  it('not a checkpoint: a weights export, a text file, an empty file', async () => {
    const weights = writeSafetensors({ w: { data: new Float32Array(2), shape: [2] } }, { format: 'pt', producer: 'PipeLab' });
    expect(refusal(() => decodeRunState(weights)).message).toBe(
      'not a PipeLab checkpoint: a safetensors file of format "pt" written by "PipeLab"; a checkpoint\'s format is "pipelab-run-state" (a weights export is not a checkpoint)',
    );
    const text = refusal(() => decodeRunState(new TextEncoder().encode('name,loss\nada,1.5\n'.repeat(20))));
    expect(text.kind).toBe('not-a-checkpoint');
    expect(text.message).toMatch(/^not a checkpoint, or a damaged one: safetensors: header length \d+ is out of range/);
    expect(refusal(() => decodeRunState(new Uint8Array(0))).kind).toBe('truncated');
  });

  it('a newer format version', async () => {
    const good = await load();
    const e = refusal(() => decodeRunState(editMetadata(good, 'version', '2')));
    expect(e.kind).toBe('newer-version');
    expect(e.message).toBe('checkpoint format version 2 is newer than this PipeLab reads (version 1): open it with a newer PipeLab');
  });

  it('a changed byte anywhere: the checksum', async () => {
    const b = Uint8Array.from(await load());
    b[b.length - 3] ^= 0x10;
    const e = refusal(() => decodeRunState(b));
    expect(e.kind).toBe('corrupt');
    expect(e.message).toMatch(/^corrupted checkpoint: its checksum is [0-9a-f]{8} but its bytes give [0-9a-f]{8} \(damaged or changed after it was written\)$/);
  });

  it('another model: the first parameter that differs, and the field', async () => {
    const good = await load();
    const e = refusal(() => decodeRunState(good, { config: { ...spiral, hidden: 12 } }));
    expect(e.kind).toBe('mismatch');
    expect(e.message).toBe('a checkpoint of another model: parameter block0.linear.W is [2, 8] in the checkpoint, [2, 12] in the expected model (config.hidden = 8 in the checkpoint, 12 expected)');
    const deeper = refusal(() => decodeRunState(good, { config: { ...spiral, layers: 4 } }));
    expect(deeper.message).toBe('a checkpoint of another model: parameter block3.linear.W ([8, 8] in the expected model) is not in the checkpoint (config.layers = 3 in the checkpoint, 4 expected)');
  });

  it('another configuration: the first field that differs; fields in ignore may differ', async () => {
    const good = await load();
    const e = refusal(() => decodeRunState(good, { config: { ...spiral, lr: 0.02, seed: 9 } }));
    expect(e.message).toBe('a checkpoint of another configuration: config.lr = 0.01 in the checkpoint, 0.02 expected');
    expect(refusal(() => decodeRunState(good, { config: { ...spiral, ranks: 2 } })).message).toBe('a checkpoint of another configuration: config.ranks = 4 in the checkpoint, 2 expected');
    expect(decodeRunState(good, { config: { ...spiral, ranks: 2, schedule: 'gpipe' }, ignore: ['ranks', 'schedule'] }).stepsDone).toBe(2);
    expect(decodeRunState(good, { config: { ...spiral, fault: { kind: 'throw', action: '0F0' } } }).stepsDone).toBe(2);
  });

  it('contents inconsistent with its own configuration, behind a valid checksum', async () => {
    const good = await load();
    const good32 = encodeRunState(asFloat32(decodeRunState(good)));
    const cases: [Uint8Array, string][] = [
      [editMetadata(good, 'stepsDone', '3'), 'corrupted checkpoint: lrNext = 0.0083'],
      [editMetadata(good, 'stepsDone', '9'), 'corrupted checkpoint: stepsDone = 9: must be a whole number from 0 to 8'],
      [editMetadata(good, 'losses', '[1, NaN]'), 'corrupted checkpoint: __metadata__.losses = "[1, NaN]": is not JSON'],
      [editMetadata(good, 'config', '{"dataset":"spiral"}'), 'corrupted checkpoint: its configuration is not valid: config.'],
      [editMetadata(good, 'data', '{"seed":2,"nextBatch":2}'), 'corrupted checkpoint: data.seed = 2: must be the configuration\'s seed, 1'],
      [editMetadata(good, 'optimizer', '{"name":"sgd","steps":2}'), 'corrupted checkpoint: optimizer.name = "sgd": must be the configuration\'s optimizer, "adamw"'],
      [editMetadata(good, 'lrNext', '0.5'), 'corrupted checkpoint: lrNext = 0.5: must be the configuration\'s learning rate at step 2'],
      [editMetadata(good, 'crc32', undefined), 'corrupted checkpoint: crc32 = "missing": must be 8 lowercase hex digits'],
      [editHeader(good32, (h) => void ((h['head.linear.b'] as { dtype: string }).dtype = 'I32')), 'corrupted checkpoint: tensor head.linear.b is I32; weights and optimizer state are F32 or F64'],
      [editHeader(good, (h) => void ((h['head.linear.b'] as { shape: number[] }).shape = [1, 3])), 'corrupted checkpoint: tensor head.linear.b is [1, 3]; the configuration\'s model has [3]'],
      [editHeader(good, (h) => { h['extra.b'] = h['head.linear.b']; delete h['head.linear.b']; }), 'corrupted checkpoint: tensor head.linear.b ([3] in the configuration\'s model) is missing'],
    ];
    for (const [bytes, message] of cases) expect(refusal(() => decodeRunState(bytes)).message, message).toContain(message);
  });

  it('a file past 1 GiB is refused by its size, before any byte is read', async () => {
    const reads: string[] = [];
    const huge: CheckpointSource = {
      size: MAX_CHECKPOINT_BYTES + 1,
      slice: () => {
        reads.push('slice');
        return new Blob([]);
      },
      arrayBuffer: async () => {
        reads.push('whole');
        return new ArrayBuffer(0);
      },
    };
    const e = await readRunStateFile(huge).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(CheckpointError);
    expect((e as CheckpointError).message).toBe('the file is 1073.7 MB (1073741825 bytes); a checkpoint may be at most 1 GiB (1073741824 bytes): it was not read');
    expect(reads).toEqual([]);
  });

  it('a header length past the file is refused from the first 8 bytes, before the file is read whole', async () => {
    const b = Uint8Array.from(await load());
    new DataView(b.buffer).setBigUint64(0, 50_000_000n, true);
    let whole = 0;
    const blob = new Blob([b]);
    const source: CheckpointSource = { size: blob.size, slice: (a, z) => blob.slice(a, z), arrayBuffer: async () => (whole++, blob.arrayBuffer()) };
    const e = (await readRunStateFile(source).catch((x: unknown) => x)) as CheckpointError;
    expect(e.kind).toBe('truncated');
    expect(e.message).toContain('header length 50000000 runs past the end');
    expect(whole).toBe(0);
    expect((await readRunStateFile(new Blob([Uint8Array.from(await load())]), { config: spiral })).stepsDone).toBe(2);
  });
});
