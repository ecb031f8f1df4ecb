/**
 * Test support: a run-state file with its header edited (the JSON rewritten,
 * the header length and padding redone, the data kept) and, where it still has
 * checksum digits, resealed, so that a test reaches the checks behind the
 * checksum.
 */
import { sealChecksum } from '../codec.ts';

export type Header = Record<string, unknown> & { __metadata__: Record<string, string> };

export function headerOf(bytes: Uint8Array): Header {
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  return JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))) as Header;
}

/** The file with `edit` applied to its parsed header; resealed unless `seal` is false. */
export function editHeader(bytes: Uint8Array, edit: (h: Header) => void, seal = true): Uint8Array {
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  const h = headerOf(bytes);
  edit(h);
  let json = new TextEncoder().encode(JSON.stringify(h));
  const padded = Math.ceil(json.length / 8) * 8;
  const p = new Uint8Array(padded).fill(0x20);
  p.set(json);
  json = p;
  const data = bytes.subarray(8 + n);
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  if (seal && /^[0-9a-f]{8}$/.test(String(h.__metadata__?.crc32))) sealChecksum(out);
  return out;
}

/** Edits one metadata field (a string), resealed. */
export function editMetadata(bytes: Uint8Array, key: string, value: string | undefined): Uint8Array {
  return editHeader(bytes, (h) => {
    if (value === undefined) delete h.__metadata__[key];
    else h.__metadata__[key] = value;
  });
}
