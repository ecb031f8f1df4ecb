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
 * Sequence parallelism's reduce-scatter sends member k only its block of rows, (t − 1)/t of the
 * tensor in all, and sums the blocks it gets in the same member order (the same bits as the
 * all-reduce's rows); its all-gather of rows sends this member's rows to every other. Several
 * tensors read at once travel as one message (the LayerNorm gradients' sum, the backward's
 * gathers), so a collective costs one device read and one exchange, not one per tensor.
 *
 * Every collective of a stage in a step is numbered in issue order (the group's members run
 * the same actions with the same layers, so their numbers agree); a message's key is that
 * number and its sender. Each is drawn in the timeline as a `tp-all-reduce` / `tp-all-gather`
 * / `tp-reduce-scatter` interval on the worker's lane, with the bytes it sent, from the moment
 * the device finished the kernels before it (not from the call: the read waits for them) to
 * the moment its result is placed.
 */
import type { Backend, Tensor } from '../../nn/backend.ts';
import type { TpGroup } from '../../nn/tensor-parallel.ts';
import type { Action } from '../../schedule/types.ts';
import type { CollectiveKind } from '../../schedule/timeline.ts';
import { epochMs } from './clock.ts';
import { readAll } from './device-vector.ts';
import type { Mailbox, Payload } from './mailbox.ts';
import type { StepLog } from './transport.ts';
import { concat, GroupChannel, type GroupBackend, type GroupChannelOptions, type Vector } from './group-channel.ts';

export type TpBackend = GroupBackend;
export type TpChannelOptions = GroupChannelOptions;


/** A worker's end of its tp group: one TpGroup per stage it holds, sharing the ports and the step's context. */
export class TpChannel extends GroupChannel {
  /** The group as stage `stage`'s layers see it. */
  groupFor(stage: number): TpGroup {
    const { size, index } = this.o;
    return {
      size,
      index,
      allReduce: async (x) => (await this.collective(stage, 'tp-all-reduce', [x]))[0],
      allReduceMany: (xs) => this.collective(stage, 'tp-all-reduce', xs),
      allGather: async (x) => (await this.collective(stage, 'tp-all-gather', [x]))[0],
      ownColumns: (x) => this.ownBlock(x, 'columns'),
      allGatherRows: (xs) => this.collective(stage, 'tp-all-gather-rows', xs),
      reduceScatterRows: async (x) => (await this.collective(stage, 'tp-reduce-scatter', [x]))[0],
      ownRows: (x) => this.ownBlock(x, 'rows'),
    };
  }

  /** This member's block of x's columns or rows (no exchange). */
  private async ownBlock(x: Tensor, of: 'rows' | 'columns'): Promise<Tensor> {
    const { size, index, be } = this.o;
    if (size === 1) return x;
    const [rows, cols] = x.shape;
    if ((of === 'rows' ? rows : cols) % size !== 0) throw new Error(`a tp worker's own ${of} of [${rows}, ${cols}] over ${size} workers: ${of} must be divisible by ${size}`);
    const shape = of === 'rows' ? [rows / size, cols] : [rows, cols / size];
    if (!this.current) return be.zeros(shape);
    const v = (await be.read(x)) as Vector;
    if (of === 'rows') return be.tensor(v.slice(index * shape[0] * cols, (index + 1) * shape[0] * cols), shape);
    const w = shape[1];
    const out = new (v.constructor as new (n: number) => Vector)(rows * w);
    for (let r = 0; r < rows; r++) out.set(v.subarray(r * cols + index * w, r * cols + (index + 1) * w), r * w);
    return be.tensor(out, shape);
  }

  /**
   * One round of direct exchange over the group for `xs` (read off the device together, sent as one message):
   * an all-reduce sums them; an all-gather joins each one's columns, an all-gather of rows each one's rows; a
   * reduce-scatter (one tensor) sends member k only its row block k and sums the blocks it gets. Takes `xs`,
   * but for an all-gather of rows.
   */
  private async collective(stage: number, op: 'tp-all-reduce' | 'tp-all-gather' | 'tp-all-gather-rows' | 'tp-reduce-scatter', xs: readonly Tensor[]): Promise<Tensor[]> {
    const { be, size, index } = this.o;
    if (size === 1) return [...xs];
    // An all-gather of rows leaves its inputs to the caller (a layer's saved row blocks, the stage's dy).
    const takes = op !== 'tp-all-gather-rows';
    const shapes = xs.map((x) => [...x.shape]);
    if (op === 'tp-reduce-scatter' && shapes[0][0] % size !== 0) throw new Error(`a tp reduce-scatter of rows over ${size} workers needs rows divisible by ${size}; the tensor is [${shapes[0].join(', ')}]`);
    const outShapes = shapes.map((sh) => {
      const [rows, cols] = sh;
      return op === 'tp-all-gather' ? [rows, cols * size] : op === 'tp-all-gather-rows' ? [rows * size, cols] : op === 'tp-reduce-scatter' ? [rows / size, cols] : sh;
    });
    if (!this.current) {
      // The warm-up's dry pass: the shapes its later kernels need, nothing exchanged.
      if (takes) for (const x of xs) be.dispose(x);
      return outShapes.map((sh) => be.zeros(sh));
    }
    const { a, log } = this.current;
    const kind: CollectiveKind = op === 'tp-all-gather-rows' ? 'tp-all-gather' : op;
    const seq = this.issued.get(stage) ?? 0;
    this.issued.set(stage, seq + 1);
    // The collective starts when the device has finished the work queued before it (the layer's kernels): the read
    // of its tensors (one wait for all of them) ends then. Timed from the call, a collective held the layer's compute
    // and the page booked it as tp time (10 ms of a GPT all-reduce's 10.4 on SwiftShader; its exchange took 0.25).
    const read = (await readAll(be, xs)) as Vector[];
    const t0 = epochMs();
    if (takes) for (const x of xs) be.dispose(x);
    const mine = read.length === 1 ? read[0] : concat(read);
    // What member k gets: the whole, or (a reduce-scatter) its block of rows.
    const block = mine.length / size;
    const partFor = (k: number): Vector => (op === 'tp-reduce-scatter' ? mine.slice(k * block, (k + 1) * block) : mine.slice());
    const want = op === 'tp-reduce-scatter' ? block : mine.length;
    const parts: Vector[] = new Array<Vector>(size);
    parts[index] = op === 'tp-reduce-scatter' ? mine.subarray(index * block, (index + 1) * block) : mine;
    let sent = 0;
    for (const [k, port] of this.o.ports) {
      const copy = partFor(k);
      sent += copy.byteLength;
      const msg: Payload = {
        kind: 'tp', stage, mb: seq * size + index, step: log.step, shape: [copy.length], dtype: copy instanceof Float64Array ? 'f64' : 'f32',
        buffer: copy.buffer as ArrayBuffer, sentAt: epochMs(), from: this.o.workers[index],
      };
      port.postMessage(msg, [msg.buffer]);
    }
    const what = (j: number) => `the ${kind.replace('tp-', 'tp ')} part of stage ${stage} (collective ${seq + 1} of the step, during ${a.stage}${a.op}${a.mb}) from worker ${this.o.workers[j]}`;
    await Promise.all(
      [...this.o.ports.keys()].map(async (j) => {
        const p = await this.o.mailbox.take('tp', stage, seq * size + j, log.step, this.o.recvTimeoutMs, what(j));
        const got = p.shape.reduce((x, y) => x * y, 1);
        if (got !== want) throw new Error(`${what(j)} holds ${got} values; this worker's part holds ${want}`);
        parts[j] = p.dtype === 'f64' ? new Float64Array(p.buffer) : new Float32Array(p.buffer);
      }),
    );
    const out: Tensor[] = [];
    if (op === 'tp-all-reduce' || op === 'tp-reduce-scatter') {
      const sum = sumInOrder(parts);
      let at = 0;
      for (const sh of outShapes) {
        const n = sh.reduce((x, y) => x * y, 1);
        out.push(be.tensor(sum.subarray(at, at + n), sh));
        at += n;
      }
    } else {
      let at = 0;
      shapes.forEach(([rows, cols], i) => {
        const n = rows * cols;
        const pieces = parts.map((p) => p.subarray(at, at + n));
        out.push(be.tensor(op === 'tp-all-gather' ? joinColumns(pieces, rows, cols) : concat(pieces), outShapes[i]));
        at += n;
      });
    }
    log.collective(stage, kind, a.mb, t0, epochMs(), sent);
    return out;
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
