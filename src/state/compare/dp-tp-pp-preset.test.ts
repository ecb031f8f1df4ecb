import { describe, expect, it } from 'vitest';
import { defaultRunConfig, type RunConfig } from '../../config/run-config.ts';
import { stageCut } from '../../config/run-limits.ts';
import { dpTpPpShapes, meshSentence, type MeshRow } from './dp-tp-pp-preset.ts';

describe('dp × tp × pp at 8 workers on the Train model', () => {
  it('the spiral MLP (4 blocks, hidden 64, batch 64): every shape of 8 workers with pp ≤ 4 and tp ∈ {1, 2, 4}', () => {
    const train = defaultRunConfig();
    const got = dpTpPpShapes(train, 2);
    expect(got).not.toBeNull();
    if (!got) return;
    const blocks = stageCut({ ...train, ranks: 1 }).spec.blocks.length;
    expect(blocks).toBe(4);
    // Micro-batches of 64 / 16 = 4 rows: 16 per replica at dp = 1.
    expect(got.microbatchRows).toBe(4);
    expect(got.shapes.map((s) => s.key)).toEqual(['1×2×4', '1×4×2', '2×1×4', '2×2×2', '2×4×1', '4×1×2', '4×2×1', '8×1×1']);
    expect(got.skipped).toEqual(['1×1×8: pp = 8 is more than the model\'s 4 blocks']);
    for (const s of got.shapes) {
      expect(s.dp * s.tp * s.ranks).toBe(8);
      expect([s.config.dp, s.config.tp, s.config.ranks]).toEqual([s.dp, s.tp, s.ranks]);
      expect(train.hidden % s.tp).toBe(0);
      expect(s.config.microbatches * 4 * s.dp).toBe(64);
      // The Train model, unchanged.
      expect([s.config.model, s.config.hidden, s.config.layers, s.config.dataset]).toEqual([train.model, train.hidden, train.layers, train.dataset]);
      expect(s.config.schedule).toBe('1f1b');
    }
  });

  it('a GPT with 2 heads takes tp 2, not 4 (refused by the run’s own rule); a width tp cannot divide keeps dp × pp', () => {
    const gpt: RunConfig = { ...defaultRunConfig(), dataset: 'names', model: 'gpt', layers: 7, heads: 2, width: 16, blockSize: 16, batchSize: 32 };
    const got = dpTpPpShapes(gpt, 2);
    expect(got?.shapes.map((s) => s.key)).toEqual(['1×1×8', '1×2×4', '2×1×4', '2×2×2', '4×1×2', '4×2×1', '8×1×1']);
    expect(got?.skipped.filter((s) => s.includes('×4×')).every((s) => s.includes('heads = 2'))).toBe(true);
    expect(dpTpPpShapes({ ...defaultRunConfig(), hidden: 63 }, 2)).toBeNull();
  });

  it('keeps the Train view’s sequence parallelism on the tp shapes and runs the tp = 1 shapes without it', () => {
    const gpt: RunConfig = { ...defaultRunConfig(), dataset: 'names', model: 'gpt', layers: 7, heads: 2, width: 16, blockSize: 16, batchSize: 32, tp: 2, sequenceParallel: true };
    const got = dpTpPpShapes(gpt, 2);
    expect(got?.shapes.map((s) => s.key)).toEqual(['1×1×8', '1×2×4', '2×1×4', '2×2×2', '4×1×2', '4×2×1', '8×1×1']);
    for (const s of got!.shapes) expect(s.config.sequenceParallel, s.key).toBe(s.tp > 1 ? true : undefined);
  });
});

