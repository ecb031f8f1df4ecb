/**
 * A worker of the collective micro-benchmarks (allreduce-bench.ts): no GPU, it
 * measures the MessageChannels between workers alone, running the runtime's
 * own collective code on float32 vectors of a given length and reporting each
 * repetition's time.
 *
 * - 'ring': one member of a ring of dp workers running the ring all-reduce
 *   (ring-allreduce.ts over ring-link.ts and a Mailbox, as a stage worker does
 *   at a step's flush).
 * - 'tp': one member of a tp group of t workers, a port to each other member,
 *   running the tp all-reduce (tp-collective.ts's TpChannel: one round of direct
 *   exchange, summed in member order, as a tp layer does between its kernels)
 *   over a host backend whose tensors are the float32 vectors themselves (the
 *   runtime's GPU readback and upload around it are not timed here).
 *
 * A repetition may run several collectives back to back (`inner`); its time is their mean.
 */
import { Mailbox } from '../runtime/comm/index.ts';
import { allReduce } from '../runtime/comm/index.ts';
import { portRing } from '../runtime/comm/index.ts';
import { epochMs } from '../runtime/comm/index.ts';
import { TpChannel, type TpBackend } from '../runtime/comm/index.ts';
import { StepLog } from '../runtime/comm/index.ts';
import type { Tensor } from '../nn/backend.ts';

export type RingBenchMessage =
  | { type: 'init'; mode: 'ring'; position: number; size: number; toNext: MessagePort; fromPrev: MessagePort }
  | { type: 'init'; mode: 'tp'; position: number; size: number; ports: { member: number; port: MessagePort }[] }
  | { type: 'run'; elements: number; repeats: number; round: number; inner?: number };

export type RingBenchReply = { type: 'ready' } | { type: 'times'; ms: number[]; correct: boolean } | { type: 'error'; message: string };

type Member =
  | { mode: 'ring'; position: number; size: number; toNext: MessagePort; mailbox: Mailbox }
  | { mode: 'tp'; position: number; size: number; channel: TpChannel };

let member: Member | null = null;

function reply(r: RingBenchReply): void {
  (self as unknown as Worker).postMessage(r);
}

/** A tensor that is its float32 vector: what TpChannel reads, sums and builds, with no device behind it. */
interface HostTensor extends Tensor {
  data: Float32Array;
}

const host = (data: Float32Array, shape: readonly number[]): HostTensor => ({ shape: [...shape], dtype: 'f32', size: data.length, data });

/** The calls TpChannel makes of its backend, on host vectors (nothing is ever queued: a read waits for nothing). */
const hostBackend: TpBackend = {
  tensor: (data: ArrayLike<number>, shape: readonly number[]) => host(data instanceof Float32Array ? data : Float32Array.from(data), shape),
  zeros: (shape: readonly number[]) => host(new Float32Array(shape.reduce((a, b) => a * b, 1)), shape),
  read: async (t: Tensor) => (t as HostTensor).data,
  dispose: () => {},
};

/** One collective: sums `x` (position + 1 everywhere) over the group; whether every element came out the sum. */
async function once(m: Member, x: Float32Array, step: number): Promise<boolean> {
  const want = (m.size * (m.size + 1)) / 2;
  const elements = x.length;
  if (m.mode === 'ring') {
    const { position, size, toNext, mailbox } = m;
    const link = portRing({ position, size, worker: position, next: (position + 1) % size, prev: (position + size - 1) % size, toNext, mailbox, stage: 0, step, recvTimeoutMs: 30_000, what: 'the benchmark all-reduce' });
    await allReduce(link, x);
    return x[0] === want && x[x.length - 1] === want;
  }
  const log = new StepLog(m.position, step, undefined, m.position);
  m.channel.enter({ stage: 0, op: 'F', mb: 0 }, log);
  const out = (await m.channel.groupFor(0).allReduce(host(x, [1, elements]))) as HostTensor;
  m.channel.leave();
  return out.data[0] === want && out.data[elements - 1] === want;
}

self.onmessage = async (e: MessageEvent<RingBenchMessage>) => {
  const m = e.data;
  try {
    if (m.type === 'init') {
      const mailbox = new Mailbox(m.position, `bench worker ${m.position}`);
      if (m.mode === 'ring') {
        mailbox.attach(m.fromPrev, `ring worker ${(m.position + m.size - 1) % m.size}`);
        if (m.toNext !== m.fromPrev) mailbox.attach(m.toNext, `ring worker ${(m.position + 1) % m.size}`);
        member = { mode: 'ring', position: m.position, size: m.size, toNext: m.toNext, mailbox };
      } else {
        const ports = new Map<number, MessagePort>();
        for (const { member: j, port } of m.ports) {
          mailbox.attach(port, `tp worker ${j}`);
          ports.set(j, port);
        }
        const workers = Array.from({ length: m.size }, (_, j) => j);
        member = { mode: 'tp', position: m.position, size: m.size, channel: new TpChannel({ be: hostBackend, index: m.position, size: m.size, workers, ports, mailbox, recvTimeoutMs: 30_000 }) };
      }
      reply({ type: 'ready' });
      return;
    }
    if (!member) throw new Error('the benchmark worker was not initialised');
    const ms: number[] = [];
    let correct = true;
    // A repetition is `inner` collectives back to back (as a stage's layers issue them), timed together: the clock's
    // grain (0.1 ms in a page that is not cross-origin isolated) is then a small part of a small message's time.
    const inner = m.inner ?? 1;
    for (let i = 0; i < m.repeats; i++) {
      // The vectors are made before the clock starts (the ring sums in place).
      const xs = Array.from({ length: inner }, () => new Float32Array(m.elements).fill(member!.position + 1));
      const t0 = epochMs();
      for (let k = 0; k < inner; k++) correct = (await once(member, xs[k], m.round * 100_000 + i * inner + k)) && correct;
      ms.push((epochMs() - t0) / inner);
    }
    reply({ type: 'times', ms, correct });
  } catch (err) {
    reply({ type: 'error', message: err instanceof Error ? err.message : String(err) });
  }
};
