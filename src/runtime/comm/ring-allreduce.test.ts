/**
 * The ring collectives over real MessageChannels (one Mailbox per worker, as in
 * a run), against a float64 sum computed here, with awkward sizes: lengths not
 * divisible by dp, one element, fewer elements than workers, dp = 3.
 */
import { describe, expect, it } from 'vitest';
import { chunkBounds } from '../../schedule/mesh.ts';
import { Mailbox } from './mailbox.ts';
import { allGather, allReduce, ownedChunk, reduceScatter, type RingLink, type Vector } from './ring-allreduce.ts';
import { portRing } from './ring-link.ts';
import { Rng } from '../../util/rng.ts';

/** n workers in a ring: worker i's port to i + 1, its mailbox fed by i − 1. */
function ringOf(n: number, stage = 0, step = 0): { links: RingLink[]; close(): void } {
  const boxes = Array.from({ length: n }, (_, i) => new Mailbox(i));
  const toNext: MessagePort[] = [];
  const ports: MessagePort[] = [];
  for (let i = 0; i < n; i++) {
    const ch = new MessageChannel();
    toNext.push(ch.port1);
    boxes[(i + 1) % n].attach(ch.port2, i);
    ports.push(ch.port1, ch.port2);
  }
  const links = boxes.map((mailbox, i) =>
    portRing({ position: i, size: n, worker: i, next: (i + 1) % n, prev: (i + n - 1) % n, toNext: toNext[i], mailbox, stage, step, recvTimeoutMs: 5000, what: `the all-reduce of stage ${stage}` }),
  );
  return { links, close: () => ports.forEach((p) => p.close()) };
}

function randomVectors(n: number, len: number, seed: number, f64: boolean): Vector[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => {
    const v = f64 ? new Float64Array(len) : new Float32Array(len);
    for (let k = 0; k < len; k++) v[k] = rng.normal() * 10 ** Math.floor(rng.next() * 4 - 2);
    return v;
  });
}

function float64Sum(xs: Vector[]): Float64Array {
  const out = new Float64Array(xs[0].length);
  for (const x of xs) for (let k = 0; k < x.length; k++) out[k] += x[k];
  return out;
}

describe('ring all-reduce over MessageChannels', () => {
  const cases: [number, number][] = [
    [2, 1],
    [2, 7],
    [3, 1],
    [3, 2],
    [3, 10],
    [3, 1001],
    [4, 3],
    [4, 64],
    [5, 17],
  ];
  for (const [n, len] of cases) {
    it(`dp = ${n}, ${len} element${len === 1 ? '' : 's'}: every worker ends with the float64 sum (f64 exactly up to rounding, f32 within 1e-6)`, async () => {
      for (const f64 of [true, false]) {
        const xs = randomVectors(n, len, 7 * n + len, f64);
        const want = float64Sum(xs);
        const { links, close } = ringOf(n);
        await Promise.all(links.map((l, i) => allReduce(l, xs[i])));
        close();
        for (const x of xs) {
          for (let k = 0; k < len; k++) {
            const tol = (f64 ? 1e-13 : 1e-6) * Math.max(1, ...xs.map((v) => Math.abs(v[k])));
            expect(Math.abs(x[k] - want[k])).toBeLessThanOrEqual(tol * n);
          }
        }
        // Every replica holds the same bits (the all-gather copies the owner's sum).
        for (const x of xs.slice(1)) expect(Array.from(x)).toEqual(Array.from(xs[0]));
      }
    });
  }

  it('reduce-scatter leaves worker i the sum of chunk (i + 1) mod n; all-gather then spreads the owners chunks unchanged', async () => {
    const n = 3, len = 10;
    const xs = randomVectors(n, len, 3, true);
    const want = float64Sum(xs);
    const { links, close } = ringOf(n);
    const owned = await Promise.all(links.map((l, i) => reduceScatter(l, xs[i])));
    const bounds = chunkBounds(len, n);
    owned.forEach((c, i) => {
      expect(c).toBe(ownedChunk(i, n));
      for (let k = bounds[c]; k < bounds[c + 1]; k++) expect(xs[i][k]).toBeCloseTo(want[k], 12);
    });
    // Put a marker in each owned chunk: the all-gather must carry exactly it.
    owned.forEach((c, i) => xs[i].fill(100 + c, bounds[c], bounds[c + 1]));
    await Promise.all(links.map((l, i) => allGather(l, xs[i])));
    close();
    for (const x of xs) for (let c = 0; c < n; c++) for (let k = bounds[c]; k < bounds[c + 1]; k++) expect(x[k]).toBe(100 + c);
  });

  it('each worker sends 2(n − 1) chunks of about 1/n of the vector, only to its successor', async () => {
    const n = 4, len = 103;
    const xs = randomVectors(n, len, 5, false);
    const { links, close } = ringOf(n);
    const sent = links.map(() => [] as number[]);
    const wrapped = links.map((l, i): RingLink => ({ ...l, send: l.send, receive: l.receive, onExchange: (_k, _e, _a, _b, bytes) => sent[i].push(bytes) }));
    await Promise.all(wrapped.map((l, i) => allReduce(l, xs[i])));
    close();
    const bounds = chunkBounds(len, n);
    for (const s of sent) {
      expect(s.length).toBe(2 * (n - 1));
      for (const b of s) expect([bounds[1] - bounds[0], bounds[n] - bounds[n - 1]].map((c) => c * 4)).toContain(b);
    }
  });

  it('a chunk that never comes ends the wait with a message naming the collective, the stage, the exchange and the worker', async () => {
    const { links, close } = ringOf(2, 1, 3);
    const lone = portRing({ ...{ position: 0, size: 2, worker: 0, next: 1, prev: 1 }, toNext: new MessageChannel().port1, mailbox: new Mailbox(0), stage: 1, step: 3, recvTimeoutMs: 50, what: 'the all-reduce of stage 1' });
    await expect(allReduce(lone, new Float32Array(4))).rejects.toThrow(/waited 0\.1 s for chunk 1 of 2 of the all-reduce of stage 1 \(step 3\) from worker 1/);
    close();
    expect(links.length).toBe(2);
  });
});
