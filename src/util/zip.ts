/**
 * A zip archive writer, stored entries only (no compression), with no
 * dependencies: enough to hand a folder of files out of the page as one
 * download. Layout (PKWARE APPNOTE 6.3): per file a local header (signature
 * 0x04034b50) and its bytes; then a central directory entry per file
 * (0x02014b50) and the end-of-central-directory record (0x06054b50). All
 * integers little-endian; names UTF-8 (flag bit 11); times fixed at
 * 1980-01-01 00:00 so the same files give the same bytes.
 */

import { crc32 } from './crc32.ts';

export interface ZipEntry {
  /** Path inside the archive, '/'-separated. */
  path: string;
  data: string | Uint8Array;
}

const DOS_DATE_1980_01_01 = (0 << 9) | (1 << 5) | 1;

export function writeZip(entries: readonly ZipEntry[]): Uint8Array {
  const enc = new TextEncoder();
  const files = entries.map((e) => {
    if (e.path === '' || e.path.startsWith('/') || e.path.split('/').includes('..')) throw new Error(`zip: path ${JSON.stringify(e.path)} must be relative, without ".."`);
    const data = typeof e.data === 'string' ? enc.encode(e.data) : e.data;
    return { name: enc.encode(e.path), data, crc: crc32(data) };
  });
  const seen = new Set<string>();
  for (const e of entries) {
    if (seen.has(e.path)) throw new Error(`zip: path ${JSON.stringify(e.path)} is given twice`);
    seen.add(e.path);
  }
  const localSize = files.reduce((s, f) => s + 30 + f.name.length + f.data.length, 0);
  const centralSize = files.reduce((s, f) => s + 46 + f.name.length, 0);
  if (localSize + centralSize + 22 > 0xffffffff || files.length > 0xffff) throw new Error('zip: archive past 4 GiB or 65535 entries (zip64 is not written)');
  const out = new Uint8Array(localSize + centralSize + 22);
  const v = new DataView(out.buffer);
  let at = 0;
  const offsets: number[] = [];
  const header = (sig: number, f: (typeof files)[number], central: boolean): void => {
    v.setUint32(at, sig, true);
    at += 4;
    if (central) {
      v.setUint16(at, 20, true); // version made by: 2.0
      at += 2;
    }
    v.setUint16(at, 20, true); // version needed: 2.0
    v.setUint16(at + 2, 0x0800, true); // UTF-8 names
    v.setUint16(at + 4, 0, true); // stored
    v.setUint16(at + 6, 0, true); // time 00:00
    v.setUint16(at + 8, DOS_DATE_1980_01_01, true);
    v.setUint32(at + 10, f.crc, true);
    v.setUint32(at + 14, f.data.length, true); // compressed size
    v.setUint32(at + 18, f.data.length, true); // uncompressed size
    v.setUint16(at + 22, f.name.length, true);
    v.setUint16(at + 24, 0, true); // extra field length
    at += 26;
  };
  for (const f of files) {
    offsets.push(at);
    header(0x04034b50, f, false);
    out.set(f.name, at);
    at += f.name.length;
    out.set(f.data, at);
    at += f.data.length;
  }
  const centralStart = at;
  files.forEach((f, i) => {
    header(0x02014b50, f, true);
    v.setUint16(at, 0, true); // comment length
    v.setUint16(at + 2, 0, true); // disk number start
    v.setUint16(at + 4, 0, true); // internal attributes
    v.setUint32(at + 6, 0, true); // external attributes
    v.setUint32(at + 10, offsets[i], true);
    at += 14;
    out.set(f.name, at);
    at += f.name.length;
  });
  v.setUint32(at, 0x06054b50, true);
  v.setUint16(at + 4, 0, true);
  v.setUint16(at + 6, 0, true);
  v.setUint16(at + 8, files.length, true);
  v.setUint16(at + 10, files.length, true);
  v.setUint32(at + 12, at - centralStart, true);
  v.setUint32(at + 16, centralStart, true);
  v.setUint16(at + 20, 0, true);
  return out;
}
