/**
 * Pausing a stream (stream-pause.ts), on the CPU reference in-process: PipeDream and PipeDream-2BW (one window of all
 * their steps) paused in the middle for far longer than a worker waits for a peer's message hold every worker, then
 * go on to the uninterrupted run's losses and weights bit for bit; the pause is cut out of the timeline and the
 * stream's time; pausing and stopping ends the stream at a step boundary as a stop does.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { defaultRunConfig, type RunConfig } from '../config/run-config.ts';
import { runPipeline } from './coordinator.ts';
import { InProcessRankHost } from './executor/in-process-host.ts';
import { PauseState } from './executor/stream-pause.ts';

const hostFactory = (w: number) => new InProcessRankHost(w, new CpuBackend());
const RECV_TIMEOUT_MS = 1000;
const PAUSE_MS = 3000;

/** The largest stretch in which none of `intervals` runs. */
function largestHole(intervals: readonly { start: number; end: number }[]): number {
  const sorted = [...intervals].sort((a, b) => a.start - b.start);
  let reach = sorted[0]?.end ?? 0;
  let hole = 0;
  for (const iv of sorted) {
    if (iv.start > reach) hole = Math.max(hole, iv.start - reach);
    reach = Math.max(reach, iv.end);
  }
  return hole;
}

const CASES: [string, RunConfig][] = [
  ['PipeDream-2BW, spiral MLP, 4 ranks', { ...defaultRunConfig(), schedule: 'pipedream-2bw', ranks: 4, microbatches: 4, steps: 40, evalEvery: 0 }],
  ['PipeDream, spiral MLP, 3 ranks', { ...defaultRunConfig(), schedule: 'pipedream', ranks: 3, microbatches: 4, steps: 40, evalEvery: 0 }],
  ['PipeDream-2BW, GPT, 2 replicas × 2 ranks (their ring all-reduces held too)', { ...defaultRunConfig(), dataset: 'names', model: 'gpt', layers: 3, heads: 2, width: 8, blockSize: 16, batchSize: 16, schedule: 'pipedream-2bw', dp: 2, ranks: 2, microbatches: 2, steps: 24, evalEvery: 0 }],
];

describe('a paused stream holds every worker and goes on to the same numbers', () => {
  for (const [title, cfg] of CASES) {
    it(title, async () => {
      const plain = await runPipeline(cfg, { hostFactory, readWeights: true, recvTimeoutMs: 10_000 });

      const sw = new PauseState();
      let pausedAt: number | null = null;
      let resumedAt = 0;
      const doneDuringPause: number[] = [];
      const t0 = performance.now();
      const paused = await runPipeline(cfg, {
        hostFactory,
        readWeights: true,
        recvTimeoutMs: RECV_TIMEOUT_MS,
        pause: sw,
        onStreamProgress: ({ stepsDone }) => {
          if (pausedAt === null && stepsDone >= 2) {
            pausedAt = performance.now();
            sw.set(true);
            setTimeout(() => {
              resumedAt = performance.now();
              sw.set(false);
            }, PAUSE_MS);
          } else if (pausedAt !== null && resumedAt === 0 && performance.now() - pausedAt > 200) doneDuringPause.push(stepsDone);
        },
      });
      const wall = performance.now() - t0;

      expect(pausedAt).not.toBeNull();
      // Held: the stream finished after the resume, and no step was told done once the pause had settled.
      expect(resumedAt).toBeGreaterThan(0);
      expect(doneDuringPause).toEqual([]);
      // The same run: losses and weights bit for bit.
      expect(paused.losses).toEqual(plain.losses);
      expect(paused.weights).toEqual(plain.weights);
      // The pause is out of the timeline (no stretch without compute on every lane, the makespan) and of the stream's time.
      const compute = paused.timeline.intervals.filter((iv) => iv.op === 'F' || iv.op === 'B' || iv.op === 'I' || iv.op === 'W');
      expect(largestHole(compute)).toBeLessThan(PAUSE_MS / 2);
      expect(paused.makespanMs.measured).toBeLessThan(wall - PAUSE_MS * 0.8);
      expect(paused.wallMs).toBeLessThan(wall - PAUSE_MS * 0.8);
    }, 60_000);
  }

  it('a stop while paused lets the workers go and ends the stream at a step boundary', async () => {
    const cfg: RunConfig = { ...defaultRunConfig(), schedule: 'pipedream-2bw', ranks: 2, microbatches: 4, steps: 60, evalEvery: 0 };
    const sw = new PauseState();
    const stop = new AbortController();
    const report = await runPipeline(cfg, {
      hostFactory,
      recvTimeoutMs: RECV_TIMEOUT_MS,
      pause: sw,
      signal: stop.signal,
      onStreamProgress: ({ stepsDone }) => {
        if (stepsDone >= 2 && !sw.isPaused && !stop.signal.aborted) {
          sw.set(true);
          setTimeout(() => stop.abort(), 800);
        }
      },
    });
    // Still paused (the switch was never turned off): the stop let the workers go.
    expect(sw.isPaused).toBe(true);
    expect(report.losses.length).toBeGreaterThanOrEqual(2);
    expect(report.losses.length).toBeLessThan(60);
    expect(report.losses.every(Number.isFinite)).toBe(true);
  }, 60_000);
});
