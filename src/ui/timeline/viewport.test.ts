import { describe, expect, it } from 'vitest';
import { ticks, formatTick, niceStep } from './axis-ticks.ts';
import { clampViewport, fitViewport, panBy, timeAt, wheelZoomFactor, xOf, openingBounds, zoomAbout } from './viewport.ts';

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

describe('where a long timeline opens', () => {
  const ivs = [
    { op: 'F', mb: 0, end: 1 },
    { op: 'B', mb: 0, end: 4 },
    { op: 'comm', mb: 1, end: 9 },
    { op: 'F', mb: 1, end: 5 },
    { op: 'B', mb: 1, end: 7 },
    { op: 'F', mb: 2, end: 8 },
    { op: 'B', mb: 2, end: 10 },
  ];
  it('on the actions of the first micro-batches (messages aside), from the start', () => {
    expect(openingBounds(ivs, 2, { t0: 0, t1: 10 })).toEqual({ t0: 0, t1: 7 });
    expect(openingBounds(ivs, 1, { t0: 0, t1: 10 })).toEqual({ t0: 0, t1: 4 });
  });
  it('nowhere special when those are all of it, or none', () => {
    expect(openingBounds(ivs, 3, { t0: 0, t1: 10 })).toBeNull();
    expect(openingBounds(ivs, 0, { t0: 0, t1: 10 })).toBeNull();
  });
});
