/**
 * The loader fuzzed (issue 20, bad input): hundreds of mutated run-state files
 * — truncations, flipped bytes, wrong header lengths, bytes cut out or added,
 * and, behind a resealed checksum, huge or hostile shapes, wrong dtypes,
 * broken offsets, NaN and hostile values in the metadata and configuration,
 * tensors dropped, renamed or swapped. Each file either decodes or is refused
 * with a CheckpointError; nothing else is thrown, nothing hangs (each decode
 * is timed), and a decoded state is whole: byte mutations decode only to the
 * original state, and an edited file only to a state that itself encodes and
 * decodes back equal.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice } from '../nn/train.ts';
import { defaultRunConfig, toTrainConfig, URL_FIELDS, withDataset, type RunConfig } from '../config/run-config.ts';
import { CheckpointError } from './checkpoint-error.ts';
import { decodeRunState, encodeRunState } from './codec.ts';
import { runStateOf, type RunState } from './run-state.ts';
import { STATE_FIELDS } from './state-fields.ts';
import { editHeader, type Header } from './testing/edit-file.ts';

/** Slowest decode allowed (the files are a few kB: a hang or a quadratic path shows as seconds). */
const DECODE_MS = 2000;

type Outcome = { refused: CheckpointError } | { state: RunState };

function attempt(bytes: Uint8Array): Outcome {
  const t0 = performance.now();
  try {
    return { state: decodeRunState(bytes) };
  } catch (e) {
    // Anything but a CheckpointError fails the property (the error propagates).
    if (!(e instanceof CheckpointError)) throw e;
    expect(e.message.length).toBeLessThan(600);
    return { refused: e };
  } finally {
    expect(performance.now() - t0).toBeLessThan(DECODE_MS);
  }
}

async function stateOf(cfg: RunConfig, k: number): Promise<RunState> {
  let done = 0;
  const r = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg), { onStep: () => void done++, shouldStop: () => done >= k }, { readProgress: true });
  return runStateOf(cfg, r.progress!);
}

const bases: { bytes: Uint8Array; state: RunState }[] = [];

beforeAll(async () => {
  const spiral: RunConfig = { ...defaultRunConfig(), hidden: 6, layers: 2, ranks: 2, batchSize: 16, microbatches: 4, steps: 6, evalEvery: 1 };
  const names: RunConfig = { ...withDataset(defaultRunConfig(), 'names'), hidden: 8, embedDim: 3, layers: 1, ranks: 2, batchSize: 8, microbatches: 2, steps: 4, evalEvery: 0, optimizer: 'sgd', lr: 0.05 };
  const a = await stateOf(spiral, 3);
  const b = await stateOf(names, 2);
  // The char-MLP's state as float32, as a WebGPU run gives it.
  const f32 = (r: Record<string, Float32Array | Float64Array>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Float32Array.from(v)]));
  const b32: RunState = { ...b, params: f32(b.params), optimizer: { ...b.optimizer, slots: Object.fromEntries(Object.entries(b.optimizer.slots).map(([k, v]) => [k, f32(v)])) } };
  for (const state of [a, b32]) bases.push({ bytes: encodeRunState(state), state });
});

/** A position in [0, 1), uniform over the file (fast-check's doubles and naturals favour the ends). */
const fraction = fc.noBias(fc.integer({ min: 0, max: 999_999 })).map((v) => v / 1e6);

/** A byte-level mutation of a file of `len` bytes whose header is `n` bytes long. */
type ByteMutation = (b: Uint8Array, n: number) => Uint8Array;

