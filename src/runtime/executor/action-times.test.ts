/**
 * Placing actions that nothing waited for (action-times.ts): device-clock spans moved onto the epoch clock by the
 * smallest offset their issue times allow, capped by the step's end; wall-clock ends with starts after the
 * previous action; never overlapping; reads started at the end of the action they waited for. Expected values
 * worked by hand below.
 */
import { describe, expect, it } from 'vitest';
import type { Interval } from '../../schedule/timeline.ts';
import { placeActions, settleReads, timestampOffset, type IssuedAction } from './action-times.ts';

function action(issuedAt: number, encodedAt: number, oneSubmit = true): IssuedAction {
  return { iv: { rank: 0, stage: 0, op: 'F', mb: 0, start: issuedAt, end: encodedAt }, issuedAt, encodedAt, oneSubmit };
}

describe('action times', () => {
  it('timestamps: the offset is the largest bound − span start (encodedAt for one submit, issuedAt otherwise), capped by the step end', () => {
    // Bounds − starts: 100.5 − 0 = 100.5; 101 − 3 = 98 (issued, more than one submit: not its encodedAt 104); 110 − 8 = 102.
    const acts = [action(100, 100.5), action(101, 104, false), action(109, 110)];
    const spans: [number, number][] = [[0, 2], [3, 7], [8, 9]];
    expect(timestampOffset(acts, spans, 1000)).toBe(102);
    // The step's end at 110 saw every action done: 110 − 9 = 101 caps it.
    expect(timestampOffset(acts, spans, 110)).toBe(101);
    placeActions(acts, spans, 'timestamp', 1000);
    expect(acts.map((a) => [a.iv.start, a.iv.end, a.iv.gpuMs])).toEqual([[102, 104, 2], [105, 109, 4], [110, 111, 1]]);
  });

  it('timestamps: a start before the previous end (quantized) is moved to it; the order is kept', () => {
    const acts = [action(0, 0), action(1, 1)];
    placeActions(acts, [[0, 5], [4, 6]], 'timestamp', 100);
    expect(acts.map((a) => [a.iv.start, a.iv.end, a.iv.gpuMs])).toEqual([[0, 5, 5], [5, 6, 2]]);
  });

  it('wall: the end is the completion callback, the start the later of the issue and the previous end', () => {
    const acts = [action(10, 11), action(12, 13), action(30, 31)];
    placeActions(acts, [[NaN, 20], [NaN, 25], [NaN, 29.5]], 'wall', 100);
    // The third ended (callback 29.5) before its issue at 30 was noted: a zero-length interval at 30.
    expect(acts.map((a) => [a.iv.start, a.iv.end, a.iv.gpuMs])).toEqual([[10, 20, undefined], [20, 25, undefined], [30, 30, undefined]]);
  });

  it('refuses spans that do not match the actions', () => {
    expect(() => placeActions([action(0, 0)], [], 'wall', 1)).toThrow(/1 actions issued but 0 GPU spans/);
  });

  it('a readback or gather of gradients starts at the end of the last action issued before it; other intervals stay', () => {
    const acts = [action(0, 1), action(5, 5)];
    placeActions(acts, [[0, 4], [4, 9]], 'timestamp', 100);
    // Offset 1: actions at [1, 5] and [5, 10].
    const rb: Interval = { rank: 0, stage: 0, op: 'comm', comm: 'readback', mb: 0, start: 2, end: 7 };
    const gather: Interval = { rank: 0, stage: 0, op: 'collective', coll: 'gather-grads', mb: -1, start: 7, end: 12 };
    const late: Interval = { rank: 0, stage: 0, op: 'comm', comm: 'readback', mb: 1, start: 6.5, end: 8 };
    const wait: Interval = { rank: 0, stage: 0, op: 'comm', comm: 'recv-wait', mb: 1, start: 2, end: 3 };
    settleReads([rb, gather, late, wait], acts);
    expect([rb.start, rb.end]).toEqual([5, 7]);
    expect([gather.start, gather.end]).toEqual([10, 12]);
    // Its action's end (10) is after the map resolved (8): the interval shrinks to its end, never inverts.
    expect([late.start, late.end]).toEqual([8, 8]);
    expect([wait.start, wait.end]).toEqual([2, 3]);
  });
});
