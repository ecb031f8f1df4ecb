import { describe, expect, it } from 'vitest';
import { ticks, formatTick, niceStep } from './axis-ticks.ts';
import { clampViewport, fitViewport, panBy, timeAt, wheelZoomFactor, xOf, zoomAbout } from './viewport.ts';

const bounds = { t0: 0, t1: 100 };

describe('viewport', () => {
  it('zooms about a point: the time under the cursor stays under it', () => {
    const v = fitViewport(bounds);
    const x = 300;
    const w = 1000;
    const t = timeAt(v, x, w);
    const z = zoomAbout(v, t, 0.5, bounds);
    expect(xOf(z, t, w)).toBeCloseTo(x, 6);
    expect(z.b - z.a).toBeCloseTo((v.b - v.a) / 2, 9);
  });

  it('wheel in then out returns to the same window', () => {
    const v = { a: 20, b: 40 };
    const z = zoomAbout(zoomAbout(v, 30, wheelZoomFactor(-120), bounds), 30, wheelZoomFactor(120), bounds);
    expect(z.a).toBeCloseTo(20, 9);
    expect(z.b).toBeCloseTo(40, 9);
  });

  it('never zooms out past the data or pans it out of view', () => {
    const out = clampViewport({ a: -1000, b: 1000 }, bounds);
    expect(out.b - out.a).toBeLessThanOrEqual(110 + 1e-9);
    const p = panBy({ a: 0, b: 10 }, 1e6, bounds);
    expect(p.b).toBeLessThanOrEqual(105 + 1e-9);
    expect(p.b - p.a).toBeCloseTo(10, 9);
  });
});

describe('axis ticks', () => {
  it('steps are 1, 2 or 5 times a power of ten', () => {
    expect(niceStep(100, 10)).toBe(10);
    expect(niceStep(7, 5)).toBe(2);
    expect(niceStep(0.3, 4)).toBeCloseTo(0.1, 12);
    expect(ticks(0, 10, 5)).toEqual([0, 2, 4, 6, 8, 10]);
    expect(formatTick(2.5, 0.5, 'ms')).toBe('2.5 ms');
  });
});
