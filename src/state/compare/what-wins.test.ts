/** The "what wins here" sweep: the model's costs over m, each schedule simulated, the fastest that fits the cap. */
import { describe, expect, it } from 'vitest';
import { defaultRunConfig, withDataset, type RunConfig } from '../../config/run-config.ts';
import { simulate } from '../../schedule/index.ts';
import { generateSchedule } from '../../schedule/registry.ts';
import { measuredWinner, sweepMicrobatches, sweepSentence, whatWins } from './what-wins.ts';
import { stageCut } from '../../config/run-limits.ts';
import { costModelOf } from '../../plan/plan.ts';
import { flopsProfile } from '../../plan/flops-profile.ts';

const cfg: RunConfig = { ...withDataset(defaultRunConfig(), 'names'), layers: 7, hidden: 32, ranks: 4, batchSize: 128, microbatches: 8, schedule: '1f1b', virtual: 1 };
const names = ['gpipe', '1f1b', 'interleaved-1f1b', 'zb-h1'] as const;

describe('what wins here', () => {
  it('sweeps multiples of p that divide the batch, with the current m', () => {
    expect(sweepMicrobatches(cfg)).toEqual([4, 8, 12, 16, 24, 32].filter((m) => 128 % m === 0));
    expect(sweepMicrobatches({ ...cfg, microbatches: 2 })).toContain(2);
  });

  it('each point is the simulator\'s own play of that schedule; the winner is the fastest; the bubble falls with m', () => {
    const s = whatWins(cfg, names, 2, [4, 16]);
    expect(s.points.length).toBe(8);
    for (const p of s.points) {
      expect(p.step).toBeGreaterThan(0);
      expect(p.fits).toBe(true);
    }
    const at = (name: string, m: number) => s.points.find((p) => p.schedule === name && p.m === m)!;
    // Zero bubble's split backward fills 1F1B's bubble; GPipe and 1F1B have the same bubble.
    expect(at('zb-h1', 16).bubble).toBeLessThan(at('1f1b', 16).bubble);
    expect(at('gpipe', 16).bubble).toBeCloseTo(at('1f1b', 16).bubble, 9);
    expect(at('1f1b', 16).bubble).toBeLessThan(at('1f1b', 4).bubble);
    s.ms.forEach((m, i) => {
      const fastest = s.points.filter((p) => p.m === m).reduce((a, b) => (b.step < a.step ? b : a));
      expect(s.winners[i]).toBe(fastest.schedule);
    });
    // With equal stages the bubble is the closed form's: 1F1B (p − 1)/(m + p − 1) at p = 4, m = 16 (this model's stages are near equal).
    expect(at('1f1b', 16).bubble).toBeGreaterThan(0.5 * (3 / 19));
    expect(at('1f1b', 16).bubble).toBeLessThan(3 * (3 / 19));
    expect(simulate(generateSchedule('1f1b', 4, 16)).bubble).toBeCloseTo(3 / 19, 9);
  });

  it('a memory cap leaves out what holds more: GPipe (all m micro-batches) first; below every schedule nothing fits', () => {
    const free = whatWins(cfg, names, 2, [16]);
    const peak = (n: string) => free.points.find((p) => p.schedule === n)!.peakBytes;
    expect(peak('gpipe')).toBeGreaterThan(peak('1f1b'));
    const capped = whatWins(cfg, names, 2, [16], peak('1f1b'));
    expect(capped.points.find((p) => p.schedule === 'gpipe')!.fits).toBe(false);
    expect(capped.points.find((p) => p.schedule === '1f1b')!.fits).toBe(true);
    expect(capped.winners[0]).not.toBe('gpipe');
    const none = whatWins(cfg, names, 2, [16], 1);
    expect(none.winners).toEqual([null]);
    expect(sweepSentence(none, (n) => n)).toMatch(/nothing fits from m = 16/);
  });

  it('names the sizes a schedule refuses (more micro-batches than a schedule may hold) instead of simulating them', () => {
    const s = whatWins(cfg, ['1f1b'], 1, [100_000]);
    expect(s.points).toHaveLength(0);
    expect(s.skipped[0].why).toMatch(/microbatches/);
  });

  it('PipeDream and 2BW sweep with their stream\'s steady step: the slowest stage\'s m micro-batches, no fill or drain, under 1F1B\'s step', () => {
    const s = whatWins(cfg, ['1f1b', 'pipedream', 'pipedream-2bw'], 1, [4, 16]);
    const at = (name: string, m: number) => s.points.find((p) => p.schedule === name && p.m === m)!;
    const rowsOf = (m: number) => Math.round(cfg.batchSize / m);
    for (const m of [4, 16]) {
      // The bottleneck: the stage whose F + B over a step's m micro-batches is the most (the model's own FLOP costs).
      const costs = costModelOf(flopsProfile(stageCut({ ...cfg, layers: 7 }).spec, rowsOf(m)), stageCut({ ...cfg, layers: 7 }).stageBlocks);
      const F = costs.F as number[], B = costs.B as number[];
      const slowest = Math.max(...F.map((f, i) => m * (f + B[i])));
      expect(at('pipedream-2bw', m).step, `m ${m}`).toBeCloseTo(slowest, 6);
      expect(at('pipedream', m).step).toBeCloseTo(slowest, 6);
      expect(at('pipedream-2bw', m).step).toBeLessThan(at('1f1b', m).step);
      // Its activations are 1F1B's.
      expect(at('pipedream-2bw', m).peakBytes).toBe(at('1f1b', m).peakBytes);
    }
    // 2BW's own rule: m ≥ p (a step of 2 on 4 ranks) is named, not simulated.
    const small = whatWins(cfg, ['pipedream-2bw'], 1, [2]);
    expect(small.points).toHaveLength(0);
    expect(small.skipped[0].why).toMatch(/m ≥ p/);
    expect(sweepSentence(s, (n) => n)).toMatch(/pipedream/);
  });
});

describe('the measured winner', () => {
  it('goes by the whole step: DualPipe’s shorter compute loses to 1F1B once its copies’ sum is counted; a stream by its window ÷ steps', () => {
    const done = (makespanMs: number, stepMs: number) => ({ status: 'done', makespanMs, stepMs });
    const m = { '1f1b': done(70, 70), dualpipe: done(60, 75), 'pipedream-2bw': done(3 * 72, 3 * 72), gpipe: { status: 'running', makespanMs: null, stepMs: null } };
    expect(measuredWinner(m, ['1f1b', 'dualpipe', 'gpipe'], 3)).toEqual({ name: '1f1b', ms: 70 });
    expect(measuredWinner(m, ['dualpipe', 'pipedream-2bw'], 3)).toEqual({ name: 'pipedream-2bw', ms: 72 });
    expect(measuredWinner({ ...m, dualpipe: done(60, 65) }, ['1f1b', 'dualpipe'], 3)).toEqual({ name: 'dualpipe', ms: 65 });
    expect(measuredWinner(m, ['gpipe'], 3)).toBeNull();
  });
});
