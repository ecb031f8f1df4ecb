/**
 * A RingLink over MessagePorts: chunks go to the ring successor's port as
 * transferable buffers (never copies), and the predecessor's arrive through
 * this worker's Mailbox, keyed by stage, exchange and step. A chunk that does
 * not come within the receive timeout fails with a message naming the
 * collective, the stage, the exchange and the worker it waited for.
 */
import type { RingLink, Vector } from './ring-allreduce.ts';
import type { Mailbox, Payload } from './mailbox.ts';
import { epochMs } from './clock.ts';

export interface PortRingOptions {
  /** This worker's position in the ring (its replica) and the ring's size (dp). */
  position: number;
  size: number;
  /** This worker's index and its ring neighbours' (mesh.ts worker order), for messages. */
  worker: number;
  next: number;
  prev: number;
  /** The port to the successor. */
  toNext: MessagePort;
  /** The mailbox the predecessor's port delivers into. */
  mailbox: Mailbox;
  stage: number;
  step: number;
  recvTimeoutMs: number;
  /** What the collective is, for messages: e.g. `the all-reduce of stage 1`. */
  what: string;
  /** The messages' kind: 'ring' (a dp collective, the default) or 'copy' (the sum over a stage's model copies). */
  kind?: 'ring' | 'copy';
  /** Posts a message, transferring its buffer (fault injection wraps it). */
  post?: (port: MessagePort, msg: Payload) => void;
}

export function portRing(o: PortRingOptions, hooks: Pick<RingLink, 'onExchange' | 'beforeExchange'> = {}): RingLink {
  const post = o.post ?? ((port, msg) => port.postMessage(msg, [msg.buffer]));
  const kind = o.kind ?? 'ring';
  return {
    position: o.position,
    size: o.size,
    ...hooks,
    send(exchange: number, chunk: Vector) {
      const buffer = (chunk.byteLength === chunk.buffer.byteLength ? chunk.buffer : chunk.slice().buffer) as ArrayBuffer;
      post(o.toNext, {
        kind,
        stage: o.stage,
        mb: exchange,
        step: o.step,
        shape: [chunk.length],
        dtype: chunk instanceof Float64Array ? 'f64' : 'f32',
        buffer,
        sentAt: epochMs(),
        from: o.worker,
      });
    },
    async receive(exchange: number): Promise<Vector> {
      // A stage's later collectives of a step (ZeRO-2/3) number their exchanges on from the earlier ones' (ring-allreduce.ts shiftedRing).
      const per = 2 * (o.size - 1);
      const nth = Math.floor(exchange / per);
      const what = `chunk ${(exchange % per) + 1} of ${per} of ${o.what}${nth > 0 ? ` (collective ${nth + 1} of the step)` : ''} (step ${o.step}) from worker ${o.prev}`;
      const p = await o.mailbox.take(kind, o.stage, exchange, o.step, o.recvTimeoutMs, what);
      return p.dtype === 'f64' ? new Float64Array(p.buffer) : new Float32Array(p.buffer);
    },
  };
}
