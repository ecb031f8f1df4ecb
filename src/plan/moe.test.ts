/** The planner's MoE arithmetic (moe.ts, transformer.ts) and the all-to-all's price (schedule/ep-cost.ts), against hand-worked numbers. */
import { describe, expect, it } from 'vitest';
import { allToAllTime, epClosedForm } from '../schedule/ep-cost.ts';
import { ConfigError } from '../util/errors.ts';
import type { DeviceSpec } from './device.ts';
import { checkEp, checkMoe, routedRows } from './moe.ts';
import { checkTransformer, layerActivationBytes, layerFlops, layerParams, modelParams, transformerProfile, type TransformerModel } from './transformer.ts';

// A small MoE GPT: h = 8, s = 4, 2 heads, 3 layers (the first dense), 4 experts of width 6, top-2, 1 shared.
const tiny: TransformerModel = { layers: 3, hidden: 8, heads: 2, seq: 4, vocab: 16, bytesPerElement: 2, moe: { experts: 4, topK: 2, expertHidden: 6, sharedExperts: 1, denseLayers: 1 } };

/** Expects fn to throw a ConfigError on `field` whose message names `value` and says `rule`. */
function refuses(fn: () => unknown, field: string, value: string, rule: RegExp): void {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    const c = e as ConfigError;
    expect(c.field).toBe(field);
    expect(c.message).toContain(`${field} = ${value}`);
    expect(c.message).toMatch(rule);
    return;
  }
  throw new Error(`expected ${field} = ${value} to be refused`);
}

describe('the MoE transformer', () => {
  it('counts an MoE layer’s FLOPs matrix by matrix: attention 2·T·4h², core 4·b·s²·h, router 2·T·h·E, k·T rows through three h × f matrices, the shared expert’s T rows', () => {
    const T = 4; // b = 1 sequence of 4 tokens
    const attention = 4 * (2 * T * 8 * 8); // Q, K, V, projection: 2 FLOPs a multiply-add
    const core = 2 * (2 * 1 * 4 * 4 * 8); // scores and the attention over the values
    const router = 2 * T * 8 * 4;
    const routed = 3 * (2 * (2 * T) * 8 * 6); // gate, up, down on each of the 2·T routed rows
    const shared = 3 * (2 * T * 8 * 6);
    const f = layerFlops(tiny, 1, 1);
    expect(f.F).toBe(attention + core + router + routed + shared);
    expect(f.W).toBe(attention + router + routed + shared);
    expect(f.I).toBe(attention + 2 * core + router + routed + shared);
    // Layer 0 is dense: the GPT's MLP, two h × 4h matrices.
    expect(layerFlops(tiny, 1, 0).F).toBe(attention + core + 2 * (2 * T * 8 * 32));
    // A capacity factor of 1.5 pads each expert to 1.5·k·T/E rows: 1.5 × the routed rows.
    expect(routedRows({ ...tiny.moe!, capacityFactor: 1.5 }, T)).toBe(12);
    expect(routedRows({ ...tiny.moe!, capacityFactor: 0 }, T)).toBe(8);
  });

  it('counts parameters: the router h·E, (E + S) experts of 3hf, the attention 4h² + 4h and 4h of LayerNorms', () => {
    const moeLayer = 8 * 4 + (4 + 1) * 3 * 8 * 6 + (4 * 64 + 4 * 8) + 4 * 8;
    const gptLayer = 12 * 64 + 13 * 8;
    expect(layerParams(tiny, 2)).toBe(moeLayer);
    expect(layerParams(tiny, 0)).toBe(gptLayer);
    expect(modelParams(tiny)).toBe(gptLayer + 2 * moeLayer + (16 + 4) * 8 + 2 * 8);
  });

  it('holds the attention’s (7e + 1)·sbh and as²b·(2e + 1) and the MoE MLP’s input, routed rows, SwiGLU products and router probabilities', () => {
    const e = 2;
    const sbh = 4 * 8;
    const as2b = 2 * 16;
    const R = 8;
    const mlp = e * sbh + e * R * 8 + 3 * e * (R + 1 * 4) * 6 + 4 * 4 * 4;
    expect(layerActivationBytes(tiny, 1, 1)).toBe((7 * e + 1) * sbh + mlp + (2 * e + 1) * as2b);
    // The dense GPT's layer is Korthikanti's sbh·(34 + 5as/h) at 16-bit.
    expect(layerActivationBytes(tiny, 1, 0)).toBe(sbh * (34 + (5 * 2 * 4) / 8));
  });

  it('refuses bad MoE fields and ep by field, value and rule', () => {
    const moe = tiny.moe!;
    refuses(() => checkTransformer({ ...tiny, moe: { ...moe, topK: 5 } }), 'model.moe.topK', '5', /at most experts = 4/);
    refuses(() => checkTransformer({ ...tiny, moe: { ...moe, topK: 0 } }), 'model.moe.topK', '0', /between 1 and|at least 1/);
    refuses(() => checkTransformer({ ...tiny, moe: { ...moe, capacityFactor: -1 } }), 'model.moe.capacityFactor', '-1', /≥ 0/);
    refuses(() => checkTransformer({ ...tiny, moe: { ...moe, denseLayers: 3 } }), 'model.moe.denseLayers', '3', /less than layers = 3/);
    refuses(() => checkTransformer({ ...tiny, moe: { ...moe, experts: 0 } }), 'model.moe.experts', '0', /between 1 and/);
    refuses(() => checkEp(3, tiny), 'ep', '3', /must divide the experts \(4\)/);
    refuses(() => checkEp(2, { ...tiny, moe: undefined }), 'ep', '2', /model with experts/);
    refuses(() => checkEp(0, tiny), 'ep', '0', /between 1 and/);
    expect(checkEp(4, tiny)).toBe(4);
    expect(() => checkMoe(tiny)).not.toThrow();
  });
});

