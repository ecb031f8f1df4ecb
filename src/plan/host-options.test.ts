/**
 * Offload and swapping in the planner (host-options.ts): the formulas by hand, and the search: a model that fits
 * no layout of its devices without them plans with them, within the device's memory; where recomputation alone
 * fits too, the fastest of either is kept; refused without a host link to cross.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import { DEVICE_PRESETS } from './device.ts';
import { offloadedStateBytes, offloadMs, swappedActivationBytes, swappedCosts } from './host-options.ts';
import { planMesh } from './mesh-plan.ts';

const model = { layers: 8, hidden: 1024, heads: 16, seq: 2048, vocab: 50257, bytesPerElement: 2 as const };
const req = (memoryGB: number, hostOptions: boolean) => ({ model, devices: 4, globalBatch: 16, maxMicroBatch: 2, device: { ...DEVICE_PRESETS.h100, memoryGB }, hostOptions });

describe('offload and swapping in the planner', () => {
  it('the formulas: offload leaves the 16-bit weights and gradients, swapping two micro-batches and the longer of compute and copy', () => {
    // Mixed precision: 2 + 2 + 12 bytes a parameter; offloaded, 4 stay. ZeRO-1 over 4: 2 + 2 + 3, of which 4 stay.
    expect(offloadedStateBytes(model, [16e9], 0, 1)).toEqual([4e9]);
    expect(offloadedStateBytes(model, [7e9], 1, 4)[0]).toBeCloseTo(4e9, -3);
    // 1e9 parameters at ZeRO 0: 2 GB of gradients down and 2 GB of weights up over 64 GB/s: 62.5 ms.
    expect(offloadMs(model, [16e9], 0, 1, DEVICE_PRESETS.h100)).toBeCloseTo(62.5, 9);
    expect(swappedActivationBytes([10, 3], [4, 1, 2], [0, 0, 1])).toEqual([8, 3]);
    // A 6.4 MB stash over 64 GB/s: 0.1 ms; a forward of 0.05 ms waits for it, a backward of 0.2 does not.
    const c = swappedCosts({ F: [0.05], B: [0.2], heldBytes: [6.4e6], unit: 'ms' }, 1, DEVICE_PRESETS.h100);
    expect(c.F).toEqual([0.1]);
    expect(c.B).toEqual([0.2]);
  });

  it('a model no layout fits on the device alone plans with offload or swapping, within the memory', () => {
    expect(() => planMesh(req(0.7, false))).toThrow(ConfigError);
    const p = planMesh(req(0.7, true));
    expect(p.candidates.length).toBeGreaterThan(0);
    for (const c of p.candidates) {
      expect(c.memoryBytes).toBeLessThanOrEqual(0.7e9);
      expect(c.offload || c.swap).toBe(true);
      if (c.offload) expect(c.zero).toBeLessThanOrEqual(1);
    }
    expect(p.candidates.map((c) => c.stepMs)).toEqual([...p.candidates.map((c) => c.stepMs)].sort((a, b) => a - b));
  });

  it('where recomputation fits too, the fastest of either is kept', () => {
    const without = planMesh(req(1, false)).candidates[0];
    const withHost = planMesh(req(1, true)).candidates[0];
    expect(without.offload ?? false).toBe(false);
    expect(withHost.stepMs).toBeLessThanOrEqual(without.stepMs);
    expect(withHost.offload || withHost.swap).toBe(true);
  });

  it('refuses hostOptions without a host link, naming the field', () => {
    const { hostLinkGBps: _none, ...device } = DEVICE_PRESETS.h100;
    expect(() => planMesh({ ...req(1, true), device })).toThrow(/^device\.hostLinkGBps = undefined: must be given/);
    expect(() => planMesh({ ...req(1, false), hostOptions: 'yes' as unknown as boolean })).toThrow(/^hostOptions = "?yes"?: must be true or false/);
  });
});
