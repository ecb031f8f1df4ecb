/**
 * Expert parallelism's collectives inside a stage's MoE layers (nn/expert-parallel.ts), over MessagePorts between
 * the workers of an ep group (mesh.ts epGroup), in the manner of tp-collective.ts: each collective is one round of
 * direct exchange (every member posts to every other and waits for theirs), numbered per stage in issue order (the
 * group's members run the same actions with the same layers, so their numbers agree); a message's key is that number
 * and its sender.
 *
 * - allGatherRows: every member's rows, joined in member order (the router's probabilities: the counts every member
 *   routes the whole group from);
 * - exchangeRows: the all-to-all of token rows, to their experts' owners and back; a part may be empty, and rows
 *   nobody sends are 0;
 * - allReduceMany: the dense gradients' sum over the group, in member order (the same bits on every member).
 *
 * Each is drawn in the timeline on the worker's lane: the gather and the exchanges as `ep-all-to-all`, the sum as
 * `ep-all-reduce`, with the bytes this worker sent, from the moment the device finished the work before it (the read
 * of its tensors) to the moment its result is placed. Outside a step (the warm-up's dry pass) a collective returns
 * zeros of its result's shape and exchanges nothing.
 */
import type { Backend, Tensor } from '../../nn/backend.ts';
import type { EpGroup } from '../../nn/expert-parallel.ts';
import type { Action } from '../../schedule/types.ts';
import type { CollectiveKind } from '../../schedule/timeline.ts';
import { epochMs } from './clock.ts';
import { readAll } from './device-vector.ts';
import type { Mailbox, Payload } from './mailbox.ts';
import type { StepLog } from './transport.ts';
import { concat, GroupChannel, type GroupBackend, type GroupChannelOptions, type Vector } from './group-channel.ts';

export type EpBackend = GroupBackend;
export type EpChannelOptions = GroupChannelOptions;


/** A worker's end of its ep group: one EpGroup per stage it holds, sharing the ports and the step's context. */
export class EpChannel extends GroupChannel {
  groupFor(stage: number): EpGroup {
    const { size, index } = this.o;
    return {
      size,
      index,
      allGatherRows: (x) => this.gather(stage, x),
      exchangeRows: (x, send, recv, outRows) => this.exchange(stage, x, send, recv, outRows),
      allReduceMany: (xs) => this.reduce(stage, xs),
    };
  }

  private async gather(stage: number, x: Tensor): Promise<Tensor> {
    const { be, size } = this.o;
    const [rows, cols] = x.shape;
    if (!this.current) return be.zeros([rows * size, cols]);
    const [mine] = (await readAll(be, [x])) as Vector[];
    const parts = await this.round(stage, 'ep-all-to-all', 'the router probabilities', () => mine, () => mine.length);
    return be.tensor(concat(parts), [rows * size, cols]);
  }

  private async exchange(stage: number, x: Tensor, send: readonly Int32Array[], recv: readonly Int32Array[], outRows: number): Promise<Tensor> {
    const { be } = this.o;
    const cols = x.shape[1];
    if (!this.current) {
      be.dispose(x);
      return be.zeros([outRows, cols]);
    }
    const [mine] = (await readAll(be, [x])) as Vector[];
    be.dispose(x);
    const pick = (rows: Int32Array): Vector => {
      const out = new (mine.constructor as new (n: number) => Vector)(rows.length * cols);
      rows.forEach((r, i) => out.set(mine.subarray(r * cols, (r + 1) * cols), i * cols));
      return out;
    };
    const parts = await this.round(stage, 'ep-all-to-all', 'the token rows', (k) => pick(send[k]), (k) => recv[k].length * cols);
    const out = new (mine.constructor as new (n: number) => Vector)(outRows * cols);
    parts.forEach((p, k) => recv[k].forEach((r, i) => out.set(p.subarray(i * cols, (i + 1) * cols), r * cols)));
    return be.tensor(out, [outRows, cols]);
  }

  private async reduce(stage: number, xs: readonly Tensor[]): Promise<Tensor[]> {
    const { be } = this.o;
    const shapes = xs.map((x) => [...x.shape]);
    if (!this.current) {
      for (const x of xs) be.dispose(x);
      return shapes.map((sh) => be.zeros(sh));
    }
    const read = (await readAll(be, xs)) as Vector[];
    for (const x of xs) be.dispose(x);
    const mine = concat(read);
    const parts = await this.round(stage, 'ep-all-reduce', 'the dense gradients', () => mine, () => mine.length);
    const sum = parts[0].slice();
    for (let k = 1; k < parts.length; k++) for (let i = 0; i < sum.length; i++) sum[i] += parts[k][i];
    const out: Tensor[] = [];
    let at = 0;
    for (const sh of shapes) {
      const n = sh.reduce((a, b) => a * b, 1);
      out.push(be.tensor(sum.subarray(at, at + n), sh));
      at += n;
    }
    return out;
  }

  /** One round of direct exchange: `part(k)` to member k; returns each member's part for this one (its own: part(index)), `want(k)` values from k. */
  private async round(stage: number, kind: CollectiveKind, what: string, part: (k: number) => Vector, want: (k: number) => number): Promise<Vector[]> {
    const { size, index } = this.o;
    const { a, log } = this.current as { a: Action; log: StepLog };
    const seq = this.issued.get(stage) ?? 0;
    this.issued.set(stage, seq + 1);
    const t0 = epochMs();
    const parts = new Array<Vector>(size);
    parts[index] = part(index);
    let sent = 0;
    for (const [k, port] of this.o.ports) {
      const v = part(k);
      const copy = v === parts[index] ? v.slice() : v;
      sent += copy.byteLength;
      const msg: Payload = {
        kind: 'ep', stage, mb: seq * size + index, step: log.step, shape: [copy.length], dtype: copy instanceof Float64Array ? 'f64' : 'f32',
        buffer: copy.buffer as ArrayBuffer, sentAt: epochMs(), from: this.o.workers[index],
      };
      port.postMessage(msg, [msg.buffer]);
    }
    const label = (j: number) => `${what} of stage ${stage} (ep collective ${seq + 1} of the step, during ${a.stage}${a.op}${a.mb}) from worker ${this.o.workers[j]}`;
    await Promise.all(
      [...this.o.ports.keys()].map(async (j) => {
        const p = await this.o.mailbox.take('ep', stage, seq * size + j, log.step, this.o.recvTimeoutMs, label(j));
        const got = p.shape.reduce((x, y) => x * y, 1);
        if (got !== want(j)) throw new Error(`${label(j)} holds ${got} values; this worker expected ${want(j)}`);
        parts[j] = p.dtype === 'f64' ? new Float64Array(p.buffer) : new Float32Array(p.buffer);
      }),
    );
    log.collective(stage, kind, a.mb, t0, epochMs(), sent);
    return parts;
  }
}
