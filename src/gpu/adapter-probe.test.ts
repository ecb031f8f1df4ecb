/**
 * The adapter probe: the resolution arithmetic against hand-made spans, and a
 * probe of this machine's adapter (Dawn on SwiftShader) end to end.
 */
import { describe, expect, test } from 'vitest';
import { probeAdapter, timestampResolution } from './adapter-probe.ts';
import { nodeGpu } from './testing/node-gpu.ts';

describe('timestamp resolution from span lengths', () => {
  test('a 0.1 ms quantization shows as a 100000 ns quantum; exact timestamps as a small one', () => {
    expect(timestampResolution([0, 100_000, 300_000, 0, 200_000])).toEqual({ spans: 5, zeroSpans: 2, minSpanNs: 100_000, quantumNs: 100_000 });
    // gcd(1234, 5678, 4321) = 1: nothing rounded them.
    expect(timestampResolution([1234, 5678, 4321])).toEqual({ spans: 3, zeroSpans: 0, minSpanNs: 1234, quantumNs: 1 });
    // Fractions of a ns (ms × 1e6 in floating point) are rounded first.
    expect(timestampResolution([2000.0000001, 3999.9999999])).toEqual({ spans: 2, zeroSpans: 0, minSpanNs: 2000, quantumNs: 2000 });
    expect(timestampResolution([0, 0])).toEqual({ spans: 2, zeroSpans: 2, minSpanNs: 0, quantumNs: 0 });
  });
});

describe('probeAdapter on Dawn', () => {
  test('names a software adapter, measures the crossings, round-trips the data and reads timestamps', async () => {
    const r = await probeAdapter('node', { gpu: await nodeGpu(), bytes: 4096, repeats: 3 });
    if (!r.ok) throw new Error(`no adapter: ${r.error}`);
    expect(r.adapter.architecture).toBe('swiftshader');
    expect(r.software).toBe(true);
    expect(r.features).toContain('timestamp-query');
    expect(r.features).toContain('subgroups');
    expect([r.subgroupMinSize, r.subgroupMaxSize]).toEqual([4, 4]);
    expect(r.crossing.bytes).toBe(4096);
    expect(r.crossing.roundTrip).toBe(true);
    for (const ms of [r.crossing.syncMs, r.crossing.uploadMs, r.crossing.readbackMs]) expect(ms).toBeGreaterThan(0);
    expect(r.timestamps?.spans).toBe(6);
    expect(r.limits.maxComputeInvocationsPerWorkgroup).toBeGreaterThanOrEqual(256);
  });

  test('a GPU object that offers no adapter is a result that says so, not an exception', async () => {
    const none = { requestAdapter: async () => null } as unknown as GPU;
    const r = await probeAdapter('node', { gpu: none });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toContain('offered no adapter');
  });
});
