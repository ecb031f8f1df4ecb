import { describe, expect, it } from 'vitest';
import { MAX_HEADER_BYTES, readSafetensors, SafetensorsError, writeSafetensors } from './safetensors.ts';

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

  it('rejects a truncated file, saying how many bytes it needs and has', () => {
    const bytes = writeSafetensors({ a: { data: new Float32Array(4), shape: [4] } });
    expect(() => readSafetensors(bytes.subarray(0, bytes.length - 4))).toThrow(`truncated: the header's tensors need ${bytes.length} bytes, the file has ${bytes.length - 4}`);
    expect(() => readSafetensors(bytes.subarray(0, 12))).toThrow(/header length \d+ runs past the end of the 12-byte file/);
    expect(() => readSafetensors(bytes.subarray(0, 5))).toThrow('5 bytes, fewer than the 8 of the header length');
  });
});

/** A file with the given header (any JSON text) and `data` bytes after it. */
function fileWith(header: string, data = new Uint8Array(0)): Uint8Array {
  const json = new TextEncoder().encode(header);
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

describe('safetensors reader: every rule of the format, checked before a tensor is copied', () => {
  const cases: [string, Uint8Array, string][] = [
    ['a header length past the limit', (() => { const b = fileWith('{}'); new DataView(b.buffer).setBigUint64(0, 2n ** 63n, true); return b; })(), `header length ${2n ** 63n} is out of range (2 to ${MAX_HEADER_BYTES} bytes)`],
    ['a header that is not JSON', fileWith('{"a": '), 'header is not UTF-8 JSON'],
    ['a header that is not UTF-8', fileWith('{"a": 1}').map((b, i) => (i === 10 ? 0xff : b)), 'header is not UTF-8 JSON'],
    ['a header that is a list', fileWith('[1, 2]'), 'the header is not a JSON object'],
    ['a dtype outside F32, F64, I32', fileWith('{"a":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}}', new Uint8Array(2)), 'tensor "a": dtype "BF16" is not F32, F64 or I32'],
    ['a shape past what can be addressed', fileWith('{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}', new Uint8Array(4)), 'tensor "a": shape [4294967296, 4294967296] holds more values than can be addressed'],
    ['a huge shape the offsets do not hold', fileWith('{"a":{"dtype":"F32","shape":[100000,100000],"data_offsets":[0,4]}}', new Uint8Array(4)), 'tensor "a": offsets [0, 4] do not hold shape [100000, 100000] of F32'],
    ['a fractional shape', fileWith('{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}', new Uint8Array(4)), 'shape must be a list of at most 64 whole numbers'],
    ['offsets end before they begin', fileWith('{"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}', new Uint8Array(4)), 'data_offsets must be [begin, end] with 0 ≤ begin ≤ end'],
    ['a hole between tensors', fileWith('{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', new Uint8Array(8)), 'tensor "a": begins at 4, not at 0'],
    ['two tensors over the same bytes', fileWith('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', new Uint8Array(4)), 'begins at 0, not at 4'],
    ['bytes after the last tensor', fileWith('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', new Uint8Array(12)), '8 bytes follow the last tensor'],
    ['metadata that is not a string', fileWith('{"__metadata__":{"steps":3}}'), '__metadata__.steps is not a string'],
  ];
  for (const [what, bytes, message] of cases) {
    it(`refuses ${what}`, () => {
      let thrown: unknown;
      try {
        readSafetensors(bytes);
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(SafetensorsError);
      expect((thrown as Error).message).toContain(message);
    });
  }

  it('a tensor named __proto__ is an ordinary entry, not a prototype', () => {
    const parsed = readSafetensors(fileWith('{"__proto__":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}}', new Uint8Array([7, 0, 0, 0])));
    expect(Object.keys(parsed.tensors)).toEqual(['__proto__']);
    expect(Array.from(Object.getOwnPropertyDescriptor(parsed.tensors, '__proto__')?.value.data)).toEqual([7]);
    expect(Object.getPrototypeOf(parsed.tensors)).toBe(Object.prototype);
  });
});