describe('the dp × tp × pp sentence', () => {
  const row = (key: string, stepMs: number, tpShare: number, allReduceShare: number, points: { bytes: number; ms: number; n: number }[] = []): MeshRow => {
    const [dp, tp, ranks] = key.split('×').map(Number);
    const r: MeshRow = { key, dp, tp, ranks, measured: { bubble: 0, allReduceShare, stepMs, tpShare } };
    if (tp > 1) r.tpFigures = { points } as unknown as MeshRow['tpFigures'];
    return r;
  };

  it('reads the fastest shapes, the α–β line through every tp shape’s collectives and the shares', () => {
    // t = 2: 1024 B sent in 0.5 ms; t = 4: 3072 B in 0.7 ms. The line through them: 0.2 ms per 2048 B, so
    // β = 10,240 B/ms = 10 MB/s and α = 0.5 − 1024 / 10240 = 0.4 ms; the mean time 0.6 ms is 66.7% α.
    const rows = [
      row('1×2×4', 30, 0.1, 0, [{ bytes: 1024, ms: 0.5, n: 10 }]),
      row('1×4×2', 40, 0.25, 0, [{ bytes: 3072, ms: 0.7, n: 10 }]),
      row('2×1×4', 20, 0, 0.05),
      row('8×1×1', 25, 0, 0.3),
    ];
    expect(meshSentence(rows)).toBe(
      'At 8 workers the fastest shape was 2×1×4 (dp×tp×pp) at 20.0 ms per step; the fastest with tp, 1×2×4, took 1.50× as long. ' +
        'Each tp collective sent 1.0 KiB to 3.0 KiB and took 0.600 ms on average; the α–β line over every tp shape\'s collectives gives α = 0.400 ms, β = 10 MB/s, so 66.7% of a collective\'s time is its fixed cost: latency-bound: tp needs fast links, not wide ones. ' +
        '1×4×2 spent 25.0% of its step in tp exchanges, 8×1×1 30.0% in its all-reduce.',
    );
  });

  it('says bandwidth-bound when α is the lesser part, names a tp winner, and waits for a tp row', () => {
    // 1000 B in 0.2 ms, 3000 B in 0.6 ms: a line through the origin, α = 0.
    const rows = [row('1×2×4', 10, 0.2, 0, [{ bytes: 1000, ms: 0.2, n: 1 }]), row('1×4×2', 12, 0.3, 0, [{ bytes: 3000, ms: 0.6, n: 1 }]), row('2×1×4', 15, 0, 0.1)];
    const s = meshSentence(rows) ?? '';
    expect(s.startsWith('At 8 workers the fastest shape was 1×2×4 (dp×tp×pp) at 10.0 ms per step, with tp.')).toBe(true);
    expect(s).toContain('so 0.0% of a collective\'s time is its fixed cost: bandwidth-bound.');
    expect(s.endsWith('1×4×2 spent 30.0% of its step in tp exchanges, 2×1×4 10.0% in its all-reduce.')).toBe(true);
    expect(meshSentence([row('2×1×4', 15, 0, 0.1), row('8×1×1', 12, 0, 0.3)])).toBeNull();
  });
});

describe('the sentence on where the fastest tp shape’s step went', () => {
  const mk = (key: string, stepMs: number, computeMs?: number): MeshRow => {
    const [dp, tp, ranks] = key.split('×').map(Number);
    const r: MeshRow = { key, dp, tp, ranks, measured: { bubble: 0, allReduceShare: 0.1, stepMs, tpShare: 0.03, ...(computeMs === undefined ? {} : { computeMs }) } };
    if (tp > 1) r.tpFigures = { points: [{ bytes: 1024, ms: 0.3, n: 8 }] } as unknown as MeshRow['tpFigures'];
    return r;
  };

  it('puts each worker’s compute beside its step, and says why it grew when it did', () => {
    const s = meshSentence([mk('8×1×1', 70, 50), mk('4×2×1', 245, 200)]) ?? '';
    expect(s).toContain(
      " Per worker, 4×2×1 computed for 200.0 ms of its 245.0 ms step and 8×1×1 for 50.0 of 70.0, the same examples through the same layers (a tp worker repeats the parts tp does not split): 4.00× the compute, for the tab's workers share one device",
    );
    expect(s.endsWith('each tp collective first waits for the device to finish the kernels before it.')).toBe(true);
    // About the same compute: no reason given for a growth there was not.
    expect(meshSentence([mk('8×1×1', 70, 50), mk('4×2×1', 90, 52)])).toMatch(/8×1×1 for 50\.0 of 70\.0, the same examples through the same layers \(a tp worker repeats the parts tp does not split\)\.$/);
    // A tp shape the fastest, or no compute figure: no such sentence.
    expect(meshSentence([mk('8×1×1', 90, 50), mk('4×2×1', 70, 60)])).not.toContain('Per worker');
    expect(meshSentence([mk('8×1×1', 70), mk('4×2×1', 245)])).not.toContain('Per worker');
  });
});

describe('the sentence when the time does not grow with the size', () => {
  it('says there is no bandwidth term rather than quoting an unmeasurable β', () => {
    const mk = (key: string, stepMs: number, points: { bytes: number; ms: number; n: number }[]): MeshRow => {
      const [dp, tp, ranks] = key.split('×').map(Number);
      return { key, dp, tp, ranks, measured: { bubble: 0, allReduceShare: 0, stepMs, tpShare: 0.1 }, tpFigures: { points } as unknown as MeshRow['tpFigures'] };
    };
    // 32 B and 3072 B both in 3 ms: α = 3 ms, all of the time.
    const s = meshSentence([mk('1×2×4', 10, [{ bytes: 32, ms: 3, n: 4 }]), mk('1×4×2', 12, [{ bytes: 3072, ms: 3, n: 4 }])]) ?? '';
    expect(s).toContain('gives α = 3.000 ms and no bandwidth term (the time did not grow with the size), so 100.0% of a collective\'s time is its fixed cost: latency-bound');
  });
});
