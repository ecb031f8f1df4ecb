/** The expert-load panel with expert parallelism: each expert's worker, the tokens each worker received, its ep wait. */
import { describe, expect, it } from 'vitest';
import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import type { MoeLoadStep } from '../../runtime/report/index.ts';
import { MoeLoadPanel, epLoadSentence } from './MoeLoadPanel.tsx';
import { TimelineLegend } from '../timeline/TimelineLegend.tsx';

const step: MoeLoadStep = {
  step: 3,
  ep: 2,
  layers: [{
    layer: 'block1.moe', stage: 1, experts: 4,
    columns: [{ replica: 0, mb: 0, worker: 2, capacity: 8 }, { replica: 0, mb: 1, worker: 2, capacity: 8 }],
    // mb 0: e0's experts 0, 1 receive (8 − 1 dropped) + 3 = 10, e1's 1 + 1 = 2; mb 1: 7 and 1.
    first: [[8, 3, 1, 0], [5, 2, 0, 1]],
    second: [[0, 0, 1, 0], [0, 0, 0, 0]],
    dropped: [[1, 0, 0, 0], [0, 0, 0, 0]],
  }],
  epWait: [
    { replica: 0, rank: 0, stage: 0, epRank: 0, waitMs: 9, allToAllMs: 10, exchanges: 10 },
    { replica: 0, rank: 1, stage: 1, epRank: 0, waitMs: 0.5, allToAllMs: 4, exchanges: 10 },
    { replica: 0, rank: 1, stage: 1, epRank: 1, waitMs: 6.25, allToAllMs: 8, exchanges: 10 },
  ],
};

describe('expert load panel with ep', () => {
  it('names each expert’s worker, the tokens each worker received (the busiest marked) and its stage’s ep wait', () => {
    const html = renderToStaticMarkup(createElement(MoeLoadPanel, { steps: [step], running: false }));
    // Experts 0, 1 on e0 and 2, 3 on e1, one row group each.
    expect(html.match(/data-owner="0"/g)).toHaveLength(2);
    expect(html.match(/data-owner="1"/g)).toHaveLength(2);
    expect(html).toMatch(/rowSpan="2"|rowspan="2"/);
    // e0: (8 + 3 − 1) + (5 + 2) = 17, e1: (1 + 1) + 1 = 3; only stage 1's waits.
    expect(html).toMatch(/class="moe-worker busiest" data-testid="moe-ep-worker" data-worker="0" data-received="17" data-wait-ms="0.500"/);
    expect(html).toMatch(/class="moe-worker" data-testid="moe-ep-worker" data-worker="1" data-received="3" data-wait-ms="6.250"/);
    expect(html).toMatch(/data-column="0" data-received="10"/);
    expect(html).toMatch(/data-column="1" data-received="7"/);
    expect(html).toContain('6.3 ms');
    expect(html).toContain('before the last member of its ep group entered the same exchange');
    expect(epLoadSentence(step.layers[0], 2, step.epWait!.slice(1))).toBe(
      "ep workers: tokens received e0 17 · e1 3 (busiest e0); ep wait (of the all-to-alls' time) R1·e0 0.5 of 4.0 ms, R1·e1 6.3 of 8.0 ms.",
    );
  });

  it('at ep = 1 no worker rows, and the panel says uneven load costs no time', () => {
    const { ep: _ep, epWait: _w, ...one } = step;
    const html = renderToStaticMarkup(createElement(MoeLoadPanel, { steps: [one], running: false }));
    expect(html).not.toContain('moe-ep-worker');
    expect(html).not.toContain('data-owner');
    expect(html).toContain('so uneven load costs no time here, only drops');
  });

  it('the timeline legend names the striped wait when the all-to-alls carry one', () => {
    const legend = (epWait: boolean) => renderToStaticMarkup(createElement(TimelineLegend, { ops: ['F', 'B'], collectiveKinds: ['ep-all-to-all'], epWait }));
    expect(legend(true)).toContain('waiting for the slowest member of its ep group');
    expect(legend(false)).not.toContain('data-ep-wait');
  });
});