const byteMutation: fc.Arbitrary<[string, ByteMutation]> = fc.oneof(
  fraction.map((f): [string, ByteMutation] => [`truncated at ${f.toFixed(3)}`, (b) => b.subarray(0, Math.floor(f * b.length))]),
  fc.array(fc.tuple(fraction, fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 4 }).map((flips): [string, ByteMutation] => [
    `bytes flipped anywhere ${JSON.stringify(flips)}`,
    (b) => {
      const c = Uint8Array.from(b);
      for (const [f, x] of flips) c[Math.floor(f * c.length)] ^= x;
      return c;
    },
  ]),
  fc.tuple(fraction, fc.integer({ min: 1, max: 255 })).map(([f, x]): [string, ByteMutation] => [
    `a header byte flipped ${f.toFixed(3)} ^ ${x}`,
    (b, n) => {
      const c = Uint8Array.from(b);
      c[8 + Math.floor(f * n)] ^= x;
      return c;
    },
  ]),
  fc.tuple(fraction, fc.integer({ min: 1, max: 255 })).map(([f, x]): [string, ByteMutation] => [
    `a data byte flipped ${f.toFixed(3)} ^ ${x}`,
    (b, n) => {
      const c = Uint8Array.from(b);
      c[8 + n + Math.floor(f * (c.length - 8 - n))] ^= x;
      return c;
    },
  ]),
  fc.oneof(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.integer({ min: -24, max: 24 }).map((d) => BigInt(d))).map((v): [string, ByteMutation] => [
    `header length ${v < 64n ? `n + ${v}` : v}`,
    (b, n) => {
      const c = Uint8Array.from(b);
      const len = v < 64n ? BigInt(Math.max(0, n + Number(v))) : v;
      new DataView(c.buffer).setBigUint64(0, len, true);
      return c;
    },
  ]),
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map((extra): [string, ByteMutation] => [`${extra.length} bytes appended`, (b) => Uint8Array.from([...b, ...extra])]),
  fc.tuple(fraction, fc.integer({ min: 1, max: 200 })).map(([f, k]): [string, ByteMutation] => [
    `${k} bytes cut out at ${f.toFixed(3)}`,
    (b) => {
      const at = Math.floor(f * b.length);
      return Uint8Array.from([...b.subarray(0, at), ...b.subarray(at + k)]);
    },
  ]),
  fc.tuple(fraction, fc.uint8Array({ minLength: 1, maxLength: 16 })).map(([f, ins]): [string, ByteMutation] => [
    `${ins.length} bytes inserted at ${f.toFixed(3)}`,
    (b) => {
      const at = Math.floor(f * b.length);
      return Uint8Array.from([...b.subarray(0, at), ...ins, ...b.subarray(at)]);
    },
  ]),
);

/** Values no field should take, and a few that some fields may. */
const hostile = fc.constantFrom<unknown>(
  null, NaN, Infinity, -Infinity, -1, 0, 1, 1.5, 2 ** 31, 2 ** 53, 1e308, '3', '', 'x'.repeat(5000), true, [], {}, [4], [2 ** 31, 2 ** 31], [-1], [1.5], [1e9, 1e9, 1e9],
  'F16', 'BF16', 'I32', 'I64', 'F64', 'F32', [0, 0], [0, 2 ** 53], [8, 4], { dtype: 'F32' },
);
const hostileText = fc.constantFrom('NaN', '[NaN]', '{"seed":NaN,"nextBatch":3}', '', 'null', '1e309', '-1', '2', '{}', '[]', '"x"', '[1,2,3', 'x'.repeat(20_000), '{"name":"adamw","steps":-1}', '[{"step":1}]', '9007199254740993');

/** A header edit (resealed unless `seal` is false) and whether it must be refused. */
type Edit = { what: string; edit: (h: Header) => void; mustRefuse: boolean; seal: boolean };

function tensorNames(h: Header): string[] {
  return Object.keys(h).filter((k) => k !== '__metadata__');
}

