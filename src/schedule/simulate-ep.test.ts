/** The simulator with expert parallelism's all-to-alls (ep-cost.ts): priced, overlapped, drawn and traced like the other collectives. */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import { toChromeTrace } from './chrome-trace.ts';
import { epClosedForm, type EpCosts } from './ep-cost.ts';
import { generateSchedule } from './registry.ts';
import { simulate } from './simulate.ts';
import { decodeTimeline, encodeTimeline } from './timeline-columns.ts';

const p = 4;
const m = 8;
// A group of 8 inside one node: each all-to-all is α = 0.5 plus 7/8 of its bytes at 700 bytes a unit.
const link = { latencyIntra: 0.5, bandwidthIntra: 700, latencyInter: 1, bandwidthInter: 10 };
const ep = (bytes: number, overlap = false): EpCosts => ({ n: 8, local: 8, link, overlap, messages: Array.from({ length: p }, () => ({ F: [bytes, bytes], I: [bytes, bytes] })) });

describe('the simulator with ep', () => {
  it('1F1B: each F gains its dispatch and combine and each B the backward’s, the step (m + p − 1)·(F + τF + B + τB) of the closed form', () => {
    // 400 bytes: 0.5 + 350/700 = 1 a unit each, so τF = τB = 2.
    const r = simulate(generateSchedule('1f1b', p, m), { F: 2, B: 4, ep: ep(400) });
    expect(r.makespan).toBeCloseTo(epClosedForm(p, m, { F: 2, B: 4 }, { F: 2, B: 2 }, false).step, 9);
    expect(r.makespan).toBeCloseTo((m + p - 1) * (2 + 2 + 4 + 2), 9);
  });

  it('overlapped (DualPipe’s pairs): hidden while the all-to-alls are shorter than the compute, the larger of the two when longer', () => {
    const s = generateSchedule('1f1b', p, m);
    expect(simulate(s, { F: 2, B: 4, ep: ep(400, true) }).makespan).toBeCloseTo((m + p - 1) * 6, 9);
    // 2400 bytes: 0.5 + 2100/700 = 3.5 each, τF + τB = 14 > F + B = 6: every op's compute stretched 14/6.
    const r = simulate(s, { F: 2, B: 4, ep: ep(2400, true) });
    expect(r.makespan).toBeCloseTo(epClosedForm(p, m, { F: 2, B: 4 }, { F: 7, B: 7 }, true).step, 9);
    expect(r.makespan).toBeCloseTo((m + p - 1) * 14, 9);
  });

  it('draws each all-to-all as an ep-all-to-all collective inside its action, with the bytes sent to the other 7, on every lane (with tp too), and keeps it through the columns and the trace', () => {
    const s = generateSchedule('1f1b', p, m);
    const r = simulate(s, { F: 2, B: 4, ep: ep(400) });
    const a2a = r.timeline.intervals.filter((iv) => iv.coll === 'ep-all-to-all');
    expect(a2a).toHaveLength(p * m * 4);
    for (const iv of a2a) {
      expect(iv.op).toBe('collective');
      expect(iv.bytes).toBe((400 * 7) / 8);
      expect(iv.end - iv.start).toBeCloseTo(1, 9);
      const host = r.timeline.intervals.find((x) => (x.op === 'F' || x.op === 'B') && x.rank === iv.rank && x.mb === iv.mb && x.stage === iv.stage && x.start <= iv.start + 1e-9 && x.end >= iv.end - 1e-9);
      expect(host).toBeDefined();
    }
    const withTp = simulate(s, { F: 2, B: 4, ep: ep(400), tp: { t: 2, latency: 0.25, bandwidth: Infinity, bytesPerElement: 1, messages: Array.from({ length: p }, () => ({ F: [{ coll: 'tp-all-reduce', elements: 1 }], B: [{ coll: 'tp-all-reduce', elements: 1 }], I: [], W: [] })) } });
    expect(withTp.makespan).toBeCloseTo((m + p - 1) * (2 + 2 + 0.25 + 4 + 2 + 0.25), 9);
    expect(withTp.timeline.intervals.filter((iv) => iv.coll === 'ep-all-to-all')).toHaveLength(2 * p * m * 4);
    expect(withTp.timeline.intervals.filter((iv) => iv.coll === 'tp-all-reduce')).toHaveLength(2 * p * m * 2);
    const back = decodeTimeline(encodeTimeline(r.timeline));
    expect(back.intervals.filter((iv) => iv.coll === 'ep-all-to-all')).toHaveLength(a2a.length);
    expect(toChromeTrace(r.timeline).traceEvents.some((e) => e.name === 'ep-all-to-all stage 0')).toBe(true);
  });

  it('refuses bad ep costs by field, value and rule', () => {
    const s = generateSchedule('1f1b', p, m);
    const refused = (costs: EpCosts, field: string) => {
      try {
        simulate(s, { ep: costs });
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        expect((e as ConfigError).field).toBe(field);
        return;
      }
      throw new Error(`expected ${field} refused`);
    };
    refused({ ...ep(1), local: 9 }, 'costs.ep.local');
    refused({ ...ep(1), n: 0 }, 'costs.ep.n');
    refused({ ...ep(1), messages: [] }, 'costs.ep.messages');
    refused({ ...ep(1), link: { ...link, bandwidthInter: 0 } }, 'costs.ep.link.bandwidthInter');
    refused({ ...ep(1), messages: Array.from({ length: p }, () => ({ F: [-1], I: [] })) }, 'costs.ep.messages[0].F');
  });
});
