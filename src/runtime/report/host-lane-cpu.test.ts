/**
 * Host memory in the memory lanes (issue 54): what a worker keeps in its host memory instead of on its device is
 * counted apart by its allocator's ledger (nn/memory-ledger.ts setHost), sampled with the device's count on the run's
 * clock and drawn as its own series (memory-lanes.ts): swapped activations leaving after a forward and returning
 * before the backward, an offloaded optimizer's state. Float64 CPU host, real workers' code.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { HOST_KINDS, kindIndex } from '../../nn/memory-ledger.ts';
import { defaultRunConfig, type RunConfig } from '../../config/run-config.ts';
import { plannedPeaks } from '../../config/memory-budget.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import { memoryCounters, memoryLanes } from './memory-lanes.ts';

const run = (cfg: RunConfig) => runPipeline(cfg, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()), recvTimeoutMs: 20000 });
const spiral = (over: Partial<RunConfig>): RunConfig => ({ ...defaultRunConfig(), steps: 1, evalEvery: 0, ranks: 2, layers: 3, microbatches: 4, batchSize: 32, ...over });
const STASH = HOST_KINDS.indexOf('stash');
const OPT = HOST_KINDS.indexOf('optimizer');

describe('host memory, counted apart and drawn in the memory lane', () => {
  it('swapping: bytes leave after each swap-out and return before the backward; device stash and host stash together never pass the unswapped peak', async () => {
    const plain = await run(spiral({ schedule: 'gpipe' }));
    const swapped = await run(spiral({ schedule: 'gpipe', swap: 'all' }));
    const lanes = memoryLanes(swapped.memory ?? []);
    expect(lanes).toHaveLength(2);
    for (const [w, m] of (swapped.memory ?? []).entries()) {
      const samples = [...m.samples].sort((a, b) => a.t - b.t);
      const host = samples.map((s) => s.host?.[STASH] ?? 0);
      // Each rise is one swap-out (a micro-batch's stash leaving), each fall one swap-in.
      let rises = 0, falls = 0;
      for (let i = 1; i < host.length; i++) (host[i] > host[i - 1] ? rises++ : host[i] < host[i - 1] ? falls++ : 0);
      const outs = swapped.timeline.intervals.filter((iv) => iv.rank === w && iv.comm === 'swap-out').length;
      const ins = swapped.timeline.intervals.filter((iv) => iv.rank === w && iv.comm === 'swap-in').length;
      expect(outs).toBeGreaterThan(0);
      expect([rises, falls]).toEqual([outs, ins]);
      // All of it back by the step's end; its most is what the swap policy reports for the worker.
      expect(host[host.length - 1]).toBe(0);
      expect(Math.max(...host)).toBe(swapped.hostBytesPerWorker?.[w]);
      expect(lanes[w].hostPeak).toBe(swapped.hostBytesPerWorker?.[w]);
      // Nothing is counted twice: on the device and in host memory together, never more stash than the unswapped run held.
      const unswapped = plain.heldBytesPerWorker[w].stash;
      for (const s of samples) expect(s.live[kindIndex('stash')] + (s.host?.[STASH] ?? 0)).toBeLessThanOrEqual(unswapped);
      expect(Math.max(...samples.map((s) => s.live[kindIndex('stash')]))).toBeLessThan(unswapped);
    }
    // The trace's counter track of host memory, one per worker.
    expect(memoryCounters(swapped.memory ?? []).filter((c) => c.name.startsWith('host memory')).map((c) => c.lane)).toEqual([0, 1]);
  });

  it('offload: the optimizer state the device would hold sits in host memory the whole step; a run without either has no host series', async () => {
    const cfg = spiral({ optimizer: 'adamw', offloadOptimizer: true });
    const report = await run(cfg);
    const onDevice = plannedPeaks({ ...cfg, offloadOptimizer: false });
    for (const [w, m] of (report.memory ?? []).entries()) {
      for (const s of m.samples) expect(s.host?.[OPT]).toBe(onDevice[w].optimizer);
      expect(memoryLanes([m])[0].hostPeak).toBe(onDevice[w].optimizer);
    }
    const plain = await run(spiral({}));
    for (const m of plain.memory ?? []) expect(m.samples.every((s) => s.host === undefined)).toBe(true);
    expect(memoryLanes(plain.memory ?? []).every((l) => l.hostPeak === 0)).toBe(true);
  });
});
