/**
 * The data plane of one worker: messages from peer ranks arrive on
 * MessagePorts (transferable ArrayBuffers, no copies of big arrays) and wait
 * here until the action that needs them takes them. A take that waits too long
 * fails with a message naming what it waited for, so a lost message ends the
 * run instead of hanging it.
 */
import { epochMs } from './clock.ts';

export type PayloadKind = 'act' | 'grad';

export interface Payload {
  kind: PayloadKind;
  /** The stage that consumes this payload. */
  stage: number;
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
  if (p.kind !== 'act' && p.kind !== 'grad') return `kind = ${JSON.stringify(p.kind)}: must be "act" or "grad"`;
  for (const f of ['stage', 'mb', 'step', 'from'] as const) {
    if (typeof p[f] !== 'number' || !Number.isInteger(p[f]) || (p[f] as number) < 0) return `${f} = ${JSON.stringify(p[f])}: must be a non-negative integer`;
  }
  if (!Array.isArray(p.shape) || p.shape.some((d) => !Number.isInteger(d) || d <= 0)) return `shape = ${JSON.stringify(p.shape)}: must be a list of positive integers`;
  if (p.dtype !== 'f32' && p.dtype !== 'f64') return `dtype = ${JSON.stringify(p.dtype)}: must be "f32" or "f64"`;
  if (!(p.buffer instanceof ArrayBuffer)) return `buffer: must be an ArrayBuffer`;
  const n = (p.shape as number[]).reduce((a, b) => a * b, 1);
  const bytes = p.dtype === 'f32' ? 4 : 8;
  if (p.buffer.byteLength !== n * bytes) return `buffer.byteLength = ${p.buffer.byteLength}: must be ${bytes} × ${n} (shape [${(p.shape as number[]).join(', ')}], ${p.dtype})`;
  return null;
}

interface Waiter {
  resolve: (p: Payload) => void;
  reject: (e: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

export class Mailbox {
  private readonly items = new Map<string, Payload>();
  private readonly waiters = new Map<string, Waiter>();
  private failure: Error | null = null;

  constructor(private readonly rank: number) {}

  attach(port: MessagePort, peer: number): void {
    port.onmessage = (e: MessageEvent) => {
      const err = checkPayload(e.data);
      if (err) {
        this.fail(new Error(`rank ${this.rank} got a malformed message from rank ${peer}: ${err}`));
        return;
      }
      this.deliver({ ...(e.data as Payload), receivedAt: epochMs() });
    };
    port.onmessageerror = () => this.fail(new Error(`rank ${this.rank} could not deserialize a message from rank ${peer}`));
    port.start();
  }

  deliver(p: Payload): void {
    const key = payloadKey(p.kind, p.stage, p.mb, p.step);
    const w = this.waiters.get(key);
    if (w) {
      this.waiters.delete(key);
      clearTimeout(w.timer);
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
      return Promise.resolve(have);
    }
    return new Promise<Payload>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(key);
        reject(new Error(`rank ${this.rank} waited ${(timeoutMs / 1000).toFixed(1)} s for ${what} and it never came`));
      }, timeoutMs);
      this.waiters.set(key, { resolve, reject, timer });
    });
  }

  /** Fails every pending and future take with `e`. */
  fail(e: Error): void {
    if (!this.failure) this.failure = e;
    for (const [k, w] of this.waiters) {
      clearTimeout(w.timer);
      w.reject(this.failure);
      this.waiters.delete(k);
    }
  }

  clear(): void {
    this.items.clear();
  }
}
