/**
 * The run-state file, format version 1: one safetensors file (loads in
 * PyTorch; src/export/checkpoint.py reads and writes it with the standard
 * library) holding
 *   - every parameter under its PyTorch name (the page's names: makemore's
 *     state-dict names for the GPT), F64 from the CPU reference, F32 from WebGPU;
 *   - the optimizer's state per parameter as `optimizer.<param>.<slot>`
 *     (AdamW: exp_avg, exp_avg_sq; SGD: momentum_buffer), same dtype;
 *   - PipeDream-2BW after its first step: the weight version before the
 *     latest as `previous.<param>` (its stream's next block runs on it);
 *   - in `__metadata__`: format "pipelab-run-state", version "1", the
 *     fields of ./state-fields.ts (configuration, steps done, optimizer name and
 *     step count, next lr, data position and seed, losses, evaluations), and
 *     `crc32`: the CRC-32 of the whole file with these 8 hex digits read as
 *     "00000000" (the header holds the byte sequence `"crc32":"` once).
 *
 * decodeRunState checks everything before it returns: a state comes back
 * whole or not at all, and every refusal is a CheckpointError naming what is
 * wrong (too large, truncated, not a checkpoint, newer version, damaged,
 * another model or configuration than expected).
 */
import { buildModelSpec } from '../nn/model-config.ts';
import { paramCount, type ModelSpec } from '../nn/model-spec.ts';
import { OPTIMIZER_SLOTS } from '../nn/optimizer.ts';
import { paramShapes } from '../nn/param-shapes.ts';
import { toTrainConfig, type RunConfig } from '../config/run-config.ts';
import { keepsPreviousVersion } from '../schedule/registry.ts';
import { crc32 } from '../util/crc32.ts';
import { headerLengthOf, readSafetensors, SafetensorsError, writeSafetensors, type NamedTensor, type ParsedSafetensors } from '../util/safetensors.ts';
import { CheckpointError } from './checkpoint-error.ts';
import { MAX_CHECKPOINT_BYTES, RUN_STATE_FORMAT, RUN_STATE_VERSION, stateConfig, type RunState, type StateArray } from './run-state.ts';
import { readStateFields, stateMetadata } from './state-fields.ts';
import { checkExpected, type StateExpectation } from './state-match.ts';

export type { StateExpectation } from './state-match.ts';

const CHECKSUM_KEY = new TextEncoder().encode('"crc32":"');
const PLACEHOLDER = '00000000';

/** The tensor holding optimizer slot `slot` of parameter `param`. */
export function slotTensorName(param: string, slot: string): string {
  return `optimizer.${param}.${slot}`;
}

/** The tensor holding PipeDream-2BW's previous weight version of parameter `param`. */
export function previousTensorName(param: string): string {
  return `previous.${param}`;
}

/** Whether a state of `config` after `stepsDone` steps holds a previous weight version: PipeDream-2BW's, once it has updated. */
export function holdsPrevious(config: Pick<RunConfig, 'schedule'>, stepsDone: number): boolean {
  return keepsPreviousVersion(config.schedule) && stepsDone > 0;
}

function modelOf(config: RunConfig): ModelSpec {
  return buildModelSpec(toTrainConfig(config));
}

function shapeText(s: readonly number[]): string {
  return `[${s.join(', ')}]`;
}

