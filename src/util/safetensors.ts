/**
 * The safetensors format (huggingface/safetensors), written and read without
 * dependencies, so trained weights load in PyTorch (`safetensors.torch.load_file`)
 * and numpy (`safetensors.numpy.load_file`).
 *
 * Layout: 8 bytes, little-endian u64 N = header length; N bytes of UTF-8 JSON
 * `{ name: { dtype, shape, data_offsets: [begin, end] }, "__metadata__": {..} }`
 * padded with spaces to a multiple of 8; then the tensors' raw little-endian
 * bytes, back to back in header order, offsets relative to the end of the header.
 */

export type SafetensorsDType = 'F32' | 'F64' | 'I32';

export interface NamedTensor {
  data: Float32Array | Float64Array | Int32Array;
  shape: readonly number[];
}

export interface SafetensorsHeaderEntry {
  dtype: SafetensorsDType;
  shape: number[];
  data_offsets: [number, number];
}

export interface ParsedSafetensors {
  metadata: Record<string, string>;
  tensors: Record<string, { dtype: SafetensorsDType; shape: number[]; data: Float32Array | Float64Array | Int32Array }>;
  /** Length of the JSON header in bytes, as the first 8 bytes say. */
  headerLength: number;
}

/** A file that is not well-formed safetensors; `truncated` when its bytes end before its header says they do. */
export class SafetensorsError extends Error {
  constructor(
    message: string,
    readonly truncated = false,
  ) {
    super(`safetensors: ${message}`);
    this.name = 'SafetensorsError';
  }
}

/** The largest JSON header read (the safetensors library's own limit), so a hostile length is refused before anything is decoded. */
export const MAX_HEADER_BYTES = 100_000_000;

function dtypeOf(a: NamedTensor['data']): SafetensorsDType {
  if (a instanceof Float32Array) return 'F32';
  if (a instanceof Float64Array) return 'F64';
  return 'I32';
}

const BYTES: Readonly<Record<SafetensorsDType, number>> = { F32: 4, F64: 8, I32: 4 };

function littleEndianHost(): boolean {
  return new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
}

/** Copies a typed array's bytes into out at offset, little-endian whatever the host. */
function writeLittleEndian(out: DataView, offset: number, a: NamedTensor['data']): void {
  if (littleEndianHost()) {
    new Uint8Array(out.buffer, out.byteOffset + offset, a.byteLength).set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
    return;
  }
  const width = a.BYTES_PER_ELEMENT;
  for (let i = 0; i < a.length; i++) {
    if (a instanceof Float32Array) out.setFloat32(offset + i * width, a[i], true);
    else if (a instanceof Float64Array) out.setFloat64(offset + i * width, a[i], true);
    else out.setInt32(offset + i * width, a[i], true);
  }
}

/**
 * Serialises named tensors to safetensors bytes. Tensors are written in the
 * order given; each shape's product must equal its data length.
 */
export function writeSafetensors(tensors: Record<string, NamedTensor>, metadata: Record<string, string> = {}): Uint8Array {
  const names = Object.keys(tensors);
  const header: Record<string, SafetensorsHeaderEntry | Record<string, string>> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = { ...metadata };
  let offset = 0;
  for (const name of names) {
    if (name === '__metadata__') throw new SafetensorsError('"__metadata__" cannot name a tensor');
    const t = tensors[name];
    const count = t.shape.reduce((p, d) => p * d, 1);
    if (!t.shape.every((d) => Number.isInteger(d) && d >= 0)) throw new SafetensorsError(`tensor ${name}: shape [${t.shape.join(', ')}] must hold non-negative integers`);
    if (count !== t.data.length) throw new SafetensorsError(`tensor ${name}: shape [${t.shape.join(', ')}] holds ${count} values but the data has ${t.data.length}`);
    const dtype = dtypeOf(t.data);
    const end = offset + count * BYTES[dtype];
    header[name] = { dtype, shape: [...t.shape], data_offsets: [offset, end] };
    offset = end;
  }
  let json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  if (padded !== json.length) {
    const p = new Uint8Array(padded).fill(0x20);
    p.set(json);
    json = p;
  }
  const out = new Uint8Array(8 + json.length + offset);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let at = 8 + json.length;
  for (const name of names) {
    const t = tensors[name];
    writeLittleEndian(view, at, t.data);
    at += t.data.byteLength;
  }
  return out;
}

/**
 * The header length the first 8 bytes give, checked against the file's size
 * (`fileBytes`, all of it, whether or not it is read yet) and MAX_HEADER_BYTES.
 */
