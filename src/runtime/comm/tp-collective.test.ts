/**
 * What a tp collective's interval holds. On a GPU the layer's kernels are still running when the layer asks for its
 * all-reduce, and reading the tensor waits for them: the interval must start when that work is done, or the layer's
 * compute is booked as tp communication. Here a CPU backend stands in for a device that stays busy for a set time
 * after each member's call (its reads resolve only then), and two members exchange over a real
 * MessageChannel.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import type { Tensor } from '../../nn/backend.ts';
import { epochMs } from './clock.ts';
import { Mailbox } from './mailbox.ts';
import { TpChannel } from './tp-collective.ts';
import { StepLog } from './transport.ts';

/** A CPU backend whose queued work ends `busyMs` after `busy()` is called: sync and read wait for it, as WebGPU's do. */
class BusyDevice extends CpuBackend {
  private doneAt = 0;
  busy(ms: number): void {
    this.doneAt = epochMs() + ms;
  }
  private idle(): Promise<void> {
    return new Promise((r) => setTimeout(r, Math.max(0, this.doneAt - epochMs())));
  }
  override async sync(): Promise<void> {
    await this.idle();
  }
  override async read(t: Tensor): Promise<Float64Array | Int32Array> {
    await this.idle();
    return super.read(t);
  }
}

function pair(): { be: BusyDevice[]; channels: TpChannel[]; logs: StepLog[] } {
  const { port1, port2 } = new MessageChannel();
  const be = [new BusyDevice(), new BusyDevice()];
  const channels = [port1, port2].map((port, index) => {
    const mailbox = new Mailbox(index, `worker ${index}`);
    mailbox.attach(port, `worker ${1 - index}`);
    return new TpChannel({ be: be[index], index, size: 2, workers: [0, 1], ports: new Map([[1 - index, port]]), mailbox, recvTimeoutMs: 5000 });
  });
  const logs = [0, 1].map((j) => new StepLog(0, 0, undefined, j));
  channels.forEach((c, j) => c.enter({ stage: 0, op: 'F', mb: 0 }, logs[j]));
  return { be, channels, logs };
}

describe('a tp collective is timed from the end of the work queued before it', () => {
  it('a member whose device is busy for 150 ms logs the exchange, not the 150 ms; the sum is exact', async () => {
    const { be, channels, logs } = pair();
    const x = [be[0].tensor([1, 2, 3, 4], [2, 2]), be[1].tensor([10, 20, 30, 40], [2, 2])];
    const called = epochMs();
    be[0].busy(150);
    be[1].busy(150);
    const out = await Promise.all(channels.map((c, j) => c.groupFor(0).allReduce(x[j])));
    for (const [j, o] of out.entries()) expect(Array.from(await be[j].read(o))).toEqual([11, 22, 33, 44]);
    for (const log of logs) {
      const [iv] = log.intervals;
      expect(iv).toMatchObject({ op: 'collective', coll: 'tp-all-reduce', stage: 0, bytes: 32 });
      expect(iv.start - called).toBeGreaterThanOrEqual(145);
      // The exchange itself: two in-process ports, well under the device's 150 ms (timed from the call it held them).
      expect(iv.end - iv.start).toBeLessThan(75);
    }
  });

  it('a member that is ready first waits for the other: that wait is in its interval, its own device time is not', async () => {
    const { be, channels, logs } = pair();
    const x = [be[0].tensor([1, 1], [1, 2]), be[1].tensor([2, 2], [1, 2])];
    const called = epochMs();
    be[0].busy(30);
    be[1].busy(200);
    await Promise.all(channels.map((c, j) => c.groupFor(0).allReduce(x[j])));
    const [early] = logs[0].intervals;
    const [late] = logs[1].intervals;
    expect(early.start - called).toBeGreaterThanOrEqual(25);
    expect(late.start - called).toBeGreaterThanOrEqual(195);
    expect(late.start - early.start).toBeGreaterThan(100);
    // The early member waited for the late one's part (~170 ms of its interval); the late one only exchanged.
    expect(early.end - early.start).toBeGreaterThan(100);
    expect(late.end - late.start).toBeLessThan(75);
  });
});
