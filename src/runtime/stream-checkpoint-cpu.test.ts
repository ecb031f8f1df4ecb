/**
 * Checkpoints inside a PipeDream-2BW stream (stream-checkpoint.ts), on the CPU reference in-process: the states the
 * stream hands on as its stages end a saved step's block, and at its end, are the run's state at that step; a new
 * stream started from any of them computes the uninterrupted stream's losses and weights bit for bit (one pipeline,
 * replicas, tp); PipeDream, whose weight stash is one version per micro-batch in flight, refuses a start.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import type { TrainProgress } from '../nn/train.ts';
import { defaultRunConfig, type RunConfig } from '../config/run-config.ts';
import { runPipeline } from './coordinator.ts';
import { InProcessRankHost } from './executor/in-process-host.ts';

const hostFactory = (w: number) => new InProcessRankHost(w, new CpuBackend());
const GPT = { dataset: 'names', model: 'gpt', layers: 3, heads: 2, width: 8, blockSize: 16, batchSize: 16 } as const;

const CASES: [string, RunConfig][] = [
  ['spiral MLP, 4 ranks, AdamW', { ...defaultRunConfig(), schedule: 'pipedream-2bw', ranks: 4, microbatches: 4, steps: 9, evalEvery: 0 }],
  ['GPT, 2 replicas × 2 ranks', { ...defaultRunConfig(), ...GPT, schedule: 'pipedream-2bw', dp: 2, ranks: 2, microbatches: 2, steps: 7, evalEvery: 0 }],
  ['GPT, 2 ranks × tp 2', { ...defaultRunConfig(), ...GPT, schedule: 'pipedream-2bw', tp: 2, ranks: 2, microbatches: 2, steps: 7, evalEvery: 0 }],
];

describe('a PipeDream-2BW stream saves its state inside the stream and resumes from it', () => {
  for (const [title, cfg] of CASES) {
    it(title, async () => {
      const saved: TrainProgress[] = [];
      const plain = await runPipeline(cfg, { hostFactory, readWeights: true, progressEvery: 3, onProgress: (p) => saved.push(p) });
      // Steps 3 and 6 inside the stream, then its end.
      expect(saved.map((p) => p.stepsDone)).toEqual([3, 6, cfg.steps]);
      // Every save's read of the state is counted: the two inside the stream, on the workers' path, and the end's.
      expect(plain.stateReads?.count).toBe(3);
      // Each read inside the stream is on its worker's lane of the timeline (replica 0's workers: ranks × tp).
      const reads = plain.timeline.intervals.filter((iv) => iv.op === 'comm' && iv.comm === 'state-read');
      expect(reads).toHaveLength(2 * cfg.ranks * cfg.tp);
      expect(reads.every((iv) => (iv.replica ?? 0) === 0 && iv.end >= iv.start)).toBe(true);
      const last = saved.at(-1) as TrainProgress;
      expect(last.params).toEqual(plain.weights);
      expect(last.losses).toEqual(plain.losses);
      for (const p of saved) {
        expect(p.losses).toEqual(plain.losses.slice(0, p.stepsDone));
        expect(p.optimizer.steps).toBe(p.stepsDone);
        expect(Object.keys(p.previous ?? {}).sort()).toEqual(Object.keys(p.params).sort());
      }
      for (const from of saved.slice(0, 2)) {
        const told: number[] = [];
        const resumed = await runPipeline(cfg, { hostFactory, readWeights: true, from, onStreamLoss: ({ step }) => told.push(step) });
        expect(resumed.losses).toEqual(plain.losses);
        expect(resumed.weights).toEqual(plain.weights);
        // The new stream runs the steps left and tells them by the run's numbers.
        expect(resumed.schedule.microbatches).toBe((cfg.steps - from.stepsDone) * cfg.microbatches);
        expect(told).toEqual(Array.from({ length: cfg.steps - from.stepsDone }, (_, i) => from.stepsDone + i));
      }
    }, 60_000);
  }

  it('a start without the older weight version, or of PipeDream, is refused by what it lacks', async () => {
    const cfg: RunConfig = { ...defaultRunConfig(), schedule: 'pipedream-2bw', ranks: 2, microbatches: 2, steps: 4, evalEvery: 0 };
    const saved: TrainProgress[] = [];
    await runPipeline(cfg, { hostFactory, progressEvery: 2, onProgress: (p) => saved.push(p) });
    const { previous: _previous, ...bare } = saved[0];
    await expect(runPipeline(cfg, { hostFactory, from: bare })).rejects.toThrow(/resumed at step 2 needs the weight version before the latest/);
    await expect(runPipeline({ ...cfg, schedule: 'pipedream' }, { hostFactory, from: bare })).rejects.toThrow(/a run of .* cannot start from a saved state: its weight stash/);
    await expect(runPipeline(cfg, { hostFactory, from: saved.at(-1) })).rejects.toThrow(/^nothing to run: the saved state is of step 4, the stream's last/);
  }, 30_000);
});
