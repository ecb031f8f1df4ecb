import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../util/errors.ts';
import { defaultSimParams, simParamsFromQuery, simParamsToQuery, simTpCollectivesPerMicrobatch, validateSimParams, type SimParams } from './sim-params.ts';
import { runSimulation } from '../simulation.ts';

function refusal(p: Partial<SimParams>): string {
  try {
    validateSimParams({ ...defaultSimParams(), ...p });
  } catch (e) {
    if (e instanceof ConfigError) return e.message;
    throw e;
  }
  return 'accepted';
}

describe('Simulate at scale: data parallel fields', () => {
  it('refuses bad dp values by field, value and rule', () => {
    expect(refusal({ dp: 0 })).toMatch(/^sim\.dp = 0: /);
    expect(refusal({ dp: 2.5 })).toMatch(/^sim\.dp = 2\.5: /);
    expect(refusal({ dp: 64, ranks: 128 })).toBe('sim.dp = 64: dp × ranks = 64 × 128 = 8192 workers; the page simulates at most 4096');
    expect(refusal({ dp: 2, gradMB: -1 })).toBe('sim.gradMB = -1: must be at least 0');
    expect(refusal({ dp: 2, arLatencyMs: Number.NaN })).toBe('sim.arLatencyMs = NaN: must be a finite number');
    expect(refusal({ dp: 2, arBandwidthMBs: 0 })).toBe('sim.arBandwidthMBs = 0: must be greater than 0');
    expect(refusal({ zero: 1 })).toMatch(/^sim\.zero = 1: ZeRO-1 .* needs dp ≥ 2/);
    expect(refusal({ dp: 32, ranks: 128, microbatches: 512 })).toMatch(/^sim\.dp = 32: .* actions at dp 32, 128 ranks, 512 micro-batches; the page draws at most 2000000 \(fewer ranks or micro-batches fit\)$/);
    expect(refusal({ dp: 8, ranks: 64, microbatches: 512 })).toBe('accepted');
  });

  it('round-trips through the URL and names a bad link value', () => {
    const p: SimParams = { ...defaultSimParams(), dp: 8, gradMB: 40, arLatencyMs: 0.5, arBandwidthMBs: 250, overlap: false, zero: 1 };
    const q = new URLSearchParams();
    simParamsToQuery(p, q);
    const back = simParamsFromQuery(q);
    expect(back.errors).toEqual([]);
    expect(back.params).toEqual(p);
    const bad = simParamsFromQuery(new URLSearchParams('sim.dp=4&sim.overlap=maybe&sim.arBandwidthMBs=-3'));
    expect(bad.errors.map((e) => e.message)).toEqual(['sim.arBandwidthMBs = -3: must be greater than 0', 'sim.overlap = "maybe": must be true or false']);
    expect(bad.params.dp).toBe(4);
    expect(bad.params.overlap).toBe(true);
  });

  it('a default link writes no dp keys (older links unchanged)', () => {
    const q = new URLSearchParams();
    simParamsToQuery(defaultSimParams(), q);
    expect([...q.keys()].filter((k) => /dp|grad|ar|overlap|zero/.test(k))).toEqual([]);
  });

  it('8 × 64 workers: the step is the pipeline plus the ring all-reduce, worked by hand', () => {
    // 1F1B, p = 64, m = 512, F = 1, B = 2: T = 3(m + p − 1) = 1725 units.
    // Ring over 8 replicas of 100 MB at 1000 MB/s (1e6 bytes per ms = per unit), α = 0.01:
    // A = 2·7·0.01 + 2·7/8 · 1e8 / 1e6 = 0.14 + 175 = 175.14; with overlap the last stage's all-reduce
    // starts with its last backward and the first rank's ends last: step = T + A.
    const o = runSimulation({ ...defaultSimParams(), dp: 8 });
    expect(o.result.timeline.dp).toBe(8);
    expect(o.result.busy.length).toBe(512);
    expect(o.result.dp?.allReduceTime[0]).toBeCloseTo(175.14, 9);
    expect(o.result.makespan).toBeCloseTo(1725 + 175.14, 9);
    expect(o.result.dp?.allReduceShare).toBeCloseTo(175.14 / 1900.14, 9);
    expect(o.closedMesh?.step).toBeCloseTo(1900.14, 9);
    // Without overlap every stage waits for the last compute: the same here (one stage per rank), T + A.
    const noOverlap = runSimulation({ ...defaultSimParams(), dp: 8, overlap: false });
    expect(noOverlap.result.makespan).toBeCloseTo(1900.14, 9);
    // ZeRO-1 moves the same volume.
    expect(runSimulation({ ...defaultSimParams(), dp: 8, zero: 1 }).result.makespan).toBeCloseTo(1900.14, 9);
  });

  it('dp = 1 leaves the pipeline alone', () => {
    const o = runSimulation(defaultSimParams());
    expect(o.result.dp).toBeUndefined();
    expect(o.result.makespan).toBe(1725);
    expect(o.closedMesh).toBeNull();
  });
});