function sizeText(bytes: number): string {
  return bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${bytes} bytes`;
}

/** Where the checksum's 8 hex digits sit: just after the one `"crc32":"` of the header. */
function checksumOffset(bytes: Uint8Array, headerLength: number): number {
  const end = 8 + headerLength - CHECKSUM_KEY.length;
  let found = -1;
  for (let i = 8; i <= end; i++) {
    let k = 0;
    while (k < CHECKSUM_KEY.length && bytes[i + k] === CHECKSUM_KEY[k]) k++;
    if (k < CHECKSUM_KEY.length) continue;
    if (found >= 0) throw new CheckpointError('corrupt', 'corrupted checkpoint: its header names crc32 more than once');
    found = i + CHECKSUM_KEY.length;
  }
  if (found < 0 || found + 8 > 8 + headerLength) throw new CheckpointError('corrupt', 'corrupted checkpoint: its header has no crc32 checksum');
  return found;
}

/** The CRC-32 of the file with its checksum digits (at `at`) read as "00000000". */
function fileChecksum(bytes: Uint8Array, at: number): string {
  let c = crc32(bytes.subarray(0, at));
  c = crc32(new TextEncoder().encode(PLACEHOLDER), c);
  c = crc32(bytes.subarray(at + 8), c);
  return c.toString(16).padStart(8, '0');
}

/** The file of `state`. Throws a CheckpointError if the state does not hold its configuration's parameters and optimizer slots. */
export function encodeRunState(state: RunState): Uint8Array {
  const config = stateConfig(state.config);
  if (state.optimizer.name !== config.optimizer) throw new CheckpointError('mismatch', `the optimizer state is ${state.optimizer.name}'s; the configuration's optimizer is ${config.optimizer}`);
  const shapes = paramShapes(modelOf(config));
  const tensors: Record<string, NamedTensor> = {};
  const take = (name: string, shape: number[], v: StateArray | undefined): void => {
    const count = shape.reduce((a, b) => a * b, 1);
    if (!v || v.length !== count) throw new CheckpointError('mismatch', `the state's ${name} holds ${v ? v.length : 'no'} values; the configuration's model has ${shapeText(shape)}`);
    tensors[name] = { data: v, shape };
  };
  for (const [name, shape] of shapes) take(name, shape, Object.hasOwn(state.params, name) ? state.params[name] : undefined);
  for (const [name, shape] of shapes) {
    const own = Object.hasOwn(state.optimizer.slots, name) ? state.optimizer.slots[name] : {};
    for (const slot of OPTIMIZER_SLOTS[config.optimizer]) take(slotTensorName(name, slot), shape, Object.hasOwn(own, slot) ? own[slot] : undefined);
  }
  const previous = state.previous;
  if (holdsPrevious(config, state.stepsDone) !== (previous !== undefined)) {
    throw new CheckpointError('mismatch', previous ? `a state of ${config.schedule} after ${state.stepsDone} steps holds no previous weight version; this one has one` : `a PipeDream-2BW state after ${state.stepsDone} steps needs its previous weight version; this one has none`);
  }
  if (previous) for (const [name, shape] of shapes) take(previousTensorName(name), shape, Object.hasOwn(previous, name) ? previous[name] : undefined);
  const bytes = writeSafetensors(tensors, { format: RUN_STATE_FORMAT, version: String(RUN_STATE_VERSION), ...stateMetadata({ ...state, config }), crc32: PLACEHOLDER });
  sealChecksum(bytes);
  return bytes;
}

/** Writes the checksum of a run-state file into its `crc32` digits, in place (the encoder's last step; tests reseal edited files with it). */
export function sealChecksum(bytes: Uint8Array): void {
  const at = checksumOffset(bytes, headerLengthOf(bytes, bytes.length));
  bytes.set(new TextEncoder().encode(fileChecksum(bytes, at)), at);
}

function tooLarge(bytes: number): CheckpointError {
  return new CheckpointError('too-large', `the file is ${sizeText(bytes)} (${bytes} bytes); a checkpoint may be at most 1 GiB (${MAX_CHECKPOINT_BYTES} bytes): it was not read`);
}

function fromSafetensorsError(e: unknown): unknown {
  if (!(e instanceof SafetensorsError)) return e;
  return e.truncated ? new CheckpointError('truncated', `truncated checkpoint: ${e.message}`) : new CheckpointError('not-a-checkpoint', `not a checkpoint, or a damaged one: ${e.message}`);
}

/** Format, version and checksum: whether this is a run-state file this PipeLab reads, undamaged. */
function checkEnvelope(bytes: Uint8Array, file: ParsedSafetensors): void {
  const { format, version, crc32: sum, producer } = file.metadata;
  if (format !== RUN_STATE_FORMAT) {
    const what = format === undefined ? 'without a format in its __metadata__' : `of format ${JSON.stringify(format.slice(0, 40))}${producer ? ` written by ${JSON.stringify(producer.slice(0, 40))}` : ''}`;
    throw new CheckpointError('not-a-checkpoint', `not a PipeLab checkpoint: a safetensors file ${what}; a checkpoint's format is "${RUN_STATE_FORMAT}" (a weights export is not a checkpoint)`);
  }
  if (version === undefined || !/^[0-9]{1,9}$/.test(version) || Number(version) < 1) {
    throw new CheckpointError('corrupt', `corrupted checkpoint: version = ${JSON.stringify((version ?? 'missing').slice(0, 40))}: must be a whole number ≥ 1`);
  }
  if (Number(version) > RUN_STATE_VERSION) {
    throw new CheckpointError('newer-version', `checkpoint format version ${Number(version)} is newer than this PipeLab reads (version ${RUN_STATE_VERSION}): open it with a newer PipeLab`);
  }
  if (sum === undefined || !/^[0-9a-f]{8}$/.test(sum)) throw new CheckpointError('corrupt', `corrupted checkpoint: crc32 = ${JSON.stringify((sum ?? 'missing').slice(0, 40))}: must be 8 lowercase hex digits`);
  const got = fileChecksum(bytes, checksumOffset(bytes, file.headerLength));
  if (got !== sum) throw new CheckpointError('corrupt', `corrupted checkpoint: its checksum is ${sum} but its bytes give ${got} (damaged or changed after it was written)`);
}

/**
 * The tensors of a sound file against its own configuration: exactly the
 * model's parameters and the optimizer's slots, each with the model's shape,
 * F32 or F64. `expectedValues` (the model's parameter count × (1 + slots)) is
 * checked first, so a hostile configuration builds no model larger than the file.
 */
function checkTensors(file: ParsedSafetensors, spec: ModelSpec, slots: readonly string[], previous: boolean): Map<string, number[]> {
  const want = paramCount(spec) * (1 + slots.length + (previous ? 1 : 0));
  const have = Object.values(file.tensors).reduce((s, t) => s + t.data.length, 0);
  if (have !== want) throw new CheckpointError('corrupt', `corrupted checkpoint: its tensors hold ${have} values; the configuration's model and its optimizer state${previous ? ' and its previous weight version (PipeDream-2BW)' : ''} hold ${want}`);
  const shapes = paramShapes(spec);
  const names = new Set<string>();
  for (const [name, shape] of shapes) {
    for (const t of [name, ...slots.map((s) => slotTensorName(name, s)), ...(previous ? [previousTensorName(name)] : [])]) {
      names.add(t);
      const got = Object.hasOwn(file.tensors, t) ? file.tensors[t] : undefined;
      if (!got) throw new CheckpointError('corrupt', `corrupted checkpoint: tensor ${t} (${shapeText(shape)} in the configuration's model) is missing`);
      if (shapeText(got.shape) !== shapeText(shape)) throw new CheckpointError('corrupt', `corrupted checkpoint: tensor ${t} is ${shapeText(got.shape)}; the configuration's model has ${shapeText(shape)}`);
      if (got.dtype === 'I32') throw new CheckpointError('corrupt', `corrupted checkpoint: tensor ${t} is I32; weights and optimizer state are F32 or F64`);
    }
  }
  const extra = Object.keys(file.tensors).find((t) => !names.has(t));
  if (extra !== undefined) throw new CheckpointError('corrupt', `corrupted checkpoint: tensor ${extra.slice(0, 80)} is neither a parameter of the configuration's model nor its optimizer state`);
  return shapes;
}

/**
 * The state a file holds, checked whole (see the module comment); with
 * `expect`, also that it is a checkpoint of that configuration. Throws a
 * CheckpointError, and nothing else, for any file that is not a sound
 * checkpoint.
 */
export function decodeRunState(bytes: Uint8Array, expect?: StateExpectation): RunState {
  if (bytes.length > MAX_CHECKPOINT_BYTES) throw tooLarge(bytes.length);
  let file: ParsedSafetensors;
  try {
    file = readSafetensors(bytes);
  } catch (e) {
    throw fromSafetensorsError(e);
  }
  checkEnvelope(bytes, file);
  const fields = readStateFields(file.metadata);
  const spec = modelOf(fields.config);
  const slots = OPTIMIZER_SLOTS[fields.optimizer.name];
  const withPrevious = holdsPrevious(fields.config, fields.stepsDone);
  const shapes = checkTensors(file, spec, slots, withPrevious);
  if (expect) {
    const wantSpec = modelOf(stateConfig(expect.config));
    checkExpected(fields.config, shapes, JSON.stringify(wantSpec) === JSON.stringify(spec) ? shapes : paramShapes(wantSpec), expect);
  }
  const params: Record<string, StateArray> = {};
  const slotValues: Record<string, Record<string, StateArray>> = {};
  const previous: Record<string, StateArray> = {};
  for (const name of shapes.keys()) {
    params[name] = file.tensors[name].data as StateArray;
    slotValues[name] = Object.fromEntries(slots.map((s) => [s, file.tensors[slotTensorName(name, s)].data as StateArray]));
    if (withPrevious) previous[name] = file.tensors[previousTensorName(name)].data as StateArray;
  }
  return { ...fields, params, optimizer: { ...fields.optimizer, slots: slotValues }, ...(withPrevious ? { previous } : {}) };
}

/** What a checkpoint file is read from: a File or Blob (the page), or anything with the same three members. */
export type CheckpointSource = Pick<Blob, 'size' | 'slice' | 'arrayBuffer'>;

/**
 * Reads a checkpoint file: refused by its size alone past 1 GiB, then by its
 * first 8 bytes if the header length they give is out of range, before the
 * file is read whole; then decoded as decodeRunState does.
 */
export async function readRunStateFile(file: CheckpointSource, expect?: StateExpectation): Promise<RunState> {
  if (file.size > MAX_CHECKPOINT_BYTES) throw tooLarge(file.size);
  try {
    headerLengthOf(new Uint8Array(await file.slice(0, 8).arrayBuffer()), file.size);
  } catch (e) {
    throw fromSafetensorsError(e);
  }
  return decodeRunState(new Uint8Array(await file.arrayBuffer()), expect);
}
