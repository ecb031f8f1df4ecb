/**
 * The simulator's data-parallel axis: replicas, the ring all-reduce's cost
 * against an explicit exchange-by-exchange play that really sums vectors, the
 * link each rank's stages share, overlap, the shared-device mesh against a
 * brute-force play of all dp × ranks workers, and bad input.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import { ringAllReduceTime } from './allreduce-cost.ts';
import { chunkBounds, ringNext } from './mesh.ts';
import { generateSchedule } from './registry.ts';
import { simulate, type CostModel } from './simulate.ts';
import { paramsArb } from './test-support.ts';
import { hasNextStage, hasPrevStage } from './copies.ts';
import { computeOnly, laneCount, laneOf, timelineStats } from './timeline.ts';
import type { Schedule } from './types.ts';

/**
 * A ring all-reduce played exchange by exchange, with data: n workers each hold
 * a vector of `len` numbers; in reduce-scatter step k worker i sends chunk
 * (i − k) mod n to worker i + 1, which adds it to its own; in all-gather step k
 * it sends chunk (i + 1 − k) mod n, which the receiver overwrites. A send starts
 * when the sender's previous send is done and it has received the chunk it
 * forwards (the previous step's message); it takes α + chunk bytes / β.
 * Returns every worker's final vector and when the last message arrived.
 */
function playRing(inputs: number[][], bytesPerElement: number, alpha: number, beta: number): { out: number[][]; time: number } {
  const n = inputs.length;
  const len = inputs[0].length;
  const bounds = chunkBounds(len, n);
  const data = inputs.map((v) => [...v]);
  const sendFree = new Array<number>(n).fill(0);
  let received = new Array<number>(n).fill(0); // when worker i received the previous step's message
  let last = 0;
  for (let step = 0; step < 2 * (n - 1); step++) {
    const rs = step < n - 1;
    const k = rs ? step : step - (n - 1);
    const messages: { to: number; chunk: number; values: number[]; at: number }[] = [];
    for (let i = 0; i < n; i++) {
      const chunk = (((rs ? i - k : i + 1 - k) % n) + n) % n;
      const [lo, hi] = [bounds[chunk], bounds[chunk + 1]];
      const start = Math.max(sendFree[i], received[i]);
      const at = start + alpha + ((hi - lo) * bytesPerElement) / beta;
      sendFree[i] = at;
      messages.push({ to: (i + 1) % n, chunk, values: data[i].slice(lo, hi), at });
    }
    const next = new Array<number>(n).fill(0);
    for (const msg of messages) {
      const lo = bounds[msg.chunk];
      msg.values.forEach((x, j) => {
        data[msg.to][lo + j] = rs ? data[msg.to][lo + j] + x : x;
      });
      next[msg.to] = msg.at;
      if (msg.at > last) last = msg.at;
    }
    received = next;
  }
  return { out: data, time: last };
}

describe('ring all-reduce cost', () => {
  it('equals an exchange-by-exchange play that sums the vectors, for n = 1 … 8 (n dividing the length)', () => {
    for (let n = 1; n <= 8; n++) {
      const len = 12 * n;
      const inputs = Array.from({ length: n }, (_, w) => Array.from({ length: len }, (_, j) => (w + 1) * 1000 + j));
      const sum = Array.from({ length: len }, (_, j) => inputs.reduce((acc, v) => acc + v[j], 0));
      for (const [alpha, beta] of [
        [0, 1],
        [0.25, 8],
        [3, 0.5],
      ]) {
        const r = playRing(inputs, 4, alpha, beta);
        for (const v of r.out) expect(v).toEqual(sum);
        expect(r.time).toBeCloseTo(ringAllReduceTime(len * 4, n, alpha, beta), 9);
        expect(r.time).toBeCloseTo(n === 1 ? 0 : 2 * (n - 1) * alpha + ((2 * (n - 1)) / n) * ((len * 4) / beta), 9);
      }
    }
  });

  it('with uneven chunks the play lies between the formula and the formula for the largest chunk', () => {
    for (const [n, len] of [
      [3, 10],
      [4, 7],
      [5, 3],
    ]) {
      const inputs = Array.from({ length: n }, (_, w) => Array.from({ length: len }, (_, j) => w * j + 1));
      const r = playRing(inputs, 2, 0.5, 4);
      const sum = Array.from({ length: len }, (_, j) => inputs.reduce((acc, v) => acc + v[j], 0));
      for (const v of r.out) expect(v).toEqual(sum);
      expect(r.time).toBeGreaterThanOrEqual(ringAllReduceTime(len * 2, n, 0.5, 4) - 1e-9);
      expect(r.time).toBeLessThanOrEqual(ringAllReduceTime(Math.ceil(len / n) * n * 2, n, 0.5, 4) + 1e-9);
    }
  });
});