describe('Simulate at scale: ZeRO stages and tensor parallelism', () => {
  it('refuses bad ZeRO and tp values by field, value and rule', () => {
    expect(refusal({ dp: 2, zero: 4 as SimParams['zero'] })).toBe('sim.zero = 4: must be a ZeRO stage 0, 1, 2 or 3');
    expect(refusal({ zero: 3 })).toBe('sim.zero = 3: ZeRO-3 shards across data-parallel replicas; it needs dp ≥ 2 (dp = 1)');
    expect(refusal({ dp: 2, zero: 2, reshard: 'microbatch' })).toBe("sim.reshard = \"microbatch\": re-gathering weights for every action is ZeRO-3's; it needs zero = 3 (zero = 2)");
    expect(refusal({ dp: 2, zero: 3, reshard: 'action' as SimParams['reshard'] })).toBe('sim.reshard = "action": must be one of step, microbatch');
    expect(refusal({ tp: 0 })).toMatch(/^sim\.tp = 0: /);
    expect(refusal({ tp: 128 })).toMatch(/^sim\.tp = 128: /);
    expect(refusal({ tp: 16, dp: 8, ranks: 64 })).toBe('sim.tp = 16: dp × ranks × tp = 8 × 64 × 16 = 8192 workers; the page simulates at most 4096');
    expect(refusal({ tp: 2, schedule: 'interleaved-1f1b', ranks: 4, microbatches: 8, virtual: 2, tpLayers: 3 })).toBe("sim.tpLayers = 3: must be a multiple of the stages a rank's share of the model is cut into (2), so every stage holds whole layers");
    expect(refusal({ tp: 2, tpBandwidthMBs: 0 })).toBe('sim.tpBandwidthMBs = 0: must be greater than 0');
    expect(refusal({ tp: 2, tpActKB: -1 })).toBe('sim.tpActKB = -1: must be at least 0');
    expect(refusal({ tp: 4, ranks: 64, microbatches: 512 })).toMatch(/^sim\.tp = 4: .* actions at 64 ranks, 512 micro-batches, tp 4; the page draws at most 2000000 \(fewer ranks or micro-batches fit\)$/);
    expect(refusal({ tp: 2, ranks: 16, microbatches: 64 })).toBe('accepted');
  });

  it('round-trips ZeRO-3 per action and tp through the URL; an older link\'s sim.zero=true is ZeRO-1', () => {
    const p: SimParams = { ...defaultSimParams(), ranks: 8, microbatches: 16, dp: 2, zero: 3, reshard: 'microbatch', tp: 4, tpLayers: 8, tpActKB: 512, tpLatencyMs: 0.02, tpBandwidthMBs: 5000 };
    const q = new URLSearchParams();
    simParamsToQuery(p, q);
    const back = simParamsFromQuery(q);
    expect(back.errors).toEqual([]);
    expect(back.params).toEqual(p);
    const old = simParamsFromQuery(new URLSearchParams('sim.dp=4&sim.zero=true'));
    expect(old.errors).toEqual([]);
    expect(old.params.zero).toBe(1);
    expect(simParamsFromQuery(new URLSearchParams('sim.dp=4&sim.zero=false')).params.zero).toBe(0);
    // The run configuration's word, and no other: sim.reshard=action is refused naming it, and the default kept.
    expect(q.get('sim.reshard')).toBe('microbatch');
    const action = simParamsFromQuery(new URLSearchParams('sim.dp=2&sim.zero=3&sim.reshard=action'));
    expect(action.errors.map((e) => e.message)).toEqual(['sim.reshard = "action": must be one of step, microbatch']);
    expect(action.params.reshard).toBe('step');
    const bad = simParamsFromQuery(new URLSearchParams('sim.tp=3.5&sim.zero=7&sim.dp=2'));
    expect(bad.errors.map((e) => e.message)).toEqual(['sim.tp = 3.5: must be an integer', 'sim.zero = 7: must be a ZeRO stage 0, 1, 2 or 3']);
  });

  it('1F1B p 4 m 8 at tp 2, worked by hand: each worker F/2 and B/2, 8 all-reduces per op, the closed form beside it', () => {
    // 4 layers per rank, 2 all-reduces each per op: 8 per F, 8 per B. Each: α 0.01 + 1 · 1 MB / 100 GB/s = 0.01 + 0.01 ms.
    // F = 0.5 + 8·0.02 = 0.66, B = 1 + 0.16 = 1.16: step (m + p − 1)(F + B) = 11 · 1.82 = 20.02;
    // each rank 8 · 0.32 = 2.56 of it in tp: share 2.56 / 20.02.
    const o = runSimulation({ ...defaultSimParams(), ranks: 4, microbatches: 8, tp: 2 });
    expect(o.result.makespan).toBeCloseTo(20.02, 9);
    expect(o.result.tp?.share).toBeCloseTo(2.56 / 20.02, 9);
    expect(o.closedTp?.step).toBeCloseTo(20.02, 9);
    expect(o.closedTp?.share).toBeCloseTo(2.56 / 20.02, 9);
    expect(o.closed).toBeNull();
    expect(o.result.timeline.tp).toBe(2);
    const colls = o.result.timeline.intervals.filter((iv) => iv.op === 'collective' && iv.coll === 'tp-all-reduce');
    // 8 workers × 8 micro-batches × (8 + 8).
    expect(colls.length).toBe(8 * 8 * 16);
    // tp off: the same schedule, no collectives, no tp closed form.
    const off = runSimulation({ ...defaultSimParams(), ranks: 4, microbatches: 8 });
    expect(off.closedTp).toBeNull();
    expect(off.result.makespan).toBe(33);
  });

  it('1F1B p 4 m 8 at tp 2 with sequence parallelism, worked by hand: 4 collectives forward and 4 backward per layer, the LayerNorms\' sum once a step', () => {
    // Each gather or scatter posts half of 1 MB: α 0.01 + 0.5 MB / 100 GB/s = 0.015 ms; forward 4 per layer: 0.06.
    // Backward per layer: the gather of dy and both LayerNorm outputs 0.01 + 1.5 MB / 100 GB/s = 0.025, three more at
    // 0.015: 0.07. 4 layers: τF 0.24, τB 0.28. Each stage's LayerNorm gradients (4 bytes a layer) summed at its last B:
    // τG = 0.01 + 16 bytes / 100 GB/s = 0.01000016. Step 11 · (0.5 + 0.24 + 1 + 0.28) + 4 · τG (the ranks' last B's are
    // the tail); each rank 8 · 0.52 + τG of it in tp.
    const G = 0.01000016;
    const step = 11 * 2.02 + 4 * G;
    const o = runSimulation({ ...defaultSimParams(), ranks: 4, microbatches: 8, tp: 2, sequenceParallel: true });
    expect(o.result.makespan).toBeCloseTo(step, 9);
    expect(o.result.tp?.share).toBeCloseTo((8 * 0.52 + G) / step, 9);
    expect(o.closedTp?.step).toBeCloseTo(step, 9);
    expect(o.closedTp?.share).toBeCloseTo((8 * 0.52 + G) / step, 9);
    const colls = o.result.timeline.intervals.filter((iv) => iv.op === 'collective');
    const count = (k: string) => colls.filter((iv) => iv.coll === k).length;
    // 8 workers × 8 micro-batches × 4 layers × (forward 2 + backward 2 gathers; 2 + 2 scatters), and one sum per worker.
    expect(count('tp-all-gather')).toBe(8 * 8 * 4 * 4);
    expect(count('tp-reduce-scatter')).toBe(8 * 8 * 4 * 4);
    expect(count('tp-all-reduce')).toBe(8);
    expect(colls.length).toBe(8 * 8 * simTpCollectivesPerMicrobatch({ tp: 2, tpLayers: 4, sequenceParallel: true }) + 8);
    // The sum closes each worker's last backward.
    for (const sum of colls.filter((iv) => iv.coll === 'tp-all-reduce')) {
      const lastB = o.result.timeline.intervals.filter((iv) => iv.op === 'B' && iv.rank === sum.rank && (iv.tpRank ?? 0) === (sum.tpRank ?? 0)).sort((a, b) => a.start - b.start).at(-1)!;
      expect(sum.end).toBeCloseTo(lastB.end, 12);
    }
    // GPipe: the same tail, p · τG.
    const gpipe = runSimulation({ ...defaultSimParams(), schedule: 'gpipe', ranks: 4, microbatches: 8, tp: 2, sequenceParallel: true });
    expect(gpipe.result.makespan).toBeCloseTo(step, 9);
    expect(gpipe.closedTp?.step).toBeCloseTo(step, 9);
    // At tp 2 each gather and scatter posts half of what an all-reduce posts: the same bytes in twice the rounds, so
    // it is slower than plain tp (20.02); at tp 8 with free latency it posts 1/8 per round where the all-reduce posts all.
    expect(o.result.makespan).toBeGreaterThan(20.02);
    const wide = { ...defaultSimParams(), ranks: 4, microbatches: 8, tp: 8, tpLatencyMs: 0 };
    expect(runSimulation({ ...wide, sequenceParallel: true }).result.makespan).toBeLessThan(runSimulation(wide).result.makespan);
  });

  it('refuses sequence parallelism without tp and round-trips it through the URL', () => {
    expect(refusal({ sequenceParallel: true })).toBe("sim.sequenceParallel = true: splits each layer's token rows over a stage's tp workers; it needs tp ≥ 2 (tp = 1)");
    expect(refusal({ tp: 2, sequenceParallel: 'yes' as unknown as boolean })).toBe('sim.sequenceParallel = "yes": must be true or false');
    const p: SimParams = { ...defaultSimParams(), ranks: 8, microbatches: 16, tp: 4, sequenceParallel: true };
    const q = new URLSearchParams();
    simParamsToQuery(p, q);
    expect(q.get('sim.sequenceParallel')).toBe('true');
    expect(simParamsFromQuery(q)).toEqual({ params: p, errors: [] });
    // Off is the default: not written, so older links stay as they were.
    const off = new URLSearchParams();
    simParamsToQuery({ ...p, sequenceParallel: false }, off);
    expect(off.has('sim.sequenceParallel')).toBe(false);
    const bad = simParamsFromQuery(new URLSearchParams('sim.sequenceParallel=true'));
    expect(bad.errors.map((e) => e.message)).toEqual(["sim.sequenceParallel = true: splits each layer's token rows over a stage's tp workers; it needs tp ≥ 2 (tp = 1)"]);
    expect(bad.params.sequenceParallel).toBe(false);
  });

  it('dp 2 × tp 2: each tp worker\'s ring moves 1/tp of the stage\'s gradients; ZeRO-2 and ZeRO-3 play their collectives', () => {
    const base = { ...defaultSimParams(), ranks: 2, microbatches: 4, dp: 2, gradMB: 2, arLatencyMs: 0, arBandwidthMBs: 1000 };
    // A = 2(dp − 1)/dp · bytes / β = 1 MB / 1 MB per ms: 1 ms for 1 MB (tp 2: half the 2 MB).
    const tp2 = runSimulation({ ...base, tp: 2, tpLatencyMs: 0, tpActKB: 0 });
    expect(tp2.result.dp?.allReduceTime[0]).toBeCloseTo(1, 9);
    const tp1 = runSimulation(base);
    expect(tp1.result.dp?.allReduceTime[0]).toBeCloseTo(2, 9);
    const z2 = runSimulation({ ...base, zero: 2 });
    const z3 = runSimulation({ ...base, zero: 3 });
    const z3a = runSimulation({ ...base, zero: 3, reshard: 'microbatch' });
    const kinds = (o: typeof z2) => new Set(o.result.timeline.intervals.filter((iv) => iv.op === 'collective').map((iv) => iv.coll));
    expect(kinds(z2).has('reduce-scatter')).toBe(true);
    expect(kinds(z3).has('all-gather')).toBe(true);
    // Per action, ZeRO-3 gathers before every action instead of once per step: more exchanges.
    const count = (o: typeof z2) => o.result.timeline.intervals.filter((iv) => iv.op === 'collective').length;
    expect(count(z3a)).toBeGreaterThan(count(z3));
    expect(z2.closedMesh).toBeNull();
  });

  it('a step too long for a number is refused naming the field to blame, not drawn as Infinity', () => {
    expect(() => runSimulation({ ...defaultSimParams(), ranks: 4, microbatches: 8, tp: 2, tpActKB: 1e308 })).toThrow(/^sim\.tpActKB = 1e\+308: makes the step longer than a number can hold/);
    expect(() => runSimulation({ ...defaultSimParams(), ranks: 4, microbatches: 8, costF: 1e308, costB: 1e308 })).toThrow(/^sim\.costF = 1e\+308: /);
    expect(runSimulation({ ...defaultSimParams(), ranks: 4, microbatches: 8, costF: 1e300 }).result.makespan).toBeGreaterThan(1e300);
  });
});

