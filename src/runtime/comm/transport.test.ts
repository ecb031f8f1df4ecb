/**
 * A received activation or gradient is uploaded as its message lands, not when its action takes it (transport.ts):
 * the upload interval ends before the take begins, the tensor the action gets is that upload, and one never taken
 * is freed with the transport. Ring chunks and tp parts are left to their collectives.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import type { DType, Tensor } from '../../nn/backend.ts';
import { epochMs } from './clock.ts';
import { Mailbox, type Payload } from './mailbox.ts';
import { StepLog, Transport } from './transport.ts';

/** The CPU reference, counting the tensors it makes and frees. */
class Counting extends CpuBackend {
  made: number[] = [];
  freed = 0;
  override tensor(data: ArrayLike<number>, shape: readonly number[], dtype?: DType): ReturnType<CpuBackend['tensor']> {
    this.made.push(epochMs());
    return super.tensor(data, shape, dtype);
  }
  override dispose(t: Tensor): void {
    this.freed++;
    super.dispose(t);
  }
}

function payload(kind: Payload['kind'], mb: number, values: number[]): Payload {
  return { kind, stage: 1, mb, step: 0, shape: [values.length], dtype: 'f64', buffer: Float64Array.from(values).buffer, sentAt: epochMs(), from: 0 };
}

function setUp() {
  const be = new Counting();
  const mailbox = new Mailbox(1);
  const transport = new Transport({ rank: 1, be, stageToRank: [0, 1], ports: new Map(), mailbox, recvTimeoutMs: 1000 });
  return { be, mailbox, transport };
}

describe('transport: uploads on landing', () => {
  it('an activation is uploaded as it lands; its forward takes that tensor, and the upload interval is the landing one', async () => {
    const { be, mailbox, transport } = setUp();
    mailbox.deliver({ ...payload('act', 0, [1, 2, 3]), receivedAt: epochMs() });
    expect(be.made).toHaveLength(1);
    const landedAt = be.made[0];
    await new Promise((r) => setTimeout(r, 5));
    const log = new StepLog(1, 0);
    const calledAt = epochMs();
    const t = await transport.receive(log, 'act', { stage: 1, op: 'F', mb: 0 }, 0);
    expect(be.made).toHaveLength(1);
    expect(Array.from(await be.read(t))).toEqual([1, 2, 3]);
    const upload = log.intervals.find((iv) => iv.comm === 'upload')!;
    // The upload interval holds the landing moment, and ended before the forward asked for its input.
    expect(upload.start).toBeLessThanOrEqual(landedAt);
    expect(upload.end).toBeGreaterThanOrEqual(landedAt);
    expect(upload.end).toBeLessThan(calledAt);
  });

  it('a gradient landing after its backward began waiting is uploaded on landing too; ring chunks and tp parts are not', async () => {
    const { be, mailbox, transport } = setUp();
    const log = new StepLog(1, 0);
    const got = transport.receive(log, 'grad', { stage: 1, op: 'B', mb: 2 }, 2);
    mailbox.deliver(payload('ring', 0, [9]));
    mailbox.deliver(payload('tp', 0, [9]));
    expect(be.made).toHaveLength(0);
    mailbox.deliver({ ...payload('grad', 2, [4, 5]), receivedAt: epochMs() });
    expect(be.made).toHaveLength(1);
    expect(Array.from(await be.read(await got))).toEqual([4, 5]);
    expect(be.made).toHaveLength(1);
  });

  it('what landed and was never taken is freed with the transport', () => {
    const { be, mailbox, transport } = setUp();
    mailbox.deliver(payload('act', 5, [1]));
    mailbox.deliver(payload('grad', 6, [2]));
    expect(be.freed).toBe(0);
    transport.dispose();
    expect(be.freed).toBe(2);
  });
});
