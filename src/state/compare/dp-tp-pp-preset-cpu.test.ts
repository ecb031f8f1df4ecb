/**
 * The dp × tp × pp preset's figures from real runs of two of its shapes on the CPU host (in-process workers
 * over MessageChannels): the tp share it shows is the report's, the simulated side prices every hidden
 * linear's all-gather and all-reduce at the α–β line the run fitted (worked here from the layer sizes), and
 * the sentence reads the measured rows.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { runPipeline } from '../../runtime/coordinator.ts';
import { InProcessRankHost } from '../../runtime/executor/in-process-host.ts';
import { defaultRunConfig, type RunConfig } from '../../config/run-config.ts';
import { dpTpPpShapes, meshMeasured, meshSentence, meshSimulated, type MeshRow } from './dp-tp-pp-preset.ts';

const cpuHosts = () => (w: number) => new InProcessRankHost(w, new CpuBackend());

describe('dp × tp × pp preset on the CPU host', () => {
  // The spiral MLP, 3 hidden layers of 8 (4 blocks), batch 32: micro-batches of 2 rows.
  const train: RunConfig = { ...defaultRunConfig(), hidden: 8, layers: 3, batchSize: 32 };
  const mesh = dpTpPpShapes(train, 2);
  const shape = (key: string) => {
    const s = mesh?.shapes.find((x) => x.key === key);
    if (!s) throw new Error(`no shape ${key}`);
    return s;
  };

  it('1×4×2 and 2×2×2: tp share and simulated price from the run; the sentence reads both rows', async () => {
    const rows: MeshRow[] = [];
    for (const key of ['1×4×2', '2×2×2']) {
      const s = shape(key);
      const report = await runPipeline(s.config, { hostFactory: cpuHosts(), recvTimeoutMs: 10000 });
      const tp = report.tensorParallel;
      if (!tp) throw new Error('no tp figures');
      const meas = meshMeasured(report);
      const sim = meshSimulated(report);
      // Each worker's compute: the actions of the last step at their mean times, less its tp collectives.
      const workers = s.dp * s.tp * s.ranks;
      const computeSum = report.timeline.intervals.filter((iv) => iv.op === 'F' || iv.op === 'B').reduce((a, iv) => a + (report.meanOpMs[iv.stage]?.[iv.op as 'F' | 'B'] ?? 0), 0);
      expect(meas.computeMs).toBeCloseTo((computeSum - tp.perWorker.ms * workers) / workers, 9);
      expect(meas.computeMs).toBeGreaterThan(0);
      expect(meas.tpShare).toBe(tp.ownShare);
      expect(sim.tpShare).toBe(tp.simulated?.share);
      // Megatron's count for a column-parallel linear: an all-gather forward, an all-reduce backward.
      for (const st of tp.perStage) if (st.splitLayers > 0) expect(st.perLayer).toBe(2);
      if (s.dp === 1) {
        // Blocks 0–1 on rank 0 (Linear 2 → 8, Linear 8 → 8), block 2 (Linear 8 → 8) and the head (whole) on rank 1; rows 2.
        const t = s.tp;
        const m = s.config.microbatches;
        const price = (elements: number) => tp.fit.latencyMs + ((t - 1) * elements * 8) / tp.fit.bytesPerMs;
        const linear = (inW: number, out: number) => price((2 * out) / t) + price(2 * inW);
        expect(report.stageBlocks).toEqual([[0, 2], [2, 4]]);
        const perRank = [m * (linear(2, 8) + linear(8, 8)), m * linear(8, 8)];
        expect(tp.simulated?.exposedMs).toBeCloseTo((perRank[0] + perRank[1]) / 2, 9);
        expect(sim.stepMs).toBeCloseTo(report.makespanMs.simulated, 9);
      } else {
        expect(sim.stepMs).toBe(report.allReduce?.simulated?.stepMs);
        expect(meas.allReduceShare).toBe(report.allReduce?.share);
      }
      rows.push({ key, dp: s.dp, tp: s.tp, ranks: s.ranks, measured: meas, tpFigures: tp });
    }
    const sentence = meshSentence(rows) ?? '';
    const fastest = rows[0].measured.stepMs <= rows[1].measured.stepMs ? rows[0] : rows[1];
    expect(sentence.startsWith(`At 8 workers the fastest shape was ${fastest.key} (dp×tp×pp) at ${fastest.measured.stepMs.toFixed(1)} ms per step, with tp.`)).toBe(true);
    expect(sentence).toMatch(/ (latency|bandwidth)-bound/);
  }, 60_000);
});
