/**
 * The data plane of one rank as the executor sees it: take a micro-batch's
 * activation or gradient (from a stage on this same rank, or from a peer's
 * port through the mailbox) and send one on, recording every wait, readback,
 * transfer, upload and send as a communication interval of the step.
 * Sends do not block the next action (their readbacks map while it computes);
 * `drain` waits for them at the end. A received activation or gradient is
 * uploaded as soon as its message lands, not when its action takes it.
 */
import type { Backend, Tensor } from '../../nn/backend.ts';
import type { Action } from '../../schedule/types.ts';
import type { CollectiveKind, Interval } from '../../schedule/timeline.ts';
import { ActionError } from './action-error.ts';
import { epochMs } from './clock.ts';
import { payloadKey, type Mailbox, type Payload, type PayloadKind } from './mailbox.ts';

/** One step's measured intervals (compute, communication, collectives) on one worker. */
export class StepLog {
  readonly intervals: Interval[] = [];

  constructor(
    readonly rank: number,
    readonly step: number,
    /** The worker's replica in a data-parallel mesh (absent with one pipeline). */
    readonly replica?: number,
    /** The worker's place in its tp group (absent with tp = 1). */
    readonly tpRank?: number,
    /** The worker's place in its ep group (absent with ep = 1). */
    readonly epRank?: number,
  ) {}

  private push(iv: Interval): void {
    if (this.replica !== undefined) iv.replica = this.replica;
    if (this.tpRank !== undefined) iv.tpRank = this.tpRank;
    if (this.epRank !== undefined) iv.epRank = this.epRank;
    this.intervals.push(iv);
  }

  comm(stage: number, mb: number, kind: Interval['comm'], start: number, end: number, peer?: number): void {
    this.push({ rank: this.rank, stage, op: 'comm', mb, start, end, comm: kind, peer });
  }

  /** Logs a compute action from `start` to now and returns its interval (an action not waited for is placed later: executor/action-times.ts). */
  compute(a: Action, start: number, gpuMs: number | undefined): Interval {
    const iv: Interval = { rank: this.rank, stage: a.stage, op: a.op, mb: a.mb, start, end: epochMs() };
    if (gpuMs !== undefined) iv.gpuMs = gpuMs;
    this.push(iv);
    return iv;
  }

  /** A part of stage `stage`'s data-parallel collective; `exchange` numbers the ring's chunk exchanges (−1: not an exchange); a tp collective: the micro-batch. */
  collective(stage: number, coll: CollectiveKind, exchange: number, start: number, end: number, bytes: number, peer?: number): void {
    const iv: Interval = { rank: this.rank, stage, op: 'collective', mb: exchange, start, end, coll, bytes };
    if (peer !== undefined) iv.peer = peer;
    this.push(iv);
  }
}

export interface TransportOptions {
  rank: number;
  /** The worker's replica in a data-parallel mesh (absent with one pipeline). */
  replica?: number;
  be: Backend;
  stageToRank: readonly number[];
  /** Ports to peer ranks, by peer rank. */
  ports: ReadonlyMap<number, MessagePort>;
  mailbox: Mailbox;
  recvTimeoutMs: number;
}

function actionText(a: Action): string {
  return `${a.stage}${a.op}${a.mb}`;
}

export class Transport {
  /** Tensors handed from one stage to the next on this same rank (interleaved, V-shapes). */
  private readonly local = new Map<string, Tensor>();
  private sends: Promise<void>[] = [];
  private sendError: Error | null = null;
  /** Activations and gradients uploaded as their messages landed, until their actions take them. */
  private readonly landed = new Map<string, { t: Tensor; start: number; end: number }>();

  constructor(protected readonly o: TransportOptions) {
    o.mailbox.onLand = (p) => this.land(p);
  }

  /** Uploads an activation or gradient as it lands (the device copies it while the worker does something else). */
  private land(p: Payload): void {
    if (p.kind !== 'act' && p.kind !== 'grad') return;
    try {
      const t0 = epochMs();
      const t = this.o.be.tensor(p.dtype === 'f64' ? new Float64Array(p.buffer) : new Float32Array(p.buffer), p.shape);
      this.landed.set(payloadKey(p.kind, p.stage, p.mb, p.step), { t, start: t0, end: epochMs() });
    } catch {
      // Uploaded when its action takes it instead, where a failure is reported.
    }
  }

