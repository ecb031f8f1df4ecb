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
    if (name === '__metadata__') throw new Error('safetensors: "__metadata__" cannot name a tensor');
    const t = tensors[name];
    const count = t.shape.reduce((p, d) => p * d, 1);
    if (!t.shape.every((d) => Number.isInteger(d) && d >= 0)) throw new Error(`safetensors: tensor ${name}: shape [${t.shape.join(', ')}] must hold non-negative integers`);
    if (count !== t.data.length) throw new Error(`safetensors: tensor ${name}: shape [${t.shape.join(', ')}] holds ${count} values but the data has ${t.data.length}`);
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

/** Parses safetensors bytes; throws with a message naming what is wrong. */
export function readSafetensors(bytes: Uint8Array): ParsedSafetensors {
  if (bytes.length < 8) throw new Error(`safetensors: ${bytes.length} bytes, fewer than the 8 of the header length`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(view.getBigUint64(0, true));
  if (8 + n > bytes.length) throw new Error(`safetensors: header length ${n} runs past the end of the ${bytes.length}-byte file`);
  const text = new TextDecoder().decode(bytes.subarray(8, 8 + n));
  const raw = JSON.parse(text) as Record<string, unknown>;
  const dataStart = 8 + n;
  const dataLength = bytes.length - dataStart;
  const metadata: Record<string, string> = {};
  const tensors: ParsedSafetensors['tensors'] = {};
  for (const [name, value] of Object.entries(raw)) {
    if (name === '__metadata__') {
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) metadata[k] = String(v);
      continue;
    }
    const e = value as SafetensorsHeaderEntry;
    const width = BYTES[e.dtype];
    if (!width) throw new Error(`safetensors: tensor ${name}: dtype ${String(e.dtype)} is not F32, F64 or I32`);
    const [begin, end] = e.data_offsets;
    const count = e.shape.reduce((p, d) => p * d, 1);
    if (end - begin !== count * width) throw new Error(`safetensors: tensor ${name}: offsets [${begin}, ${end}] do not hold shape [${e.shape.join(', ')}] of ${e.dtype}`);
    if (end > dataLength) throw new Error(`safetensors: tensor ${name}: ends at ${end}, past the ${dataLength} data bytes`);
    const copy = bytes.slice(dataStart + begin, dataStart + end);
    const dv = new DataView(copy.buffer);
    const data = e.dtype === 'F32' ? new Float32Array(count) : e.dtype === 'F64' ? new Float64Array(count) : new Int32Array(count);
    for (let i = 0; i < count; i++) {
      if (data instanceof Float32Array) data[i] = dv.getFloat32(i * width, true);
      else if (data instanceof Float64Array) data[i] = dv.getFloat64(i * width, true);
      else data[i] = dv.getInt32(i * width, true);
    }
    tensors[name] = { dtype: e.dtype, shape: [...e.shape], data };
  }
  return { metadata, tensors, headerLength: n };
}
