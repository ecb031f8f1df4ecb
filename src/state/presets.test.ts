import { describe, expect, it } from 'vitest';
import { validateRunConfig } from '../runtime/run-config.ts';
import { closedForm } from '../schedule/index.ts';
import { PRESETS, presetQuery } from './presets.ts';
import { readUrlState } from './url-state.ts';

const links = PRESETS.flatMap((p) => [p.first, ...(p.then ? [p.then] : [])]);

describe('presets', () => {
  it('are valid configurations whose link reopens exactly them', () => {
    expect(links.length).toBeGreaterThanOrEqual(PRESETS.length);
    for (const l of links) {
      expect(() => validateRunConfig(l.config), l.label).not.toThrow();
      const back = readUrlState(presetQuery(l.config));
      expect(back.problems, l.label).toEqual([]);
      expect(back.config, l.label).toEqual(l.config);
      expect(back.view).toBe('run');
    }
  });

  it('teach what they say: the closed-form bubble falls from the first link to the second', () => {
    for (const id of ['microbatches', 'interleaving']) {
      const p = PRESETS.find((x) => x.id === id)!;
      const a = p.first.config;
      const b = p.then!.config;
      const ba = closedForm(a.schedule, a.ranks, a.microbatches, a.virtual)!.bubble;
      const bb = closedForm(b.schedule, b.ranks, b.microbatches, b.virtual)!.bubble;
      expect(bb, id).toBeLessThan(ba * 0.75);
    }
    // The recomputation preset changes only the recompute switch.
    const r = PRESETS.find((x) => x.id === 'recompute')!;
    expect({ ...r.first.config, recompute: true }).toEqual(r.then!.config);
    expect(PRESETS.map((p) => p.first.config.schedule)).toEqual(expect.arrayContaining(['zb-h1', 'pipedream']));
  });
});
