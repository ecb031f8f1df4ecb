import { describe, expect, it } from 'vitest';
import { Mailbox } from '../comm/mailbox.ts';
import { StreamEnd, StreamEndedError } from './stream-end.ts';

const F0 = (mb: number) => ({ stage: 0, op: 'F' as const, mb });

describe('ending a stream at a step boundary', () => {
  it('holds new micro-batches at stage 0 until the end is known, then lets in only those below it', async () => {
    const end = new StreamEnd(new Mailbox(0));
    expect(await end.admit(F0(0))).toBe(true);
    expect(await end.admit(F0(1))).toBe(true);
    expect(end.hold()).toBe(2);
    let admitted: boolean | null = null;
    const next = end.admit(F0(2)).then((ok) => (admitted = ok));
    await Promise.resolve();
    expect(admitted).toBeNull();
    // Other actions of micro-batches that entered still run while held.
    expect(await end.admit({ stage: 1, op: 'B', mb: 1 })).toBe(true);
    end.endAt(4);
    await next;
    expect(admitted).toBe(true);
    expect(await end.admit(F0(3))).toBe(true);
    expect(await end.admit(F0(4))).toBe(false);
    expect(await end.admit({ stage: 2, op: 'B', mb: 4 })).toBe(false);
    expect(await end.admit({ stage: 2, op: 'B', mb: 3 })).toBe(true);
  });

  it('ends the waits for activations and gradients past the end, and only those', async () => {
    const box = new Mailbox(1);
    const end = new StreamEnd(box);
    const before = box.take('act', 1, 3, 0, 60_000, 'an activation');
    const after = box.take('act', 1, 4, 0, 60_000, 'an activation');
    const grad = box.take('grad', 0, 5, 0, 60_000, 'a gradient');
    const ring = box.take('ring', 0, 9, 0, 60_000, 'a ring chunk');
    end.endAt(4);
    await expect(after).rejects.toBeInstanceOf(StreamEndedError);
    await expect(grad).rejects.toBeInstanceOf(StreamEndedError);
    // The activation of micro-batch 3 and the ring chunk still arrive.
    const payload = { stage: 1, step: 0, shape: [1], dtype: 'f64' as const, buffer: new Float64Array([1]).buffer, sentAt: 0, from: 0 };
    box.deliver({ ...payload, kind: 'act', mb: 3 });
    box.deliver({ ...payload, kind: 'ring', stage: 0, mb: 9 });
    await expect(before).resolves.toMatchObject({ mb: 3 });
    await expect(ring).resolves.toMatchObject({ mb: 9 });
  });
});
