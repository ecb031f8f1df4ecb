import { describe, expect, it } from 'vitest';
import type { Timeline } from './timeline.ts';
import { decodeTimeline, decodeTimelineInChunks, encodeTimeline, timelineBuffers } from './timeline-columns.ts';

describe('timeline columns', () => {
  it('give back every interval as it was: each op, comm and collective kind, optional fields absent or present (0 included)', () => {
    const t: Timeline = {
      source: 'measured',
      ranks: 2,
      dp: 2,
      stages: 2,
      microbatches: 1,
      unit: 'ms',
      intervals: [
        { rank: 0, stage: 0, op: 'F', mb: 0, start: 0, end: 1.5 },
        { rank: 1, replica: 0, stage: 1, op: 'B', mb: 0, start: 0.1, end: 2.25, gpuMs: 0 },
        { rank: 1, replica: 1, stage: 1, op: 'I', mb: 0, start: 3, end: 4, gpuMs: 0.75 },
        { rank: 0, replica: 1, stage: 0, op: 'W', mb: 0, start: 4, end: 5 },
        { rank: 0, replica: 1, tpRank: 1, stage: 0, op: 'F', mb: 1, start: 4, end: 5 },
        { rank: 1, tpRank: 0, stage: 1, op: 'F', mb: 1, start: 4, end: 5 },
        ...(['send', 'recv-wait', 'readback', 'upload', 'transfer'] as const).map((comm, i) => ({ rank: 1, stage: 1, op: 'comm' as const, mb: 0, start: i, end: i + 0.5, comm, peer: 0 })),
        ...(['gather-grads', 'reduce-scatter', 'all-gather', 'shard-update', 'scatter-back', 'tp-all-reduce', 'tp-all-gather'] as const).map((coll, i) => ({ rank: 0, replica: 1, stage: 0, op: 'collective' as const, mb: 0, start: 6 + i, end: 6.5 + i, coll, bytes: i * 1e9 + 0.5 })),
      ],
    };
    const cols = encodeTimeline(t);
    expect(timelineBuffers(cols)).toHaveLength(14);
    expect(decodeTimeline(structuredClone(cols))).toStrictEqual(t);
  });

  it('decode in chunks alike (chunk sizes that do and do not divide the count), and stop when no longer wanted', async () => {
    const intervals = Array.from({ length: 10 }, (_, i) => ({ rank: i % 2, replica: i % 3, stage: i % 2, op: 'F' as const, mb: i, start: i, end: i + 1 }));
    const t: Timeline = { source: 'simulated', ranks: 2, dp: 3, stages: 2, microbatches: 10, unit: 'ms', intervals };
    const cols = encodeTimeline(t);
    for (const chunk of [1, 3, 5, 10, 64]) expect(await decodeTimelineInChunks(cols, () => true, chunk)).toStrictEqual(t);
    let asked = 0;
    expect(await decodeTimelineInChunks(cols, () => ++asked < 3, 3)).toBeNull();
    expect(asked).toBe(3);
  });

  it('refuses a kind it has no code for', () => {
    const bad = { source: 'simulated', ranks: 1, stages: 1, microbatches: 1, unit: 'ms', intervals: [{ rank: 0, stage: 0, op: 'X', mb: 0, start: 0, end: 1 }] } as unknown as Timeline;
    expect(() => encodeTimeline(bad)).toThrow('unknown op X');
  });
});
