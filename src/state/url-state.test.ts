import { describe, expect, it } from 'vitest';
import { defaultRunConfig } from '../runtime/run-config.ts';
import { defaultSimParams } from './sim-params.ts';
import { readUrlState, urlQueryFor } from './url-state.ts';

describe('URL state', () => {
  it('round-trips a configuration, the view and the simulation parameters', () => {
    const config = { ...defaultRunConfig(), dataset: 'moons' as const, ranks: 2, microbatches: 4, batchSize: 32, schedule: 'gpipe' as const, lr: 0.003, seed: 9 };
    const sim = { ...defaultSimParams(), schedule: 'zb-v' as const, virtual: 2, ranks: 8, microbatches: 32, latency: 0.25 };
    const compare = { schedules: ['1f1b' as const, 'zb-v' as const], virtual: 3, steps: 5 };
    const back = readUrlState(`?${urlQueryFor(config, sim, 'simulate', compare)}`);
    expect(back.problems).toEqual([]);
    expect(back.compare).toEqual(compare);
    expect(back.config).toEqual(config);
    expect(back.sim).toEqual(sim);
    expect(back.view).toBe('simulate');
  });

  it('names each bad value as typed and keeps the rest', () => {
    const s = readUrlState('?ranks=abc&hidden=40&view=nope&sim.latency=-1&sim.ranks=16&compare.schedules=1f1b,nope&compare.steps=2');
    expect(s.problems.map((p) => p.message)).toEqual([
      'ranks = "abc": must be a number',
      'sim.latency = -1: must be at least 0',
      'compare.schedules = "1f1b,nope": "nope" not among gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v, looped-bfs, dualpipe-v, auto',
      'view = "nope": must be one of run, compare, simulate',
    ]);
    expect(s.config.hidden).toBe(40);
    expect(s.config.ranks).toBe(defaultRunConfig().ranks);
    expect(s.sim.ranks).toBe(16);
    expect(s.sim.latency).toBe(0);
    expect(s.view).toBe('run');
    expect(s.compare.steps).toBe(2);
  });
});
