/** The memory lane draws a worker's host memory apart from its device stack: a dashed series where it keeps some, none where it keeps none. */
import { describe, expect, it } from 'vitest';
import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { MEMORY_KINDS, type StepMemory } from '../../nn/memory-ledger.ts';
import { MemoryLanes } from './MemoryLanes.tsx';

const live = (stash: number) => MEMORY_KINDS.map((k) => (k === 'weights' ? 100 : k === 'stash' ? stash : 0));
const formula = { weights: 100, grads: 0, optimizer: 0, peak: 200 };
const held = { weights: 100, grads: 0, optimizer: 0, stash: 60, transient: 0, formula };

describe('memory lanes: host memory', () => {
  it('a swapped worker: the host line with its peak (bytes leaving, then returning); a worker without host bytes: none', () => {
    const swapped: StepMemory = {
      samples: [
        { t: 0, live: live(0), pooled: 0, host: [0, 0] },
        { t: 1, live: live(30), pooled: 0, host: [0, 0] },
        { t: 2, live: live(0), pooled: 0, host: [30, 0] },
        { t: 3, live: live(30), pooled: 0, host: [0, 0] },
      ],
      peak: { t: 1, live: live(30), pooled: 0, host: [0, 0] },
    };
    const plain: StepMemory = { samples: [{ t: 0, live: live(0), pooled: 0 }, { t: 2, live: live(60), pooled: 0 }], peak: { t: 2, live: live(60), pooled: 0 } };
    const html = renderToStaticMarkup(createElement(MemoryLanes, { report: { memory: [swapped, plain], heldBytesPerWorker: [held, held] } }));
    expect(html.match(/data-testid="memory-lane-host"/g)).toHaveLength(1);
    expect(html).toMatch(/data-worker="0"[^>]*data-host-peak="30"/);
    expect(html).toMatch(/data-worker="1"[^>]*data-host-peak="0"/);
    expect(html).toContain('host memory, apart from the device');
    const none = renderToStaticMarkup(createElement(MemoryLanes, { report: { memory: [plain], heldBytesPerWorker: [held] } }));
    expect(none).not.toContain('memory-lane-host');
    expect(none).not.toContain('host memory');
  });
});
