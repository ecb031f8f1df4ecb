import { describe, expect, it } from 'vitest';
import { readSafetensors, writeSafetensors } from './safetensors.ts';

describe('safetensors', () => {
  it('writes a file that parses back to the same tensors and metadata', () => {
    const w = new Float32Array([1.5, -2, 3.25, 0, 1e-7, -0]);
    const b = new Float64Array([Math.PI, -Math.E]);
    const idx = new Int32Array([7, -3, 2147483647]);
    const bytes = writeSafetensors(
      { 'block0.linear.weight': { data: w, shape: [2, 3] }, 'block0.linear.bias': { data: b, shape: [2] }, ids: { data: idx, shape: [3] } },
      { format: 'pt', schedule: '1f1b' },
    );
    const parsed = readSafetensors(bytes);
    expect(parsed.metadata).toEqual({ format: 'pt', schedule: '1f1b' });
    expect(parsed.tensors['block0.linear.weight'].dtype).toBe('F32');
    expect(parsed.tensors['block0.linear.weight'].shape).toEqual([2, 3]);
    expect(Array.from(parsed.tensors['block0.linear.weight'].data)).toEqual(Array.from(w));
    expect(parsed.tensors['block0.linear.bias'].dtype).toBe('F64');
    expect(Array.from(parsed.tensors['block0.linear.bias'].data)).toEqual([Math.PI, -Math.E]);
    expect(Array.from(parsed.tensors.ids.data)).toEqual([7, -3, 2147483647]);
  });

  it('pads the header with spaces to a multiple of 8 and packs the data without holes', () => {
    const bytes = writeSafetensors({ a: { data: new Float32Array(3), shape: [3] }, b: { data: new Float32Array(5), shape: [5, 1] } });
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    expect(n % 8).toBe(0);
    const headerText = new TextDecoder().decode(bytes.subarray(8, 8 + n));
    expect(headerText.trimEnd().endsWith('}')).toBe(true);
    expect(/^ *$/.test(headerText.slice(headerText.trimEnd().length))).toBe(true);
    const header = JSON.parse(headerText) as Record<string, { data_offsets: [number, number] }>;
    expect(header.a.data_offsets).toEqual([0, 12]);
    expect(header.b.data_offsets).toEqual([12, 32]);
    expect(bytes.length).toBe(8 + n + 32);
    // No metadata given: no __metadata__ key.
    expect('__metadata__' in header).toBe(false);
  });

  it('rejects a shape that does not match the data', () => {
    expect(() => writeSafetensors({ a: { data: new Float32Array(4), shape: [3] } })).toThrow(/shape \[3\] holds 3 values but the data has 4/);
  });

  it('rejects a truncated file', () => {
    const bytes = writeSafetensors({ a: { data: new Float32Array(4), shape: [4] } });
    expect(() => readSafetensors(bytes.subarray(0, bytes.length - 4))).toThrow(/past the/);
  });
});