describe('the all-to-all', () => {
  const link = { latencyIntra: 0.5, bandwidthIntra: 100, latencyInter: 1, bandwidthInter: 10 };
  it('sends (local − 1)/n of its bytes inside the node and (n − local)/n across, at once, after one α', () => {
    // 16 workers, 8 a node, 1600 bytes: 700 inside at 100, 800 across at 10.
    expect(allToAllTime(1600, 16, 8, link)).toBe(1 + Math.max(7, 80));
    // All on one node: 7/8 of 1600 at 100 after the node's α.
    expect(allToAllTime(1600, 8, 8, link)).toBe(0.5 + 14);
    expect(allToAllTime(1600, 1, 1, link)).toBe(0);
    refuses(() => allToAllTime(1, 4, 5, link), 'local', '5', /between 1 and ep = 4/);
  });

  it('the closed form: played after the compute it adds τF + τB to every pair; overlapped a pair costs the larger', () => {
    const op = { F: 2, B: 4 };
    expect(epClosedForm(4, 8, op, { F: 1, B: 1 }, false)).toEqual({ step: 11 * 8, exposedPerRank: 16 });
    expect(epClosedForm(4, 8, op, { F: 1, B: 1 }, true)).toEqual({ step: 11 * 6, exposedPerRank: 0 });
    expect(epClosedForm(4, 8, op, { F: 4, B: 5 }, true)).toEqual({ step: 11 * 9, exposedPerRank: 24 });
  });

  it('the profile adds each MoE layer’s two all-to-alls to F and two to I and B, or scales its compute by max(1, all-to-all / compute) when overlapped', () => {
    const device: DeviceSpec = { name: 'd', peakTflops: 1, peakTflopsFp32: 1, efficiency: 1, memoryGB: 1, devicesPerNode: 4, bwIntraGBps: 1, bwInterGBps: 0.5, latIntraUs: 1000, latInterUs: 2000 };
    const plain = transformerProfile(tiny, { microBatch: 1, recompute: 'none' }, device);
    const ep = transformerProfile(tiny, { microBatch: 1, recompute: 'none', ep: { n: 4, local: 2, overlap: false } }, device);
    // One dispatch: 2 bytes × 8 rows × 8 = 128 bytes; 1/4 to the node's peer at 1e6 bytes/ms, 2/4 across at 5e5, after 2 ms.
    const one = 2 + Math.max(32 / 1e6, 64 / 5e5);
    const moe = 3; // block 3 is layer 2, an MoE layer; block 1 (layer 0) is dense
    expect(ep.blocks[moe].F).toBeCloseTo(plain.blocks[moe].F + 2 * one, 12);
    expect(ep.blocks[moe].I).toBeCloseTo(plain.blocks[moe].I + 2 * one, 12);
    expect(ep.blocks[moe].B).toBeCloseTo(plain.blocks[moe].B + 2 * one, 12);
    expect(ep.blocks[moe].W).toBe(plain.blocks[moe].W);
    expect(ep.blocks[1]).toEqual(plain.blocks[1]);
    const over = transformerProfile(tiny, { microBatch: 1, recompute: 'none', ep: { n: 4, local: 2, overlap: true } }, device);
    const p = plain.blocks[moe];
    const k = Math.max(1, (4 * one) / (p.F + p.B));
    expect(k).toBeGreaterThan(1); // this tiny layer computes for nanoseconds: the all-to-all sets its pace
    expect(over.blocks[moe].F + over.blocks[moe].B).toBeCloseTo(4 * one, 12);
    expect(over.blocks[moe].W).toBeCloseTo(p.W * k, 12);
  });
});