  /** Frees what landed and was never taken (a run that ended early). */
  dispose(): void {
    for (const { t } of this.landed.values()) this.o.be.dispose(t);
    this.landed.clear();
  }

  /** Waits for micro-batch `a.mb`'s input of `kind` to action `a`, coming from stage `fromStage`. */
  async receive(log: StepLog, kind: PayloadKind, a: Action, fromStage: number): Promise<Tensor> {
    const key = `${kind}:${a.stage}:${a.mb}`;
    const mine = this.local.get(key);
    if (mine) {
      this.local.delete(key);
      return mine;
    }
    const peer = this.o.stageToRank[fromStage];
    const what = `the ${kind === 'act' ? 'activation' : 'gradient'} of micro-batch ${a.mb} from rank ${peer} (stage ${fromStage}) for ${actionText(a)}`;
    const t0 = epochMs();
    const p: Payload = await this.o.mailbox.take(kind, a.stage, a.mb, log.step, this.o.recvTimeoutMs, what);
    const t1 = epochMs();
    const arrived = p.receivedAt ?? t1;
    if (arrived > t0) log.comm(a.stage, a.mb, 'recv-wait', t0, Math.min(arrived, t1), peer);
    log.comm(a.stage, a.mb, 'transfer', p.sentAt, arrived, peer);
    const landedKey = payloadKey(kind, a.stage, a.mb, log.step);
    const early = this.landed.get(landedKey);
    if (early) {
      this.landed.delete(landedKey);
      log.comm(a.stage, a.mb, 'upload', early.start, early.end, peer);
      return early.t;
    }
    const data = p.dtype === 'f64' ? new Float64Array(p.buffer) : new Float32Array(p.buffer);
    const t2 = epochMs();
    const t = this.o.be.memory.scope('staging', () => this.o.be.tensor(data, p.shape));
    log.comm(a.stage, a.mb, 'upload', t2, epochMs(), peer);
    return t;
  }

  /** Sends `t` (and gives up ownership of it) to stage `toStage`; `from` is the action that made it. */
  send(log: StepLog, kind: PayloadKind, toStage: number, mb: number, t: Tensor, from: Action): void {
    const { rank, be } = this.o;
    const peer = this.o.stageToRank[toStage];
    if (peer === rank) {
      this.local.set(`${kind}:${toStage}:${mb}`, t);
      return;
    }
    const port = this.o.ports.get(peer);
    if (!port) throw new Error(`no channel from rank ${rank} to rank ${peer} (stage ${toStage})`);
    const shape = [...t.shape];
    const t0 = epochMs();
    const p = be.read(t).then((arr) => {
      be.dispose(t);
      const t1 = epochMs();
      log.comm(from.stage, mb, 'readback', t0, t1, peer);
      const copy = arr instanceof Float64Array || arr instanceof Float32Array ? arr : Float32Array.from(arr);
      const buffer = copy.buffer.byteLength === copy.byteLength ? copy.buffer : copy.slice().buffer;
      const msg: Payload = {
        kind,
        stage: toStage,
        mb,
        step: log.step,
        shape,
        dtype: copy instanceof Float64Array ? 'f64' : 'f32',
        buffer: buffer as ArrayBuffer,
        sentAt: t1,
        from: rank,
      };
      if (this.post(port, msg, from, log.step)) log.comm(from.stage, mb, 'send', t1, epochMs(), peer);
    });
    this.sends.push(
      p.catch((e: unknown) => {
        this.sendError = new ActionError(rank, from, log.step, e, this.o.replica);
        this.o.mailbox.fail(this.sendError);
      }),
    );
  }

  /**
   * Posts a message on a peer's port, transferring its buffer; returns whether
   * it was posted as it is (fault injection overrides this).
   */
  protected post(port: MessagePort, msg: Payload, _from: Action, _step: number): boolean {
    port.postMessage(msg, [msg.buffer]);
    return true;
  }

  /** Messages taken from other workers so far (the mailbox's count: every kind). */
  crossings(): number {
    return this.o.mailbox.taken;
  }

  /** Throws the first failed send's error, if any. */
  check(): void {
    if (this.sendError) throw this.sendError;
  }

  /** Waits for every send of the step; throws the first failure. */
  async drain(): Promise<void> {
    const sends = this.sends;
    this.sends = [];
    await Promise.all(sends);
    this.check();
  }
}
