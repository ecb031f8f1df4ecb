/**
 * CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320): what zip stores per
 * entry and what a run-state file carries as its checksum. `crc32(b, crc32(a))`
 * equals `crc32(a ++ b)`, as Python's `zlib.crc32(b, zlib.crc32(a))` does, so a
 * file can be checked in pieces without being copied.
 */

let table: Uint32Array | null = null;

function crcTable(): Uint32Array {
  if (!table) {
    table = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  return table;
}

/** The CRC-32 of `bytes`, continuing from `previous` (the CRC-32 of what came before; 0 at the start). */
export function crc32(bytes: Uint8Array, previous = 0): number {
  const t = crcTable();
  let c = (previous ^ 0xffffffff) >>> 0;
  for (let i = 0; i < bytes.length; i++) c = t[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
