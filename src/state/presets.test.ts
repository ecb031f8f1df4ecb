import { beforeAll, describe, expect, it } from 'vitest';
import { loadMobyDick, MOBY_DICK } from '../data/moby-dick.ts';
import { registerCorpus } from '../data/text-registry.ts';
import { validateRunConfig } from '../config/run-config.ts';
import { closedForm } from '../schedule/index.ts';
import { PRESETS, presetQuery } from './presets.ts';
import { stageMemory } from '../config/run-limits.ts';
import { readUrlState } from './store/url-state.ts';

const links = PRESETS.flatMap((p) => [p.first, ...(p.then ? [p.then] : [])]);

describe('presets', () => {
  // The text preset names the example by hash; the page loads it when the preset is chosen.
  beforeAll(async () => registerCorpus(await loadMobyDick()));

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
    // Selective then full: the same GPT; the estimate of what a stage keeps falls from keeping everything to
    // selective (all but the probabilities) to full (the stage input), on every stage that holds a block.
    const sel = PRESETS.find((x) => x.id === 'selective-recompute')!;
    expect({ ...sel.first.config, recomputeAttention: false, recompute: true }).toEqual(sel.then!.config);
    const held = (c: typeof sel.first.config) => stageMemory({ ...c }).map((x) => x.activations);
    const [plain, selective, full] = [held({ ...sel.first.config, recomputeAttention: false }), held(sel.first.config), held(sel.then!.config)];
    plain.forEach((p, s) => {
      if (p === selective[s]) return; // the head's stage: no attention
      expect(selective[s]).toBeLessThan(p);
      expect(full[s]).toBeLessThan(selective[s]);
    });
    expect(selective.some((x, s) => x < plain[s])).toBe(true);
    expect(PRESETS.map((p) => p.first.config.schedule)).toEqual(expect.arrayContaining(['zb-h1', 'pipedream']));
    // Tensor then sequence parallelism: the same GPT on the same 4 workers; each stage's stash estimate falls with the
    // token rows split between the layers.
    const tp = PRESETS.find((x) => x.id === 'tensor-parallel')!;
    expect(tp.first.config).toMatchObject({ model: 'gpt', tp: 2, ranks: 2 });
    expect({ ...tp.first.config, sequenceParallel: true }).toEqual(tp.then!.config);
    const [tpHeld, spHeld] = [held(tp.first.config), held(tp.then!.config)];
    spHeld.forEach((x, s) => expect(x, `stage ${s}`).toBeLessThan(tpHeld[s]));
    // The text preset trains the GPT on the example; makemore's preset is its size and recipe on names.
    const text = PRESETS.find((x) => x.id === 'your-text')!.first.config;
    expect(text).toMatchObject({ dataset: 'text', textHash: MOBY_DICK.hash, model: 'gpt', ranks: 4 });
    const mm = PRESETS.find((x) => x.id === 'makemore')!.first.config;
    expect(mm).toMatchObject({ dataset: 'names', model: 'gpt', layers: 4, heads: 4, width: 64, blockSize: 16, batchSize: 64, lr: 2e-3, weightDecay: 0.1, lrSchedule: 'cosine', steps: 3000, optimizer: 'adamw' });
  });
});
