import { describe, expect, it } from 'vitest';
import { renderMarkdown } from './markdown.ts';
import type { MakemorePageRow } from '../makemore-page-suite.ts';
import type { ScheduleBenchRow } from '../schedules-suite.ts';

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

  it('the gpt-schedules MoE rows: a second table, the step measured beside simulated and the all-to-alls’ share', () => {
    const dense = { schedule: '1f1b', dataset: 'names', model: 'gpt', p: 4, m: 4, v: 1, steps: 4, makespanMeasuredMs: 400, makespanSimulatedMs: 420, simulationError: 0.05, bubbleMeasured: 0.4, bubbleSimulated: 0.45, bubbleClosedForm: 3 / 7, peakStashBytes: [1024], commMsPerCrossing: 2, commShare: 0.1, samplesPerSecond: 80, meanOpMs: {} } as ScheduleBenchRow;
    const moe: ScheduleBenchRow = {
      ...dense,
      schedule: 'dualpipe',
      p: 2,
      moe: { experts: 4, topK: 2, ep: 2, stepMs: 1000, stepSimulatedMs: 1100, stepOverlappedSimulatedMs: 1050, a2aShare: 0.25, a2aOwnShare: 0.05, a2aShareSimulated: 0.04, a2aPerWorker: 20, fit: { latencyMs: 0.125, bytesPerMs: null, sizes: 1 } },
    };
    const md = renderMarkdown({ ...base, results: { 'gpt-schedules': { rows: [dense, moe] } } });
    expect(md).toContain('| dualpipe (MoE, ep 2) | 2 | 4 |');
    expect(md).toContain("MoE rows: the step and the experts' all-to-alls.");
    expect(md).toContain('| dualpipe | 2 | 2 | 4 (top-2) | 4 | 1000.0 | 1100.0 | +10.0% | 1050.0 | 25.0% (5.0%; 4.0%) | 20 | α 0.13 ms, β ∞ (one size) | 80 |');
    const plain = renderMarkdown({ ...base, results: { 'gpt-schedules': { rows: [dense] } } });
    expect(plain).not.toContain('MoE rows');
  });
});
