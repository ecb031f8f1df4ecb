import { describe, expect, it } from 'vitest';
import { fitAlphaBeta, fitWhereSizesDiffer, ringTimeMs } from './allreduce-fit.ts';

describe('the α–β fit of a ring all-reduce', () => {
  it('recovers α and β from exact model times, for n = 2, 3, 4', () => {
    for (const n of [2, 3, 4]) {
      const truth = { latencyMs: 0.07, bytesPerMs: 250_000 };
      const points = [4096, 65536, 1 << 20, 4 << 20].map((bytes) => ({ bytes, ms: ringTimeMs(truth, bytes, n) }));
      const fit = fitAlphaBeta(points, n);
      expect(fit.latencyMs).toBeCloseTo(truth.latencyMs, 9);
      expect(fit.bytesPerMs / truth.bytesPerMs).toBeCloseTo(1, 9);
    }
  });

  it('the time is 2(n − 1) exchanges of latency plus 2(n − 1)/n of the vector over the link', () => {
    expect(ringTimeMs({ latencyMs: 1, bytesPerMs: 100 }, 300, 3)).toBe(4 + 4);
    expect(ringTimeMs({ latencyMs: 1, bytesPerMs: 100 }, 300, 1)).toBe(0);
  });

  it('refuses what it cannot fit', () => {
    expect(() => fitAlphaBeta([{ bytes: 1, ms: 1 }], 2)).toThrow('needs at least 2 points');
    expect(() => fitAlphaBeta([{ bytes: 1, ms: 1 }, { bytes: 2, ms: 2 }], 1)).toThrow('at least 2 workers');
  });

  it('fits only sizes at least 2× apart (a stream\'s stages: 768 B and 16.3 KiB, latency-bound as measured in Chromium)', () => {
    const truth = { latencyMs: 0.25, bytesPerMs: 100_000 };
    const points = [768, 16640, 16640, 780].map((bytes) => ({ bytes, ms: ringTimeMs(truth, bytes, 2) }));
    const fit = fitWhereSizesDiffer(points, 2);
    expect(fit?.latencyMs).toBeCloseTo(truth.latencyMs, 9);
    // The small vector's time is mostly latency: read as bandwidth alone it would come out 768 B at the 16 KiB rate.
    expect(ringTimeMs(fit!, 768, 2)).toBeCloseTo(ringTimeMs(truth, 768, 2), 9);
    expect(fitWhereSizesDiffer([{ bytes: 1000, ms: 1 }, { bytes: 1900, ms: 1.5 }], 2)).toBeNull();
    expect(fitWhereSizesDiffer([{ bytes: 1000, ms: 1 }, { bytes: 0, ms: 0 }, { bytes: 4000, ms: 0 }], 2)).toBeNull();
  });
});