describe('simulate with dp replicas', () => {
  it('dp = 1 without all-reduce or gradient bytes is the plain simulation, unchanged', () => {
    const s = generateSchedule('zb-h1', 4, 8);
    expect(simulate(s, { dp: 1, latency: 0.5 })).toEqual(simulate(s, { latency: 0.5 }));
  });

  it('every replica plays the pipeline: dp × ranks lanes, the same compute on each, bubble and memory of one pipeline', () => {
    const s = generateSchedule('1f1b', 3, 6);
    const one = simulate(s);
    const r = simulate(s, { dp: 4 });
    expect(r.timeline.dp).toBe(4);
    expect(laneCount(r.timeline)).toBe(12);
    for (let d = 0; d < 4; d++) {
      const mine = r.timeline.intervals.filter((iv) => (iv.replica ?? 0) === d && iv.op !== 'collective').map((iv) => ({ ...iv, replica: undefined }));
      expect(mine).toEqual(one.timeline.intervals.map((iv) => ({ ...iv, replica: undefined })));
    }
    const lanes = new Set(r.timeline.intervals.map((iv) => laneOf(r.timeline, iv)));
    expect(lanes.size).toBe(12);
    expect(r.bubble).toBe(one.bubble);
    expect(r.memory).toEqual(one.memory);
    expect(r.busy).toEqual([...one.busy, ...one.busy, ...one.busy, ...one.busy]);
    // Free collectives: the step is the pipeline's.
    expect(r.makespan).toBe(one.makespan);
    expect(r.dp?.exposedAllReduce).toBe(0);
  });

  it('draws 2(dp − 1) chunk exchanges per stage on every worker of its group, each bytes/dp to the ring successor', () => {
    const s = generateSchedule('interleaved-1f1b', 2, 4, 2);
    const dp = 3;
    const r = simulate(s, { dp, gradBytes: [30, 60, 90, 120], allReduce: { latency: 0.5, bandwidth: 10 } });
    const coll = r.timeline.intervals.filter((iv) => iv.op === 'collective');
    expect(coll).toHaveLength(4 * dp * 2 * (dp - 1));
    for (let stage = 0; stage < 4; stage++) {
      const rank = s.stageToRank[stage];
      const mine = coll.filter((iv) => iv.stage === stage);
      const bytes = [30, 60, 90, 120][stage];
      const each = 0.5 + bytes / dp / 10;
      expect(r.dp?.allReduceTime[stage]).toBeCloseTo(2 * (dp - 1) * each, 12);
      for (const iv of mine) {
        expect(iv.rank).toBe(rank);
        expect(iv.bytes).toBeCloseTo(bytes / dp, 12);
        expect(iv.end - iv.start).toBeCloseTo(each, 12);
        expect(iv.coll).toBe(iv.mb < dp - 1 ? 'reduce-scatter' : 'all-gather');
        const w = (iv.replica ?? 0) * s.ranks + rank;
        expect(iv.peer).toBe(ringNext({ dp, ranks: s.ranks, tp: 1 }, w));
      }
      const start = Math.min(...mine.map((iv) => iv.start));
      const end = Math.max(...mine.map((iv) => iv.end));
      expect(start).toBeCloseTo(r.dp?.allReduceStart[stage] ?? NaN, 12);
      expect(end - start).toBeCloseTo(r.dp?.allReduceTime[stage] ?? NaN, 12);
    }
  });

  it('with overlap a stage starts when its last backward ends; a rank’s stages share its link; without, all start after the last compute', () => {
    // 1F1B, p = 2, m = 2, F = 1, B = 2 (by hand in simulate.test.ts): rank 1's last B ends at 7, rank 0's at 9.
    const s = generateSchedule('1f1b', 2, 2);
    const ar = (overlap: boolean): CostModel => ({ dp: 2, gradBytes: 8, allReduce: { latency: 1, bandwidth: 4, overlap } });
    // One exchange: 1 + (8/2)/4 = 2; two exchanges: A = 4.
    const on = simulate(s, ar(true));
    expect(on.dp?.allReduceStart).toEqual([9, 7]);
    expect(on.dp?.allReduceEnd).toEqual([13, 11]);
    expect(on.makespan).toBe(13);
    expect(on.dp?.computeMakespan).toBe(9);
    expect(on.dp?.exposedAllReduce).toBe(4);
    expect(on.dp?.allReduceShare).toBeCloseTo(4 / 13, 15);
    const off = simulate(s, ar(false));
    expect(off.dp?.allReduceStart).toEqual([9, 9]);
    expect(off.makespan).toBe(13);
    // ZB-V, p = 1: one rank holds both stages; W of stage 1 ends first, so its all-reduce goes first and stage 0's waits for the link.
    const v = generateSchedule('zb-v', 1, 1);
    const r = simulate(v, { dp: 2, gradBytes: 8, allReduce: { latency: 1, bandwidth: 4 } });
    // Order 0F0 1F0 1I0 1W0 0I0 0W0 with F = I = W = 1: stage 1 ready at 4, stage 0 at 6.
    expect(r.dp?.allReduceStart).toEqual([8, 4]);
    expect(r.makespan).toBe(12);
    // Without overlap both wait for 6 and go one after the other.
    const r2 = simulate(v, { dp: 2, gradBytes: 8, allReduce: { latency: 1, bandwidth: 4, overlap: false } });
    expect(r2.makespan).toBe(14);
  });

  it('bubble stays the compute-only pipeline bubble; makespan includes the collectives', () => {
    const s = generateSchedule('zb-h1', 4, 8);
    const r = simulate(s, { dp: 2, gradBytes: 100, allReduce: { latency: 0.1, bandwidth: 20 } });
    const compute = timelineStats(computeOnly(r.timeline));
    expect(r.bubble).toBeCloseTo(compute.bubble, 12);
    expect(r.makespan).toBeCloseTo((r.dp?.computeMakespan ?? 0) + (r.dp?.allReduceTime[0] ?? 0), 12);
    expect(r.idle.every((x, i) => Math.abs(x + r.busy[i] - r.makespan) < 1e-9)).toBe(true);
  });
});

