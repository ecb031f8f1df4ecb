/**
 * The data plane of one worker: messages from peer ranks arrive on
 * MessagePorts (transferable ArrayBuffers, no copies of big arrays) and wait
 * here until the action that needs them takes them. A take that waits too long
 * fails with a message naming what it waited for, so a lost message ends the
 * run instead of hanging it.
 */
import { epochMs } from './clock.ts';
import { PausableTimers } from './pausable-timers.ts';

/**
 * An activation or a gradient between pipeline stages, a chunk of a data-parallel ring collective (ring-allreduce.ts),
 * a chunk of the sum over a stage's model copies (DualPipe, copy-sum.ts: its own kind, so that it never meets a dp
 * ring's chunk of the same stage number), or a part of a tp group's collective (tp-collective.ts) or an ep group's
 * (ep-collective.ts; a part of an all-to-all may be empty).
 */
export type PayloadKind = 'act' | 'grad' | 'ring' | 'copy' | 'tp' | 'ep';

export interface Payload {
  kind: PayloadKind;
  /** The stage that consumes this payload (a ring chunk: the stage whose collective it belongs to). */
  stage: number;
  /** The micro-batch (a ring chunk: the exchange's index in its collective). */
  mb: number;
  step: number;
  shape: number[];
  /** f32 from a GPU backend; f64 from the CPU reference (so Node tests stay exact). */
  dtype: 'f32' | 'f64';
  buffer: ArrayBuffer;
  /** Sender's clock (epoch ms) when it posted. */
  sentAt: number;
  /** Receiver's clock (epoch ms) when it arrived; set by the mailbox. */
  receivedAt?: number;
  from: number;
}

export function payloadKey(kind: PayloadKind, stage: number, mb: number, step: number): string {
  return `${kind}:${stage}:${mb}:${step}`;
}

/** Checks an incoming message; returns an error text naming the bad field, or null. */
export function checkPayload(m: unknown): string | null {
  if (typeof m !== 'object' || m === null) return `message = ${String(m)}: must be an object`;
  const p = m as Record<string, unknown>;
  if (p.kind !== 'act' && p.kind !== 'grad' && p.kind !== 'ring' && p.kind !== 'copy' && p.kind !== 'tp' && p.kind !== 'ep') return `kind = ${JSON.stringify(p.kind)}: must be "act", "grad", "ring", "copy", "tp" or "ep"`;
  for (const f of ['stage', 'mb', 'step', 'from'] as const) {
    if (typeof p[f] !== 'number' || !Number.isInteger(p[f]) || (p[f] as number) < 0) return `${f} = ${JSON.stringify(p[f])}: must be a non-negative integer`;
  }
  // A ring chunk may be empty (a vector shorter than the ring has empty chunks).
  const minDim = p.kind === 'ring' || p.kind === 'copy' || p.kind === 'ep' ? 0 : 1;
  if (!Array.isArray(p.shape) || p.shape.some((d) => !Number.isInteger(d) || d < minDim)) {
    return `shape = ${JSON.stringify(p.shape)}: must be a list of ${minDim === 0 ? 'non-negative' : 'positive'} integers`;
  }
  if (p.dtype !== 'f32' && p.dtype !== 'f64') return `dtype = ${JSON.stringify(p.dtype)}: must be "f32" or "f64"`;
  if (!(p.buffer instanceof ArrayBuffer)) return `buffer: must be an ArrayBuffer`;
  const n = (p.shape as number[]).reduce((a, b) => a * b, 1);
  const bytes = p.dtype === 'f32' ? 4 : 8;
  if (p.buffer.byteLength !== n * bytes) return `buffer.byteLength = ${p.buffer.byteLength}: must be ${bytes} × ${n} (shape [${(p.shape as number[]).join(', ')}], ${p.dtype})`;
  return null;
}

interface Waiter {
  kind: PayloadKind;
  mb: number;
  resolve: (p: Payload) => void;
  reject: (e: Error) => void;
  /** Stops its timeout. */
  cancel: () => void;
}

export class Mailbox {
  private readonly items = new Map<string, Payload>();
  private readonly waiters = new Map<string, Waiter>();
  private failure: Error | null = null;
  /** Payloads taken so far (each a message from another worker: what a step's crossings count). */
  taken = 0;
  /** Told each payload as it lands, before any take (the transport uploads activations and gradients then). */
  onLand?: (p: Payload) => void;
  /** The takes' timeouts: a paused stream suspends them (stream-pause.ts). */
  readonly timers = new PausableTimers();

  constructor(
    rank: number,
    /** How messages name this worker: `rank 2`, or `replica 1, rank 2` in a data-parallel mesh. */
    private readonly who = `rank ${rank}`,
  ) {}

  /** `peer`: the sender's rank, or how to name it (`worker 3`). */
  attach(port: MessagePort, peer: number | string): void {
    const from = typeof peer === 'string' ? peer : `rank ${peer}`;
    port.onmessage = (e: MessageEvent) => {
      const err = checkPayload(e.data);
      if (err) {
        this.fail(new Error(`${this.who} got a malformed message from ${from}: ${err}`));
        return;
      }
      this.deliver({ ...(e.data as Payload), receivedAt: epochMs() });
    };
    port.onmessageerror = () => this.fail(new Error(`${this.who} could not deserialize a message from ${from}`));
    port.start();
  }

  deliver(p: Payload): void {
    this.onLand?.(p);
    const key = payloadKey(p.kind, p.stage, p.mb, p.step);
    const w = this.waiters.get(key);
    if (w) {
      this.waiters.delete(key);
      w.cancel();
      this.taken++;
      w.resolve(p);
    } else {
      this.items.set(key, p);
    }
  }

  /** Waits for a payload; `what` describes it for the timeout message. */
  take(kind: PayloadKind, stage: number, mb: number, step: number, timeoutMs: number, what: string): Promise<Payload> {
    if (this.failure) return Promise.reject(this.failure);
    const key = payloadKey(kind, stage, mb, step);
    const have = this.items.get(key);
    if (have) {
      this.items.delete(key);
      this.taken++;
      return Promise.resolve(have);
    }
    return new Promise<Payload>((resolve, reject) => {
      const cancel = this.timers.start(timeoutMs, () => {
        this.waiters.delete(key);
        reject(new Error(`${this.who} waited ${(timeoutMs / 1000).toFixed(1)} s for ${what} and it never came`));
      });
      this.waiters.set(key, { kind, mb, resolve, reject, cancel });
    });
  }

  /** Fails every pending and future take with `e`. */
  fail(e: Error): void {
    if (!this.failure) this.failure = e;
    for (const [k, w] of this.waiters) {
      w.cancel();
      w.reject(this.failure);
      this.waiters.delete(k);
    }
  }

  /** Ends the pending takes of activations and gradients of micro-batches `from` and later with `e` (a stream ended early: they will never come). */
  cancelFrom(from: number, e: Error): void {
    for (const [k, w] of this.waiters) {
      if ((w.kind !== 'act' && w.kind !== 'grad') || w.mb < from) continue;
      w.cancel();
      w.reject(e);
      this.waiters.delete(k);
    }
  }

  clear(): void {
    this.items.clear();
  }
}
