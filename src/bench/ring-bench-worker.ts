/**
 * A worker of the all-reduce micro-benchmark: one member of a ring of dp
 * workers that runs the runtime's own ring all-reduce (ring-allreduce.ts over
 * ring-link.ts and a Mailbox, as a stage worker does at a step's flush) on
 * vectors of a given length, and reports each repetition's time. No GPU: it
 * measures the MessageChannels between workers alone.
 */
import { Mailbox } from '../runtime/mailbox.ts';
import { allReduce } from '../runtime/ring-allreduce.ts';
import { portRing } from '../runtime/ring-link.ts';
import { epochMs } from '../runtime/clock.ts';

export type RingBenchMessage =
  | { type: 'init'; position: number; size: number; toNext: MessagePort; fromPrev: MessagePort }
  | { type: 'run'; elements: number; repeats: number; round: number };

export type RingBenchReply = { type: 'ready' } | { type: 'times'; ms: number[]; correct: boolean } | { type: 'error'; message: string };

let ring: { position: number; size: number; toNext: MessagePort; mailbox: Mailbox } | null = null;

function reply(r: RingBenchReply): void {
  (self as unknown as Worker).postMessage(r);
}

self.onmessage = async (e: MessageEvent<RingBenchMessage>) => {
  const m = e.data;
  try {
    if (m.type === 'init') {
      const mailbox = new Mailbox(m.position, `ring worker ${m.position}`);
      mailbox.attach(m.fromPrev, `ring worker ${(m.position + m.size - 1) % m.size}`);
      if (m.toNext !== m.fromPrev) mailbox.attach(m.toNext, `ring worker ${(m.position + 1) % m.size}`);
      ring = { position: m.position, size: m.size, toNext: m.toNext, mailbox };
      reply({ type: 'ready' });
      return;
    }
    if (!ring) throw new Error('the ring worker was not initialised');
    const { position, size, toNext, mailbox } = ring;
    const ms: number[] = [];
    let correct = true;
    // Every worker contributes position + 1: the sum is size · (size + 1) / 2 everywhere.
    const want = (size * (size + 1)) / 2;
    for (let i = 0; i < m.repeats; i++) {
      const x = new Float32Array(m.elements).fill(position + 1);
      const link = portRing({ position, size, worker: position, next: (position + 1) % size, prev: (position + size - 1) % size, toNext, mailbox, stage: 0, step: m.round * 100_000 + i, recvTimeoutMs: 30_000, what: 'the benchmark all-reduce' });
      const t0 = epochMs();
      await allReduce(link, x);
      ms.push(epochMs() - t0);
      if (x[0] !== want || x[x.length - 1] !== want) correct = false;
    }
    reply({ type: 'times', ms, correct });
  } catch (err) {
    reply({ type: 'error', message: err instanceof Error ? err.message : String(err) });
  }
};
