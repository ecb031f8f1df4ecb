import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import { defaultSimParams, simParamsFromQuery, simParamsToQuery, validateSimParams, type SimParams } from './sim-params.ts';
import { runSimulation } from './simulation.ts';

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
    expect(refusal({ zero: true })).toMatch(/^sim\.zero = true: ZeRO-1 .* needs dp ≥ 2/);
    expect(refusal({ dp: 32, ranks: 128, microbatches: 512 })).toMatch(/^sim\.dp = 32: .* actions; the page draws at most 2000000$/);
    expect(refusal({ dp: 8, ranks: 64, microbatches: 512 })).toBe('accepted');
  });

  it('round-trips through the URL and names a bad link value', () => {
    const p: SimParams = { ...defaultSimParams(), dp: 8, gradMB: 40, arLatencyMs: 0.5, arBandwidthMBs: 250, overlap: false, zero: true };
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
    expect(runSimulation({ ...defaultSimParams(), dp: 8, zero: true }).result.makespan).toBeCloseTo(1900.14, 9);
  });

  it('dp = 1 leaves the pipeline alone', () => {
    const o = runSimulation(defaultSimParams());
    expect(o.result.dp).toBeUndefined();
    expect(o.result.makespan).toBe(1725);
    expect(o.closedMesh).toBeNull();
  });
});
