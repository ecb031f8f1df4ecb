import { describe, expect, it } from 'vitest';
import { renderMarkdown } from './markdown.ts';
import type { MakemorePageRow } from '../makemore-page-suite.ts';

const base = {
  date: '2026-11-26T14:16:24.211Z',
  quick: false,
  big: true,
  seconds: 266,
  machine: { cpus: 16, cpuModel: 'x', memoryGiB: 126, platform: 'linux', node: 'v20' },
  browser: '156',
  adapter: { vendor: 'nvidia' },
  packages: {},
};

const row = (finished: boolean): MakemorePageRow => ({
  sizingLine: "Default GPT: makemore's 4 layers × 4 heads × 64 wide with its recipe, because it is a GPU (nvidia).",
  hardwareDefault: true,
  config: { layers: 4, width: 64, heads: 4, ranks: 4, microbatches: 8, schedule: '1f1b', batchSize: 64, steps: 2000, lr: 0.002 },
  validation: [
    { step: 0, loss: 3.332 },
    { step: 1749, loss: 2.006 },
    ...(finished ? [{ step: 1999, loss: 1.995 }] : []),
  ],
  wallMs: 264_500,
  finished,
  finalHeldOut: finished ? 1.995 : null,
  firstBelowGoal: finished ? { step: 1999, loss: 1.995 } : null,
  seenAtMs: { 1749: 229_400, 1999: 264_500, 0: 264_500 },
});

describe('the bench report', () => {
  it('says how it was run, what is still to run and what failed (written after every suite)', () => {
    const md = renderMarkdown({ ...base, pending: ['mesh', 'tp'], failures: { gpt: 'page.evaluate: Target page, context or browser has been closed' }, results: {} });
    expect(md).toContain('by `npm run bench -- --big` in 266 s');
    expect(md).toContain('**Under way**: still to run: mesh, tp.');
    expect(md).toContain('**Suite gpt failed**: page.evaluate: Target page');
  });

  it("the makemore run in the page: its held-out curve, the goal's mark, the wall time, and a run stopped at the limit said so", () => {
    const done = renderMarkdown({ ...base, results: { makemore: { rows: [row(true)] } } });
    expect(done).toContain('| 1999 | 1.995 ✓ | 264.5 s |');
    expect(done).toContain('| 1749 | 2.006 | 229.4 s |');
    expect(done).toContain('Held-out after the last step: **1.995** nats/char (goal ≤ 2.00), 265 s from the Run click.');
    expect(done).toContain('because it is a GPU (nvidia)');
    const cut = renderMarkdown({ ...base, results: { makemore: { rows: [row(false)] } } });
    expect(cut).toContain("Stopped at the suite's limit after 265 s, before the last step.");
    expect(cut).not.toContain('✓');
  });
});
