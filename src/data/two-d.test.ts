/** The synthetic 2-D sets: seeded, balanced, in range, with the geometry each one promises. */
import { describe, expect, it } from 'vitest';
import { createDataset } from './datasets.ts';
import { makeTwoD, TWO_D_CLASSES, TWO_D_SETS } from './two-d.ts';

describe('2-D sets', () => {
  for (const name of TWO_D_SETS) {
    it(`${name}: deterministic, shaped, labelled, bounded`, () => {
      const a = makeTwoD(name, 301, 0.1, 5);
      expect(makeTwoD(name, 301, 0.1, 5)).toEqual(a);
      expect(makeTwoD(name, 301, 0.1, 6).inputs).not.toEqual(a.inputs);
      expect(a.n).toBe(301);
      expect(a.inputs).toHaveLength(602);
      expect(a.inputCols).toBe(2);
      const counts = new Array<number>(TWO_D_CLASSES[name]).fill(0);
      for (const y of a.labels) counts[y]++;
      for (const c of counts) expect(c).toBeGreaterThan(301 / TWO_D_CLASSES[name] - (name === 'xor' ? 40 : 1));
      for (const v of a.inputs) expect(Math.abs(v)).toBeLessThan(2);
    });
  }

  it('noise 0: circles lie on radius 1 and 0.5; spiral arm radius grows along the arm', () => {
    const c = makeTwoD('circles', 100, 0, 1);
    for (let i = 0; i < c.n; i++) expect(Math.hypot(c.inputs[2 * i], c.inputs[2 * i + 1])).toBeCloseTo(c.labels[i] === 0 ? 1 : 0.5, 6);
    const s = makeTwoD('spiral', 30, 0, 1);
    expect(Math.hypot(s.inputs[0], s.inputs[1])).toBe(0);
    expect(Math.hypot(s.inputs[18], s.inputs[19])).toBeCloseTo(1, 6);
  });

  it('xor labels follow the quadrant (no noise)', () => {
    const x = makeTwoD('xor', 200, 0, 2);
    for (let i = 0; i < x.n; i++) expect(x.labels[i]).toBe(x.inputs[2 * i] > 0 !== x.inputs[2 * i + 1] > 0 ? 1 : 0);
  });

  it('validation is an independent draw', () => {
    const ds = createDataset({ dataset: 'moons', points: 200, noise: 0.1, context: 3, seed: 1 });
    expect(ds.val.n).toBe(40);
    expect(ds.val.inputs.slice(0, 4)).not.toEqual(ds.train.inputs.slice(0, 4));
  });

  it('bad parameters name the field, the value and the rule', () => {
    expect(() => makeTwoD('spiral', 2, 0.1, 1)).toThrow('points = 2: must be an integer at least 3');
    expect(() => makeTwoD('moons', 100, -0.1, 1)).toThrow('noise = -0.1: must be at least 0');
    expect(() => makeTwoD('moons', 100, NaN, 1)).toThrow('noise = NaN: must be a finite number');
    expect(() => makeTwoD('rings' as never, 100, 0.1, 1)).toThrow('dataset = "rings": must be one of spiral, moons, circles, xor');
  });
});
