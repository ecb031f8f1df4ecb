/**
 * Tensor parallelism's collectives between a stage's layers (nn/tensor-parallel.ts), over
 * MessagePorts between the workers of a tp group (mesh.ts tpGroup).
 *
 * The messages are small (one micro-batch's activations, a few KiB to a few hundred KiB) and
 * a group has 2–4 members, so each collective is one round of direct exchange rather than a
 * ring: every member reads its tensor off the device, posts it to each other member and
 * waits for theirs; the all-reduce then sums the t parts in member order (0, 1, …, t − 1) on
 * every member, so the result is bit for bit the same everywhere (replicated LayerNorms and
 * biases stay identical without being synchronised); the all-gather places each member's
 * columns at its block. One round costs t − 1 sends and receives of the whole tensor (a ring:
 * 2(t − 1) rounds of 1/t of it), which at these sizes is the latency-bound better choice.
 *
 * Every collective of a stage in a step is numbered in issue order (the group's members run
 * the same actions with the same layers, so their numbers agree); a message's key is that
 * number and its sender. Each is drawn in the timeline as a `tp-all-reduce` / `tp-all-gather`
 * interval on the worker's lane, with the bytes it sent.
 */
import type { Backend, Tensor } from '../nn/backend.ts';
import type { TpGroup } from '../nn/tensor-parallel.ts';
import type { Action } from '../schedule/types.ts';
import type { CollectiveKind } from '../schedule/timeline.ts';
import { epochMs } from './clock.ts';
import type { Mailbox, Payload } from './mailbox.ts';
import type { StepLog } from './transport.ts';

export interface TpChannelOptions {
  be: Backend;
  /** This worker's place in its group, and the group's size. */
  index: number;
  size: number;
  /** The group's workers (mesh.ts order), by tp index: for messages. */
  workers: readonly number[];
  /** Ports to the other members, by tp index. */
  ports: ReadonlyMap<number, MessagePort>;
  mailbox: Mailbox;
  recvTimeoutMs: number;
}

type Vector = Float32Array | Float64Array;

/** A worker's end of its tp group: one TpGroup per stage it holds, sharing the ports and the step's context. */
export class TpChannel {
  /** The action running now and its step's log (set by the executor's policy hook, withTpContext). */
  private current: { a: Action; log: StepLog } | null = null;
  /** Collectives issued so far in the step, per stage. */
  private issued = new Map<number, number>();
  private step = -1;

  constructor(private readonly o: TpChannelOptions) {}

  /** Called before every action: collectives are logged against it and numbered within its step. */
  enter(a: Action, log: StepLog): void {
    if (log.step !== this.step) {
      this.step = log.step;
      this.issued.clear();
    }
    this.current = { a, log };
  }

  /** Outside a step (the warm-up's dry pass): collectives return tensors of the right shapes and exchange nothing. */
  leave(): void {
    this.current = null;
  }

  /** The group as stage `stage`'s layers see it. */
  groupFor(stage: number): TpGroup {
    const { size, index, be } = this.o;
    return {
      size,
      index,
      allReduce: (x) => this.collective(stage, 'tp-all-reduce', x),
      allGather: (x) => this.collective(stage, 'tp-all-gather', x),
      ownColumns: async (x) => {
        if (size === 1) return x;
        const [rows, cols] = x.shape;
        const w = cols / size;
        if (!this.current) return be.zeros([rows, w]);
        const v = (await be.read(x)) as Vector;
        const out = new (v.constructor as new (n: number) => Vector)(rows * w);
        for (let r = 0; r < rows; r++) out.set(v.subarray(r * cols + index * w, r * cols + (index + 1) * w), r * w);
        return be.tensor(out, [rows, w]);
      },
    };
  }

  private async collective(stage: number, kind: CollectiveKind, x: Tensor): Promise<Tensor> {
    const { be, size, index } = this.o;
    if (size === 1) return x;
    const [rows, cols] = x.shape;
    const outShape = kind === 'tp-all-gather' ? [rows, cols * size] : [rows, cols];
    if (!this.current) {
      // The warm-up's dry pass: the shapes its later kernels need, nothing exchanged.
      be.dispose(x);
      return be.zeros(outShape);
    }
    const { a, log } = this.current;
    const seq = this.issued.get(stage) ?? 0;
    this.issued.set(stage, seq + 1);
    const t0 = epochMs();
    const mine = (await be.read(x)) as Vector;
    be.dispose(x);
    const parts: Vector[] = new Array<Vector>(size);
    parts[index] = mine;
    let sent = 0;
    for (const port of this.o.ports.values()) {
      const copy = mine.slice();
      sent += copy.byteLength;
      const msg: Payload = {
        kind: 'tp', stage, mb: seq * size + index, step: log.step, shape: [rows, cols], dtype: copy instanceof Float64Array ? 'f64' : 'f32',
        buffer: copy.buffer as ArrayBuffer, sentAt: epochMs(), from: this.o.workers[index],
      };
      port.postMessage(msg, [msg.buffer]);
    }
    const what = (j: number) => `the ${kind === 'tp-all-reduce' ? 'tp all-reduce' : 'tp all-gather'} part of stage ${stage} (collective ${seq + 1} of the step, during ${a.stage}${a.op}${a.mb}) from worker ${this.o.workers[j]}`;
    await Promise.all(
      [...this.o.ports.keys()].map(async (j) => {
        const p = await this.o.mailbox.take('tp', stage, seq * size + j, log.step, this.o.recvTimeoutMs, what(j));
        if (p.shape[0] !== rows || p.shape[1] !== cols) throw new Error(`${what(j)} has shape [${p.shape.join(', ')}]; this worker's part is [${rows}, ${cols}]`);
        parts[j] = p.dtype === 'f64' ? new Float64Array(p.buffer) : new Float32Array(p.buffer);
      }),
    );
    const out = kind === 'tp-all-reduce' ? sumInOrder(parts) : joinColumns(parts, rows, cols);
    const result = be.tensor(out, outShape);
    log.collective(stage, kind, a.mb, t0, epochMs(), sent);
    return result;
  }
}

/** Σ parts in member order, the same order (and so the same rounding) on every member. */
function sumInOrder(parts: readonly Vector[]): Vector {
  const out = parts[0].slice();
  for (let k = 1; k < parts.length; k++) {
    const p = parts[k];
    for (let i = 0; i < out.length; i++) out[i] += p[i];
  }
  return out;
}

/** [rows, t·cols] from t parts of [rows, cols], member k's at columns [k·cols, (k+1)·cols). */
function joinColumns(parts: readonly Vector[], rows: number, cols: number): Vector {
  const t = parts.length;
  const out = new (parts[0].constructor as new (n: number) => Vector)(rows * cols * t);
  parts.forEach((p, k) => {
    for (let r = 0; r < rows; r++) out.set(p.subarray(r * cols, (r + 1) * cols), r * cols * t + k * cols);
  });
  return out;
}
