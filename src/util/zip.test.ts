import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { crc32 } from './crc32.ts';
import { writeZip } from './zip.ts';

describe('stored zip writer', () => {
  it('computes CRC-32 as zip does (the standard check value)', () => {
    expect(crc32(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
    // In pieces: the CRC of a ++ b continues from the CRC of a.
    const all = new TextEncoder().encode('123456789');
    expect(crc32(all.subarray(4), crc32(all.subarray(0, 4)))).toBe(0xcbf43926);
  });

  it("writes an archive Python's zipfile reads back byte for byte, CRCs checked", () => {
    const bin = new Uint8Array(70_000);
    for (let i = 0; i < bin.length; i++) bin[i] = (i * 7919) & 0xff;
    const entries = [
      { path: 'train.py', data: 'print("hé")\n' },
      { path: 'sub/w.safetensors', data: bin },
      { path: 'empty.txt', data: '' },
    ];
    const file = join(mkdtempSync(join(tmpdir(), 'pipelab-zip-')), 'b.zip');
    writeFileSync(file, writeZip(entries));
    const py = [
      'import sys, zipfile, hashlib, json',
      'z = zipfile.ZipFile(sys.argv[1])',
      'assert z.testzip() is None',
      'print(json.dumps({i.filename: [i.compress_type, i.file_size, hashlib.sha256(z.read(i)).hexdigest()] for i in z.infolist()}))',
    ].join('\n');
    const r = spawnSync('/usr/bin/python3', ['-c', py, file], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const got = JSON.parse(r.stdout) as Record<string, [number, number, string]>;
    const sha = (d: string | Uint8Array) => spawnSync('sha256sum', { input: d }).stdout.toString().split(' ')[0];
    expect(Object.keys(got)).toEqual(['train.py', 'sub/w.safetensors', 'empty.txt']);
    for (const e of entries) {
      const bytes = typeof e.data === 'string' ? new TextEncoder().encode(e.data) : e.data;
      expect(got[e.path]).toEqual([0, bytes.length, sha(bytes)]);
    }
  });

  it('refuses absolute, parent and repeated paths', () => {
    expect(() => writeZip([{ path: '/etc/x', data: '' }])).toThrow('must be relative');
    expect(() => writeZip([{ path: 'a/../b', data: '' }])).toThrow('must be relative');
    expect(() => writeZip([{ path: 'a', data: '' }, { path: 'a', data: '' }])).toThrow('given twice');
  });
});
