import { describe, expect, it } from 'vitest';
import { checkDevice, computeSeconds, DEVICE_PRESETS, type DeviceSpec } from './device.ts';
import {
  checkTransformer,
  layerActivationBytes,
  layerInputBytes,
  modelFlopsPerStep,
  modelParams,
  stateBytesPerParam,
  transformerProfile,
  type TransformerModel,
} from './transformer.ts';

const gpt = (over: Partial<TransformerModel> = {}): TransformerModel => ({ layers: 32, hidden: 4096, heads: 32, seq: 2048, vocab: 50257, bytesPerElement: 2, ...over });

describe('the analytic transformer against the papers', () => {
  it('holds Korthikanti et al. 2022 eq. 1 per layer, sbh(34 + 5as/h) at 16-bit, and 2sbh with full recomputation', () => {
    // The paper's settings (Table 3: 22B, 175B GPT-3, 530B, 1T; s = 2048) at micro-batch 1 and 4.
    for (const [a, h] of [[64, 6144], [96, 12288], [128, 20480], [160, 25600]] as const) {
      for (const b of [1, 4]) {
        const m = gpt({ hidden: h, heads: a });
        const s = 2048;
        // sbh(34 + 5as/h) = 34sbh + 5as²b, in integers.
        expect(layerActivationBytes(m, b)).toBe(34 * s * b * h + 5 * a * s * s * b);
        expect(layerInputBytes(m, b)).toBe(2 * s * b * h);
      }
    }
    // §4.1: for GPT-3 (a = 96, s = 2048, h = 12288) the attention term 5as/h is 80, over twice the 34.
    const g3 = gpt({ hidden: 12288, heads: 96 });
    expect(layerActivationBytes(g3, 1) / (2048 * 12288) - 34).toBe(80);
    // §5: selective recomputation keeps the 34sbh and recomputes the 5as²b; full keeps the input, 2sbh.
    const held = (recompute: 'none' | 'selective' | 'full') => transformerProfile(g3, { microBatch: 1, recompute }, DEVICE_PRESETS.a100).blocks[1].heldBytes;
    expect(held('none')).toBe(layerActivationBytes(g3, 1));
    expect(held('selective')).toBe(34 * 2048 * 12288);
    expect(held('full')).toBe(2 * 2048 * 12288);
  });

  it('sums to Megatron SC’21 eq. 3 FLOPs per step, with and without recomputation; selective recomputation adds the attention core’s forward, 4bs²h a layer', () => {
    const d: DeviceSpec = { ...DEVICE_PRESETS.h100, efficiency: 1 };
    for (const m of [gpt(), gpt({ layers: 4, hidden: 768, heads: 12, seq: 1024 })]) {
      for (const recompute of ['none', 'selective', 'full'] as const) {
        const b = 2;
        const p = transformerProfile(m, { microBatch: b, recompute }, d);
        const msPerFlop = computeSeconds(d, 1, 2) * 1e3;
        const flops = p.blocks.reduce((t, x) => t + x.F + x.I + x.W, 0) / msPerFlop;
        const { seq: s, layers: l, hidden: h, vocab: V } = m;
        const plain = 72 * b * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
        const megatron = recompute === 'full' ? 96 * b * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h)) : recompute === 'selective' ? plain + l * 4 * b * s * s * h : plain;
        expect(flops / megatron).toBeCloseTo(1, 12);
        // B = I + W, and I ≈ W ≈ F for the dense part (attention's two extra matmuls go to I).
        for (const x of p.blocks) expect(x.B).toBeCloseTo(x.I + x.W, 9);
      }
      expect(modelFlopsPerStep(m, 8)).toBeCloseTo(72 * 8 * m.seq * m.layers * m.hidden ** 2 * (1 + m.seq / (6 * m.hidden) + m.vocab / (12 * m.layers * m.hidden)), 0);
    }
  });

  it('counts parameters as Megatron SC’21 Table 1 (V = 51200, s = 2048), in billions to one decimal', () => {
    const table: [number, number, number, number][] = [
      [24, 2304, 24, 1.7],
      [32, 3072, 30, 3.6],
      [32, 4096, 36, 7.5],
      [48, 6144, 40, 18.4],
      [64, 8192, 48, 39.1],
      [80, 10240, 60, 76.1],
      [96, 12288, 80, 145.6],
      [128, 16384, 96, 310.1],
      [128, 20480, 105, 529.6],
      [160, 25600, 128, 1008.0],
    ];
    for (const [heads, hidden, layers, billions] of table) {
      const p = modelParams(gpt({ heads, hidden, layers, vocab: 51200, seq: 2048 }));
      expect(Math.abs(p / 1e9 - billions)).toBeLessThan(0.05 + 1e-9);
    }
  });

  it('gives Adam 16 bytes per parameter, and ZeRO-1 the ZeRO paper’s 7.5B on 64 GPUs: 120 GB → 31.4 GB', () => {
    expect(stateBytesPerParam(gpt(), false, 64)).toBe(16);
    expect(stateBytesPerParam(gpt({ bytesPerElement: 4 }), false, 1)).toBe(16);
    const psi = 7.5e9;
    expect(psi * stateBytesPerParam(gpt(), false, 64) / 1e9).toBe(120);
    expect(Math.round((psi * stateBytesPerParam(gpt(), true, 64)) / 1e8) / 10).toBe(31.4);
  });

  it('refuses bad fields by name, value and rule', () => {
    expect(() => checkTransformer(gpt({ heads: 3 }))).toThrow('model.heads = 3: must divide hidden = 4096 evenly');
    expect(() => checkTransformer(gpt({ layers: 0 }))).toThrow('model.layers = 0');
    expect(() => checkTransformer(gpt({ seq: 1.5 }))).toThrow('model.seq = 1.5');
    expect(() => checkTransformer(gpt({ bytesPerElement: 3 as never }))).toThrow('model.bytesPerElement = 3: must be 2 (bf16 mixed precision) or 4 (fp32)');
    expect(() => transformerProfile(gpt(), { microBatch: 0, recompute: 'none' }, DEVICE_PRESETS.h100)).toThrow('microBatch = 0');
    expect(() => transformerProfile(gpt(), { microBatch: 1, recompute: true as never }, DEVICE_PRESETS.h100)).toThrow('recompute = true: must be one of none, selective, full');
    expect(() => checkDevice({ ...DEVICE_PRESETS.h100, memoryGB: 0 })).toThrow('device.memoryGB = 0');
    expect(() => checkDevice({ ...DEVICE_PRESETS.h100, efficiency: 1.5 })).toThrow('device.efficiency = 1.5');
    expect(() => checkDevice({ ...DEVICE_PRESETS.h100, devicesPerNode: 0 })).toThrow('device.devicesPerNode = 0');
    expect(() => checkDevice({ ...DEVICE_PRESETS.h100, latInterUs: -1 })).toThrow('device.latInterUs = -1');
    expect(() => checkDevice({ ...DEVICE_PRESETS.h100, bwInterGBps: Number.NaN })).toThrow('device.bwInterGBps');
  });
});
