/**
 * The preset's figures from real runs of two of its shapes on the CPU host
 * (in-process workers over MessageChannels): the weights it counts per stage
 * are the bytes the runtime's all-reduce summed (twice: the CPU host's float64), its memory per worker adds
 * AdamW's two moments, and the simulated step (the report's) is its compute
 * plus the exposed all-reduce.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { runPipeline } from '../../runtime/coordinator.ts';
import { InProcessRankHost } from '../../runtime/executor/in-process-host.ts';
import { dpPpShapes, measuredFigures, memoryPerWorker, simulatedFigures, stageWeightBytes } from './dp-pp-preset.ts';

const cpuHosts = () => (w: number) => new InProcessRankHost(w, new CpuBackend());

describe('dp × pp preset on the CPU host', () => {
  const shapes = dpPpShapes(2);
  it('2×4: weights per stage are the all-reduce bytes; the simulated step is the simulated compute and its exposed all-reduce', async () => {
    const cfg = shapes[1].config;
    const report = await runPipeline(cfg, { hostFactory: cpuHosts(), recvTimeoutMs: 10000 });
    const ar = report.allReduce;
    expect(ar).toBeDefined();
    if (!ar) return;
    const weights = stageWeightBytes(cfg);
    // The CPU host computes in float64: its gradients are twice the float32 weights the page's GPU run moves.
    expect(ar.perStage.map((s) => s.bytes)).toEqual(weights.map((b) => 2 * b));
    const sim = simulatedFigures(report);
    const meas = measuredFigures(report);
    expect(meas.stepMs).toBe(ar.stepMs);
    expect(meas.allReduceShare).toBe(ar.share);
    // The simulated step holds the simulated compute and an all-reduce on the fitted ring: longer than the compute alone.
    expect(sim.stepMs).toBeGreaterThan(report.makespanMs.simulated);
    expect(sim.allReduceShare).toBeCloseTo(1 - report.makespanMs.simulated / sim.stepMs, 9);
    expect(sim.bubble).toBe(report.bubble.simulated);
  }, 60_000);

  it('8×1: memory per worker is the weights, AdamW’s two moments of them, and the stash', async () => {
    const cfg = shapes[3].config;
    const report = await runPipeline(cfg, { hostFactory: cpuHosts(), recvTimeoutMs: 10000 });
    const [w] = stageWeightBytes(cfg);
    expect(report.optimizerBytesPerWorker).toEqual(Array(8).fill(2 * w));
    expect(memoryPerWorker(report)).toBe(3 * w + (report.peakStashBytes[0] ?? 0));
  }, 60_000);
});
