import { describe, expect, test } from 'vitest';
import { benchSync } from './sync-suite.ts';
import { nodeGpu } from '../gpu/testing/node-gpu.ts';

describe('the sync suite (Dawn on SwiftShader)', () => {
  test('each work × wait × interval measured, with the second device; nudges only where asked', async () => {
    const rows = await benchSync({ gpu: await nodeGpu(), repeats: 2, intervals: [0, 0.05] });
    // 2 intervals alone + 2 (0 and the default) with a second device; 4 works × 2 waits each
    expect(rows).toHaveLength(4 * 4 * 2);
    expect(new Set(rows.map((r) => r.work)).size).toBe(4);
    for (const r of rows) {
      expect(r.medianMs).toBeGreaterThan(0);
      expect(r.p90Ms).toBeGreaterThanOrEqual(r.medianMs);
      expect(r.workMs).toBeGreaterThanOrEqual(0);
      if (r.nudgeMs === 0) expect(r.nudgesPerWait).toBe(0);
    }
    // a 4-matmul wait nudged every 0.05 ms sends some
    expect(rows.find((r) => r.nudgeMs === 0.05 && r.work.startsWith('4 ×') && r.wait === 'read')!.nudgesPerWait).toBeGreaterThan(0);
    expect(rows.filter((r) => r.devices === 2).map((r) => r.nudgeMs)).toContain(0.25);
  }, 120_000);
});