/**
 * A brute-force shared-device play of a whole mesh: dp × ranks workers, worker
 * (d, r) running order[r] on replica d's own micro-batches; all share `lanes`
 * (n computing at once each run at min(1, lanes / n)). Written without
 * shared-device.ts: an event loop over every worker of every replica.
 */
function playMesh(s: Schedule, dp: number, lanes: number, dur: (op: string) => number, latency: number): number {
  const W = dp * s.ranks;
  const done = new Map<string, number>();
  const key = (d: number, slot: string, stage: number, mb: number) => `${d}/${slot}/${stage}/${mb}`;
  const ptr = new Array<number>(W).fill(0);
  const free = new Array<number>(W).fill(0);
  const left = new Array<number>(W).fill(0);
  const running = new Array<boolean>(W).fill(false);
  const readyAt = (w: number): number => {
    const d = Math.floor(w / s.ranks);
    const r = w % s.ranks;
    const a = s.order[r][ptr[w]];
    let t = free[w];
    const need = (k: string, fromStage: number): boolean => {
      const f = done.get(k);
      if (f === undefined) return false;
      const arrive = s.stageToRank[fromStage] === r ? f : f + latency;
      t = Math.max(t, arrive);
      return true;
    };
    if (a.op === 'F') {
      if (hasPrevStage(s, a.stage) && !need(key(d, 'F', a.stage - 1, a.mb), a.stage - 1)) return NaN;
    } else if (a.op === 'W') {
      if (!need(key(d, 'G', a.stage, a.mb), a.stage)) return NaN;
    } else {
      if (!need(key(d, 'F', a.stage, a.mb), a.stage)) return NaN;
      if (hasNextStage(s, a.stage) && !need(key(d, 'G', a.stage + 1, a.mb), a.stage + 1)) return NaN;
    }
    return t;
  };
  let now = 0;
  let remaining = dp * s.order.reduce((n, l) => n + l.length, 0);
  while (remaining > 0) {
    let nextReady = Infinity;
    for (let w = 0; w < W; w++) {
      if (running[w] || ptr[w] >= s.order[w % s.ranks].length) continue;
      const t = readyAt(w);
      if (Number.isNaN(t)) continue;
      if (t <= now + 1e-12) {
        running[w] = true;
        left[w] = dur(s.order[w % s.ranks][ptr[w]].op);
      } else nextReady = Math.min(nextReady, t);
    }
    const busy = running.filter(Boolean).length;
    const rate = Math.min(1, lanes / busy);
    const minLeft = Math.min(...left.filter((_, w) => running[w]));
    const dt = Math.min(busy > 0 ? minLeft / rate : Infinity, nextReady - now);
    now += dt;
    for (let w = 0; w < W; w++) {
      if (!running[w]) continue;
      left[w] -= rate * dt;
      if (left[w] <= 1e-9) {
        const a = s.order[w % s.ranks][ptr[w]];
        const d = Math.floor(w / s.ranks);
        if (a.op !== 'W') done.set(key(d, a.op === 'F' ? 'F' : 'G', a.stage, a.mb), now);
        running[w] = false;
        free[w] = now;
        ptr[w]++;
        remaining--;
      }
    }
  }
  return now;
}