describe('Simulate at scale: PipeDream and PipeDream-2BW, their steps as one stream', () => {
  it('2BW p 64, m 512, 4 steps: one 1F1B order over 2048 micro-batches, its fill and drain paid once, worked by hand', () => {
    const o = runSimulation({ ...defaultSimParams(), schedule: 'pipedream-2bw', steps: 4 });
    expect(o.schedule.name).toBe('pipedream-2bw');
    expect(o.schedule.microbatches).toBe(4 * 512);
    // 3(S·m + p − 1) = 3(2048 + 63) = 6333 units, where four flushed 1F1B steps take 4 · 3(512 + 63) = 6900.
    expect(o.result.makespan).toBe(6333);
    expect(runSimulation(defaultSimParams()).result.makespan * 4).toBe(6900);
    expect(o.closed?.makespan).toBe(6333);
    expect(o.closed?.bubble).toBeCloseTo(63 / 2111, 12);
    expect(o.result.bubble).toBeCloseTo(63 / 2111, 12);
    // Its activations are 1F1B's, the stream's steps or not: p − r on rank r.
    expect(o.closedPeak?.slice(0, 2)).toEqual([64, 63]);
    expect(o.result.memory[0].peakMicrobatches).toBe(64);
    // PipeDream, one step: 1F1B's step.
    expect(runSimulation({ ...defaultSimParams(), schedule: 'pipedream', steps: 1 }).result.makespan).toBe(1725);
  });

  it('refuses a stream past the page\'s size, with replicas, or breaking 2BW\'s m ≥ p; a flushing schedule ignores steps', () => {
    expect(refusal({ schedule: 'pipedream-2bw', steps: 0 })).toMatch(/^sim\.steps = 0: /);
    expect(refusal({ schedule: 'pipedream-2bw', steps: 17 })).toBe('sim.steps = 17: a stream of 17 steps × 512 micro-batches holds 8704; the page plays at most 8192 (steps ≤ 16)');
    expect(refusal({ schedule: 'pipedream-2bw', ranks: 512, microbatches: 512, steps: 16 })).toMatch(/^sim\.steps = 16: ranks · virtual · microbatches · steps · ops = 8388608 actions at 512 ranks, 512 micro-batches × 16 steps; the page draws at most 2000000/);
    expect(refusal({ schedule: 'pipedream', dp: 2 })).toBe("sim.dp = 2: pipedream updates each stage's weights after every backward, with no point at which replicas could sum their gradients; data parallelism needs a synchronous schedule or PipeDream-2BW (dp = 1 here)");
    expect(refusal({ schedule: 'pipedream-2bw', ranks: 4, microbatches: 8, dp: 2, zero: 1 })).toMatch(/^sim\.zero = 1: pipedream-2bw sums each block's gradients over the replicas with a plain all-reduce before its update; .* \(zero = 0 with pipedream-2bw\)$/);
    expect(refusal({ schedule: 'pipedream-2bw', ranks: 4, microbatches: 8, dp: 2, overlap: false })).toMatch(/^sim\.overlap = false: pipedream-2bw has no flush to hold the all-reduce back to/);
    expect(refusal({ schedule: 'pipedream-2bw', ranks: 4, microbatches: 8, dp: 2 })).toBe('accepted');
    // A stream's all-reduces count once per step: 8 ranks × 256 replicas × 2 · 255 exchanges × 16 steps would draw 16.7 million.
    expect(refusal({ schedule: 'pipedream-2bw', ranks: 8, microbatches: 8, steps: 16, dp: 256 })).toMatch(/^sim\.dp = 256: dp · ranks · virtual · \(microbatches · ops \+ all-reduce exchanges\) = 17235968 actions at dp 256, 8 ranks, 8 micro-batches × 16 steps; the page draws at most 2000000/);
    expect(refusal({ schedule: 'pipedream-2bw', ranks: 8, microbatches: 4 })).toMatch(/^sim\.microbatches = 4: PipeDream-2BW needs m ≥ p = 8/);
    expect(refusal({ schedule: '1f1b', steps: 1000 })).toBe('accepted');
    expect(runSimulation({ ...defaultSimParams(), steps: 1000 }).result.makespan).toBe(1725);
  });

  it('2BW on replicas: each stage\'s all-reduce after its block of m backwards, the worker waiting (worked by hand, as the CLI\'s)', () => {
    // One rank, m = 2, 2 steps, F = 1, B = 2; 4 MB of gradients over 2 replicas at 1000 MB/s (one unit read as 1 ms):
    // each ring exchange moves 2 MB in 2 units. F0 0–1, B0 1–3, F1 3–4, B1 4–6, all-reduce 6–10, F2 … B3 10–16, all-reduce 16–20.
    const p: SimParams = { ...defaultSimParams(), schedule: 'pipedream-2bw', ranks: 1, microbatches: 2, steps: 2, dp: 2, gradMB: 4, arLatencyMs: 0, arBandwidthMBs: 1000 };
    const o = runSimulation(p);
    expect(o.result.makespan).toBe(20);
    expect(o.result.dp?.computeMakespan).toBe(16);
    expect(o.result.dp?.allReduceTime).toEqual([8]);
    // The stream's own closed form, 3(S·m + p − 1) + S·A: 12 + 2 · 4; its compute 12 + 4 (the last block's A after it).
    expect(o.closedMesh).toMatchObject({ step: 20, allReduce: 4, blocks: 2, exposed: 4 });
    expect(o.closed?.makespan).toBe(16);
    expect(o.closed?.bubble).toBeCloseTo(o.result.bubble, 12);
    // A free all-reduce leaves one pipeline's stream: 1F1B's closed form over all S·m.
    const free = runSimulation({ ...p, ranks: 4, microbatches: 4, steps: 3, gradMB: 0 });
    expect(free.result.makespan).toBe(45);
    expect(free.closed?.makespan).toBe(45);
    expect(free.closedMesh?.step).toBe(45);
    // Other costs: no closed form claimed.
    expect(runSimulation({ ...p, costB: 3 }).closedMesh).toBeNull();
  });

  it('round-trips a stream through the URL; a default link writes no steps', () => {
    const p: SimParams = { ...defaultSimParams(), schedule: 'pipedream-2bw', ranks: 8, microbatches: 16, steps: 10 };
    const q = new URLSearchParams();
    simParamsToQuery(p, q);
    expect(q.get('sim.steps')).toBe('10');
    expect(simParamsFromQuery(q)).toEqual({ params: p, errors: [] });
    const d = new URLSearchParams();
    simParamsToQuery(defaultSimParams(), d);
    expect(d.has('sim.steps')).toBe(false);
    const bad = simParamsFromQuery(new URLSearchParams('sim.schedule=pipedream&sim.steps=99999'));
    expect(bad.errors.map((e) => e.message)).toEqual(['sim.steps = 99999: must be an integer between 1 and 1024']);
    expect(bad.params.steps).toBe(defaultSimParams().steps);
  });
});
