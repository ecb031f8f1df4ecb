/** Our schedules and planner beside the zero-bubble paper and Megatron SC'21 §5.4.2 (papers.ts; bench/PAPERS.md). */
import { describe, expect, it } from 'vitest';
import { megatronRows, zeroBubbleRows } from './papers.ts';

describe('against published results', () => {
  it('ZB-1P and ZB-2P (auto under p and 2p micro-batches) are within 10% of the paper’s bubble rates and speed-ups at T_F = T_B = T_W', () => {
    const rows = zeroBubbleRows([[8, 24], [16, 48]]);
    expect(rows).toHaveLength(6);
    for (const r of rows) {
      // The paper's closed forms, written out here: (p − 1)/m, (p − 1)/3m, 0.
      const paper = { '1F1B': (r.p - 1) / r.m, 'ZB-1P': (r.p - 1) / (3 * r.m), 'ZB-2P': 0 }[r.schedule];
      expect(r.paper).toBe(paper);
      expect(Math.abs(r.ours - paper)).toBeLessThanOrEqual(0.1 * paper + 1e-12);
      expect(Math.abs(r.oursSpeedup - r.paperSpeedup)).toBeLessThanOrEqual(0.1 * r.paperSpeedup);
    }
  });

  it('Megatron §5.4.2: at each batch size the throughput per GPU falls as the pipeline-parallel size grows', () => {
    const rows = megatronRows([32, 512]);
    for (const B of [32, 512]) {
      const xs = rows.filter((r) => r.batch === B).sort((a, b) => a.p - b.p);
      expect(xs.map((r) => r.p)).toEqual([2, 4, 8, 16, 32]);
      for (const r of xs) expect(r.fits).toBe(true);
      for (let i = 1; i < xs.length; i++) expect(xs[i].perGpu).toBeLessThan(xs[i - 1].perGpu);
    }
    // A larger batch amortises the bubble: more throughput at every p.
    for (const p of [2, 4, 8, 16, 32]) {
      const at = (B: number) => rows.find((r) => r.batch === B && r.p === p)?.perGpu ?? NaN;
      expect(at(512)).toBeGreaterThan(at(32));
    }
  });
});