describe('a shared device with dp replicas', () => {
  it('plays like one pipeline with lanes / dp: equal to a brute-force play of all dp × ranks workers (random schedules)', () => {
    fc.assert(
      fc.property(paramsArb(4, 6), fc.integer({ min: 1, max: 4 }), fc.constantFrom(0.7, 1, 1.5, 2.5, 4), fc.constantFrom(0, 0.25), ({ name, p, m, v }, dp, lanes, latency) => {
        const s = generateSchedule(name, p, m, v);
        const costs = { F: 1, B: 2, I: 1, W: 1 };
        const r = simulate(s, { ...costs, dp, lanes, latency });
        const brute = playMesh(s, dp, lanes, (op) => costs[op as keyof typeof costs], latency);
        // The compute's step (DualPipe then sums its copies over the link, simulate-copies.test.ts).
        expect(r.copySum?.before ?? r.makespan).toBeCloseTo(brute, 6);
      }),
      { numRuns: 60, seed: 18 },
    );
  });
});

describe('bad dp input is refused by field, value and rule', () => {
  const s = generateSchedule('1f1b', 2, 2);
  const bad: [CostModel, string][] = [
    [{ dp: 0 }, 'costs.dp = 0: must be a whole number between 1 and'],
    [{ dp: 1.5 }, 'costs.dp = 1.5'],
    [{ gradBytes: -1 }, 'costs.gradBytes = -1: must be at least 0'],
    [{ gradBytes: [1, 2, 3] }, 'costs.gradBytes = [1, 2, 3]: must be a number or a list of 2 numbers'],
    [{ allReduce: { latency: NaN, bandwidth: 1 } }, 'costs.allReduce.latency = NaN'],
    [{ allReduce: { latency: 0, bandwidth: 0 } }, 'costs.allReduce.bandwidth = 0: must be a number greater than 0'],
    [{ allReduce: { latency: 0, bandwidth: 1, overlap: 'yes' as unknown as boolean } }, 'costs.allReduce.overlap = "yes": must be true or false'],
    [{ allReduce: { latency: 0, bandwidth: 1, speed: 2 } as unknown as CostModel['allReduce'] }, 'costs.allReduce.speed = 2: is not a field'],
  ];
  for (const [costs, message] of bad) {
    it(message, () => {
      expect(() => simulate(s, costs)).toThrow(ConfigError);
      expect(() => simulate(s, costs)).toThrow(message);
    });
  }
});
