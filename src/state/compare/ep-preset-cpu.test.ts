/**
 * The "Experts across workers" preset on the float64 CPU host (its runs as the page measures them, in-process
 * workers over MessageChannels): the three runs train the same numbers; the all-to-alls' share it shows is a recount
 * of the run's `ep-all-to-all` intervals; the simulator, fed with the run's times, draws as many all-to-alls a worker
 * as the run made, each priced by the α–β line fitted to the run's; the sentence reads the rows.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { runPipeline } from '../../runtime/coordinator.ts';
import { InProcessRankHost } from '../../runtime/executor/in-process-host.ts';
import type { Timeline } from '../../schedule/timeline.ts';
import { epRunFigures, epSentence, epShapes, type EpRunFigures } from './ep-preset.ts';

const a2a = (t: Timeline) => t.intervals.filter((iv) => iv.op === 'collective' && iv.coll === 'ep-all-to-all');

describe('Experts across workers', () => {
  const shapes = epShapes(2);

  it('dp against ep at 4 workers and DualPipe against 1F1B: same losses, the share recounted, the simulator priced by the fit', async () => {
    expect(shapes.map((s) => s.dp * s.ep * s.ranks)).toEqual([4, 4, 4]);
    const rows: { key: string; f: EpRunFigures }[] = [];
    for (const s of shapes) {
      const report = await runPipeline(s.config, { hostFactory: (w) => new InProcessRankHost(w, new CpuBackend()), recvTimeoutMs: 10000 });
      const f = epRunFigures(report);
      rows.push({ key: s.key, f });
      if (s.ep === 1) {
        expect(report.expertParallel).toBeUndefined();
        expect(a2a(report.timeline)).toHaveLength(0);
        expect(f.a2aShare).toBe(0);
        continue;
      }
      const ep = report.expertParallel;
      if (!ep) throw new Error('no ep figures');
      // Recount over the last step (the one step measured after the first): each worker's time in all-to-alls over the step.
      const t = report.timeline;
      const workers = s.dp * s.ep * s.ranks;
      const start = Math.min(...t.intervals.map((iv) => iv.start));
      const end = Math.max(...t.intervals.map((iv) => iv.end));
      const ms = a2a(t).reduce((x, iv) => x + iv.end - iv.start, 0) / workers;
      expect(f.a2aShare).toBeCloseTo(ms / (end - start), 12);
      expect(f.a2aShare).toBeGreaterThan(0);
      expect(f.a2aShare).toBeLessThan(1);
      // Each MoE layer: the probabilities' gather, the dispatch and the combine forward; the backward's dispatch and combine (at least).
      for (const st of ep.perStage) {
        expect(st.F).toBeGreaterThanOrEqual(3);
        expect(st.back).toBeGreaterThanOrEqual(2);
      }
      // The simulated timeline: as many all-to-alls on each worker's lane as the run made, each α + sent / β.
      const sim = a2a(report.simulatedTimeline);
      expect(sim.length).toBe(a2a(t).length);
      const { latencyMs, bytesPerMs } = ep.fit;
      for (const iv of sim) expect(iv.end - iv.start).toBeCloseTo(latencyMs + (Number.isFinite(bytesPerMs) ? (iv.bytes ?? 0) / bytesPerMs : 0), 9);
      const simMs = sim.reduce((x, iv) => x + iv.end - iv.start, 0) / workers;
      const simStart = Math.min(...report.simulatedTimeline.intervals.map((iv) => iv.start));
      const simEnd = Math.max(...report.simulatedTimeline.intervals.map((iv) => iv.end));
      expect(f.simA2aShare).toBeCloseTo(simMs / (simEnd - simStart), 12);
      // The fitted line's total over a step's rounds is the rounds' own total (least squares with an intercept; the sizes per stage at their mean).
      expect(f.a2aOwnShare).toBeGreaterThan(0);
      expect(f.a2aOwnShare).toBeLessThanOrEqual(f.a2aShare);
      expect(simMs).toBeCloseTo(ep.perWorker.ownMs, 6);
      expect(f.simStepMs).toBeCloseTo(simEnd - simStart, 9);
      // Overlapped (a forward and backward pair costs max(compute, all-to-alls)): never longer than played after the compute.
      expect(f.simOverlapStepMs).toBeGreaterThan(0);
      expect(f.simOverlapStepMs).toBeLessThanOrEqual(f.simStepMs + 1e-9);
    }
    // The same training three ways (float64: to rounding).
    for (const r of rows) expect(Math.abs(r.f.loss - rows[0].f.loss) / rows[0].f.loss).toBeLessThan(1e-12);
    const [dp, ep, dual] = rows;
    const sentence = epSentence(rows) ?? '';
    expect(sentence.startsWith(`At 4 workers, ep 2 × pp 2, 1F1B took ${ep.f.stepMs.toFixed(1)} ms a step against ${dp.f.stepMs.toFixed(1)} ms for dp 2 × pp 2, 1F1B`)).toBe(true);
    expect(sentence).toContain(`Under DualPipe the step took ${dual.f.stepMs.toFixed(1)} ms`);
    expect(sentence).toContain(`its all-to-alls took ${(100 * ep.f.a2aShare).toFixed(1)}% of the step, the rounds themselves ${(100 * ep.f.a2aOwnShare).toFixed(1)}%`);
    expect(sentence).toContain(`the simulator with the run's times ${(100 * ep.f.simA2aShare).toFixed(1)}%`);
  }, 120_000);

  it('the sentence, on figures given by hand', () => {
    const f = (stepMs: number, a2aShare: number, simA2aShare: number, loss = 3): EpRunFigures => ({ stepMs, simStepMs: stepMs, simOverlapStepMs: stepMs - 1, a2aShare, a2aOwnShare: a2aShare / 2, simA2aShare, loss });
    expect(epSentence([{ key: 'dp', f: f(10, 0, 0) }, { key: 'ep', f: f(15, 0.2, 0.25) }])).toBeNull();
    expect(epSentence([{ key: 'dp', f: f(10, 0, 0) }, { key: 'ep', f: f(15, 0.2, 0.25) }, { key: 'dual', f: f(16, 0.19, 0.2, 3.000003) }])).toBe(
      "At 4 workers, ep took 15.0 ms a step against 10.0 ms for dp (1.50×, slower); its all-to-alls took 20.0% of the step, the rounds themselves 10.0% (the rest waiting for the other ep worker's compute), the simulator with the run's times 25.0%. " +
        "Under DualPipe the step took 16.0 ms (1.07× 1F1B's), the all-to-alls 19.0% of it (the rounds themselves 9.5%, simulated 20.0%): no smaller a share than under 1F1B: the tab's workers run one action at a time, so DualPipe's pairs do not hide one micro-batch's all-to-all under another's compute here. With its pairs overlapped, as on a GPU that runs a forward and a backward chunk at once, the simulator gives 15.0 ms against 16.0 ms played after the compute. " +
        'The final losses agree to 1.0e-6 (relative): the same training.',
    );
    expect(epSentence([{ key: 'dp', f: f(10, 0, 0) }, { key: 'ep', f: f(8, 0.2, 0.25) }, { key: 'dual', f: f(7, 0.1, 0.1) }])).toContain('(0.80×, faster)');
  });
});