const edit: fc.Arbitrary<Edit> = fc.oneof(
  // A tensor's entry: a hostile shape, dtype or offsets.
  fc.tuple(fc.nat(), fc.constantFrom('shape', 'dtype', 'data_offsets'), hostile).map(([i, key, v]): Edit => ({
    what: `tensor #${i} ${key} = ${JSON.stringify(v)?.slice(0, 40)}`,
    edit: (h) => {
      const names = tensorNames(h);
      const e = h[names[i % names.length]] as Record<string, unknown>;
      if (JSON.stringify(e[key]) === JSON.stringify(v)) e[key] = 'changed';
      else e[key] = v;
    },
    mustRefuse: true,
    seal: true,
  })),
  // A metadata field replaced with hostile text.
  fc.tuple(fc.constantFrom(...STATE_FIELDS, 'format', 'version'), hostileText).map(([key, v]): Edit => ({
    what: `__metadata__.${key} = ${JSON.stringify(v.slice(0, 40))}`,
    edit: (h) => void (h.__metadata__[key] = h.__metadata__[key] === v ? `${v}0` : v),
    // A producer is any text.
    mustRefuse: key !== 'producer',
    seal: true,
  })),
  // A metadata field removed.
  fc.constantFrom(...STATE_FIELDS, 'format', 'version', 'crc32').map((key): Edit => ({ what: `__metadata__.${key} removed`, edit: (h) => void delete h.__metadata__[key], mustRefuse: true, seal: true })),
  // One configuration field hostile, removed, or an unknown one added (some hostile values are valid for some fields).
  fc.tuple(fc.constantFrom(...URL_FIELDS, 'unknownKey', '__proto__'), fc.oneof(hostile, fc.constant(undefined))).map(([key, v]): Edit => ({
    what: `config.${key} = ${v === undefined ? 'removed' : JSON.stringify(v)?.slice(0, 40)}`,
    edit: (h) => {
      const c = JSON.parse(h.__metadata__.config) as Record<string, unknown>;
      if (v === undefined) delete c[key];
      else Object.defineProperty(c, key, { value: v, enumerable: true, configurable: true, writable: true });
      h.__metadata__.config = JSON.stringify(c);
    },
    mustRefuse: false,
    seal: true,
  })),
  // A tensor dropped, renamed, or two tensors' bytes swapped (the last may be a sound state: both have one shape).
  fc.tuple(fc.nat(), fc.nat(), fc.constantFrom('drop', 'rename', 'swap')).map(([i, j, how]): Edit => ({
    what: `tensors #${i} #${j} ${how}`,
    edit: (h) => {
      const names = tensorNames(h);
      const a = names[i % names.length], b = names[j % names.length];
      if (how === 'drop') delete h[a];
      else if (how === 'rename') {
        h[`${a}.renamed`] = h[a];
        delete h[a];
      } else {
        const ea = h[a] as { data_offsets: unknown }, eb = h[b] as { data_offsets: unknown };
        [ea.data_offsets, eb.data_offsets] = [eb.data_offsets, ea.data_offsets];
      }
    },
    mustRefuse: how !== 'swap',
    seal: true,
  })),
  // Any of the edits above left unsealed: the checksum no longer matches.
  fc.tuple(fc.nat(), hostile).map(([i, v]): Edit => ({
    what: `unsealed: tensor #${i} shape = ${JSON.stringify(v)?.slice(0, 40)}`,
    edit: (h) => {
      const names = tensorNames(h);
      (h[names[i % names.length]] as Record<string, unknown>).shape = v;
    },
    mustRefuse: true,
    seal: false,
  })),
);

describe('the run-state loader, fuzzed', () => {
  it('byte mutations (300 files): refused with a CheckpointError, or decoded to the original state', () => {
    const kinds = new Map<string, number>();
    let decoded = 0;
    fc.assert(
      fc.property(fc.nat(), byteMutation, (which, [what, mutate]) => {
        const base = bases[which % bases.length];
        const n = Number(new DataView(base.bytes.buffer).getBigUint64(0, true));
        const out = attempt(mutate(base.bytes, n));
        if ('state' in out) {
          expect(out.state, what).toEqual(base.state);
          decoded++;
        } else kinds.set(out.refused.kind, (kinds.get(out.refused.kind) ?? 0) + 1);
      }),
      { numRuns: 300, seed: 20 },
    );
    console.log(`byte mutations: ${decoded} decoded to the original, refused ${JSON.stringify(Object.fromEntries(kinds))}`);
    for (const k of ['truncated', 'corrupt', 'not-a-checkpoint']) expect(kinds.get(k), k).toBeGreaterThan(5);
  });

  it('header edits behind a resealed checksum (300 files): refused with a CheckpointError, or decoded to a whole, self-consistent state', () => {
    const kinds = new Map<string, number>();
    let decoded = 0;
    fc.assert(
      fc.property(fc.nat(), edit, (which, e) => {
        const base = bases[which % bases.length];
        let bytes: Uint8Array;
        try {
          bytes = editHeader(base.bytes, e.edit, e.seal);
        } catch (x) {
          // The edit removed what resealing needs (e.g. the crc32 digits): the file is refused like any other.
          if (!(x instanceof CheckpointError)) throw x;
          bytes = editHeader(base.bytes, e.edit, false);
        }
        const out = attempt(bytes);
        if ('refused' in out) {
          kinds.set(out.refused.kind, (kinds.get(out.refused.kind) ?? 0) + 1);
          return;
        }
        expect(e.mustRefuse, `${e.what} decoded`).toBe(false);
        decoded++;
        // Whole: every parameter and slot of its configuration's model, and it round-trips.
        expect(decodeRunState(encodeRunState(out.state))).toEqual(out.state);
      }),
      { numRuns: 300, seed: 21 },
    );
    console.log(`header edits: ${decoded} decoded (sound edits), refused ${JSON.stringify(Object.fromEntries(kinds))}`);
    expect(kinds.get('corrupt')).toBeGreaterThan(50);
    expect(decoded).toBeGreaterThan(0);
  });
});