export function headerLengthOf(first8: Uint8Array, fileBytes: number): number {
  if (first8.length < 8 || fileBytes < 8) throw new SafetensorsError(`${fileBytes} bytes, fewer than the 8 of the header length`, true);
  const n = new DataView(first8.buffer, first8.byteOffset, 8).getBigUint64(0, true);
  if (n < 2n || n > BigInt(MAX_HEADER_BYTES)) throw new SafetensorsError(`header length ${n} is out of range (2 to ${MAX_HEADER_BYTES} bytes)`);
  if (8n + n > BigInt(fileBytes)) throw new SafetensorsError(`header length ${n} runs past the end of the ${fileBytes}-byte file (expected at least ${8n + n} bytes)`, true);
  return Number(n);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** One header entry, checked: a known dtype, a shape of whole numbers whose product is safe, offsets [begin ≤ end] holding exactly that many values. */
function checkedEntry(name: string, value: unknown): SafetensorsHeaderEntry {
  const at = `tensor ${JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name)}`;
  if (!isRecord(value)) throw new SafetensorsError(`${at}: its header entry is not an object`);
  const { dtype, shape, data_offsets: offsets } = value;
  if (typeof dtype !== 'string' || !(dtype in BYTES)) throw new SafetensorsError(`${at}: dtype ${JSON.stringify(dtype)?.slice(0, 40)} is not F32, F64 or I32`);
  if (!Array.isArray(shape) || shape.length > 64 || !shape.every(isCount)) throw new SafetensorsError(`${at}: shape must be a list of at most 64 whole numbers`);
  let count = 1;
  for (const d of shape as number[]) {
    count *= d;
    if (!Number.isSafeInteger(count)) throw new SafetensorsError(`${at}: shape [${shape.join(', ')}] holds more values than can be addressed`);
  }
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isCount) || offsets[0] > offsets[1]) {
    throw new SafetensorsError(`${at}: data_offsets must be [begin, end] with 0 ≤ begin ≤ end`);
  }
  const [begin, end] = offsets as [number, number];
  const d = dtype as SafetensorsDType;
  if (end - begin !== count * BYTES[d]) throw new SafetensorsError(`${at}: offsets [${begin}, ${end}] do not hold shape [${shape.join(', ')}] of ${d}`);
  return { dtype: d, shape: [...(shape as number[])], data_offsets: [begin, end] };
}

function decodeData(bytes: Uint8Array, start: number, e: SafetensorsHeaderEntry): Float32Array | Float64Array | Int32Array {
  const [begin, end] = e.data_offsets;
  const copy = bytes.slice(start + begin, start + end).buffer;
  const count = (end - begin) / BYTES[e.dtype];
  if (littleEndianHost()) return e.dtype === 'F32' ? new Float32Array(copy) : e.dtype === 'F64' ? new Float64Array(copy) : new Int32Array(copy);
  const dv = new DataView(copy);
  const width = BYTES[e.dtype];
  const data = e.dtype === 'F32' ? new Float32Array(count) : e.dtype === 'F64' ? new Float64Array(count) : new Int32Array(count);
  for (let i = 0; i < count; i++) {
    if (data instanceof Float32Array) data[i] = dv.getFloat32(i * width, true);
    else if (data instanceof Float64Array) data[i] = dv.getFloat64(i * width, true);
    else data[i] = dv.getInt32(i * width, true);
  }
  return data;
}

/**
 * Parses safetensors bytes, checking what the format requires before any
 * tensor is copied: the header length in range, the header UTF-8 JSON (an
 * object; `__metadata__` string to string), every entry's dtype, shape and
 * offsets consistent, and the tensors covering the data bytes exactly (no
 * hole, no overlap, nothing after the last). Throws a SafetensorsError naming
 * what is wrong (`truncated` when the bytes end early).
 */
export function readSafetensors(bytes: Uint8Array): ParsedSafetensors {
  const n = headerLengthOf(bytes.subarray(0, 8), bytes.length);
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n)));
  } catch (e) {
    throw new SafetensorsError(`the ${n}-byte header is not UTF-8 JSON (${e instanceof Error ? e.message.slice(0, 80) : 'unreadable'})`);
  }
  if (!isRecord(raw)) throw new SafetensorsError('the header is not a JSON object');
  const dataStart = 8 + n;
  const dataLength = bytes.length - dataStart;
  const metadata: Record<string, string> = {};
  const entries: [string, SafetensorsHeaderEntry][] = [];
  for (const [name, value] of Object.entries(raw)) {
    if (name !== '__metadata__') {
      entries.push([name, checkedEntry(name, value)]);
      continue;
    }
    if (!isRecord(value)) throw new SafetensorsError('__metadata__ is not an object');
    for (const [k, v] of Object.entries(value)) {
      if (typeof v !== 'string') throw new SafetensorsError(`__metadata__.${k.slice(0, 80)} is not a string`);
      Object.defineProperty(metadata, k, { value: v, enumerable: true, writable: true, configurable: true });
    }
  }
  const byBegin = [...entries].sort((a, b) => a[1].data_offsets[0] - b[1].data_offsets[0] || a[1].data_offsets[1] - b[1].data_offsets[1]);
  let covered = 0;
  for (const [name, e] of byBegin) {
    const [begin, end] = e.data_offsets;
    if (begin !== covered) throw new SafetensorsError(`tensor ${JSON.stringify(name.slice(0, 80))}: begins at ${begin}, not at ${covered} where the tensor before it ends (the data must be packed without holes or overlaps)`);
    covered = end;
  }
  if (covered > dataLength) throw new SafetensorsError(`truncated: the header's tensors need ${dataStart + covered} bytes, the file has ${bytes.length}`, true);
  if (covered < dataLength) throw new SafetensorsError(`${dataLength - covered} bytes follow the last tensor (the file has ${bytes.length} bytes; its header accounts for ${dataStart + covered})`);
  const tensors: ParsedSafetensors['tensors'] = {};
  for (const [name, e] of entries) {
    Object.defineProperty(tensors, name, { value: { dtype: e.dtype, shape: e.shape, data: decodeData(bytes, dataStart, e) }, enumerable: true, writable: true, configurable: true });
  }
  return { metadata, tensors, headerLength: n };
}
