/**
 * The tp collectives' price, worked by hand: Megatron's count and size per layer, the direct
 * exchange's α + (t − 1)·bytes/β, the split compute, and the simulator playing them inside the ops
 * (checked against 1F1B's closed form (m + p − 1)·(F + B) with the collectives added).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import { generateSchedule } from './registry.ts';
import { simulate } from './simulate.ts';
import { tpClosedForm, tpExchangeTime, tpLayerMessages, tpOpTimes, tpSentBytes, tpSplitCompute, tpStageMessages, type TpCosts } from './tp-cost.ts';

describe('tp collectives: count and size per layer', () => {
  it('a GPT block: 2 all-reduces of rows·C forward, 2 backward; an MLP linear: an all-gather of its columns, an all-reduce of dx', () => {
    // 4 sequences of 16 tokens = 64 rows, C = 16.
    const g = tpLayerMessages({ kind: 'gpt-block', width: 16 }, 64, 2);
    expect(g.forward).toEqual([{ coll: 'tp-all-reduce', elements: 1024 }, { coll: 'tp-all-reduce', elements: 1024 }]);
    expect(g.backward).toEqual(g.forward);
    // 8 rows, 12 → 20 over t = 4: each worker's 5 columns of 8 rows gathered; dx of 8 × 12 summed.
    const l = tpLayerMessages({ kind: 'linear', in: 12, out: 20 }, 8, 4);
    expect(l.forward).toEqual([{ coll: 'tp-all-gather', elements: 40 }]);
    expect(l.backward).toEqual([{ coll: 'tp-all-reduce', elements: 96 }]);
    expect(tpLayerMessages({ kind: 'gpt-block', width: 16 }, 64, 1)).toEqual({ forward: [], backward: [] });
  });

  it('a stage: F the forwards, B and I the backwards (after the forward again with recomputation), W none', () => {
    const layers = [{ kind: 'gpt-block', width: 8 }, { kind: 'gpt-block', width: 8 }] as const;
    const s = tpStageMessages(layers, 10, 2);
    expect([s.F.length, s.B.length, s.I.length, s.W.length]).toEqual([4, 4, 4, 0]);
    // Per block per micro-batch: 4 all-reduces of rows·C = 80 elements.
    expect([...s.F, ...s.B].every((m) => m.coll === 'tp-all-reduce' && m.elements === 80)).toBe(true);
    const r = tpStageMessages(layers, 10, 2, true);
    expect([r.F.length, r.B.length, r.I.length, r.W.length]).toEqual([4, 8, 8, 0]);
  });
});

describe('tp collectives: time', () => {
  it('one round of direct exchange: α + (t − 1)·bytes/β; nothing alone', () => {
    // 8192 bytes to 1 peer at 4096 B/ms after α = 0.25 ms: 0.25 + 2 = 2.25 ms; to 3 peers: 0.25 + 6.
    expect(tpExchangeTime(8192, 2, 0.25, 4096)).toBe(2.25);
    expect(tpExchangeTime(8192, 4, 0.25, 4096)).toBe(6.25);
    expect(tpExchangeTime(8192, 1, 0.25, 4096)).toBe(0);
    expect(tpExchangeTime(8192, 2, 0.25, Infinity)).toBe(0.25);
    expect(tpSentBytes({ coll: 'tp-all-reduce', elements: 1024 }, 4, 4)).toBe(3 * 4096);
  });

  it('the split layers divide by t, the rest stays whole', () => {
    // 10 ms, 80% of it in split layers, 4 workers: 2 + 8/4 = 4 ms.
    expect(tpSplitCompute(10, 0.8, 4)).toBeCloseTo(4, 12);
    expect(tpSplitCompute(10, 0.8, 1)).toBe(10);
  });

  it('per stage and op: the sum of its collectives', () => {
    const msgs = tpStageMessages([{ kind: 'gpt-block', width: 16 }], 64, 2);
    const c: TpCosts = { t: 2, latency: 0.1, bandwidth: 8192, bytesPerElement: 8, messages: [msgs, tpStageMessages([], 64, 2)] };
    const op = tpOpTimes(c, 2);
    // Each all-reduce: 1024 · 8 = 8192 bytes to 1 peer at 8192 B/ms: 0.1 + 1 = 1.1; two per op.
    expect(op.F[0]).toBeCloseTo(2.2, 12);
    expect(op.B[0]).toBeCloseTo(2.2, 12);
    expect(op.I[0]).toBeCloseTo(2.2, 12);
    expect(op.W[0]).toBe(0);
    expect([op.F[1], op.B[1]]).toEqual([0, 0]);
  });

  it('refuses bad costs by field, value and rule', () => {
    const c: TpCosts = { t: 2, latency: 0, bandwidth: 0, bytesPerElement: 4, messages: [tpStageMessages([], 1, 2)] };
    expect(() => tpOpTimes(c, 1)).toThrow(ConfigError);
    expect(() => tpOpTimes(c, 1)).toThrow('costs.tp.bandwidth = 0: must be a number greater than 0');
    expect(() => tpOpTimes({ ...c, bandwidth: 1 }, 2)).toThrow('costs.tp.messages');
  });
});

describe('the simulator prices tp inside the ops', () => {
  it('1F1B, p = 2, m = 4: the step is (m + p − 1)·(F + τF + B + τB), each rank m·(τF + τB) of it in tp', () => {
    const p = 2;
    const m = 4;
    const s = generateSchedule('1f1b', p, m);
    const layer = { kind: 'gpt-block', width: 16 } as const;
    const messages = [tpStageMessages([layer], 64, 2), tpStageMessages([layer], 64, 2)];
    // α = 0.05, β = 8192 B/ms, 8 bytes per element: each all-reduce 0.05 + 1 = 1.05; F and B two each: τ = 2.1.
    const tp: TpCosts = { t: 2, latency: 0.05, bandwidth: 8192, bytesPerElement: 8, messages };
    const r = simulate(s, { F: 1, B: 2, tp });
    const cf = tpClosedForm(p, m, { F: 1, B: 2 }, { F: 2.1, B: 2.1 });
    expect(cf.step).toBeCloseTo(5 * 7.2, 12);
    expect(r.makespan).toBeCloseTo(cf.step, 9);
    expect(r.tp?.perRank[0]).toBeCloseTo(cf.tpPerRank, 9);
    expect(r.tp?.perRank[1]).toBeCloseTo(4 * 4.2, 9);
    expect(r.tp?.share).toBeCloseTo(cf.share, 9);
    expect(r.tp?.opTime[0].F).toBeCloseTo(2.1, 12);
    // Without tp the same schedule is (m + p − 1)·3.
    expect(simulate(s, { F: 1, B: 2 }).makespan).toBe(15);
    expect(simulate(s, { F: 1, B: 2 }).tp).toBeUndefined();
  });

  it('ZB-H1 with a split backward: the collectives ride on I, none on W', () => {
    const s = generateSchedule('zb-h1', 2, 4);
    const messages = [0, 1].map(() => tpStageMessages([{ kind: 'gpt-block', width: 4 }], 4, 2));
    const tp: TpCosts = { t: 2, latency: 0.5, bandwidth: Infinity, bytesPerElement: 4, messages };
    const withTp = simulate(s, { F: 1, I: 1, W: 1, tp });
    const by = simulate(s, { F: 2, I: 2, W: 1 });
    // Two collectives of α = 0.5 each add 1 to F and to I: the same play as F = I = 2.
    expect(withTp.makespan).toBeCloseTo(by.makespan, 12);
    expect(withTp.tp?.opTime[1].W).toBe(0);
  });
});
