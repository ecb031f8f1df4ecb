import { describe, expect, it } from 'vitest';
import { defaultRunConfig, RUN_SCHEDULES, validateRunConfig, withDataset } from '../../config/run-config.ts';
import { defaultSimParams } from './sim-params.ts';
import { MAX_URL_PROBLEMS, readUrlState, urlConfigOf, urlQueryFor } from './url-state.ts';

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

  it('a link naming only a data set opens the model that choosing it in the menu gives', () => {
    const fromLink = readUrlState('?dataset=names&ranks=4&microbatches=8&schedule=1f1b&steps=50');
    expect(fromLink.problems).toEqual([]);
    const menu = withDataset(defaultRunConfig(), 'names');
    expect(fromLink.config).toEqual({ ...menu, steps: 50 });
    expect(fromLink.config).toMatchObject({ model: 'char-mlp', hidden: 128, activation: 'gelu', batchSize: 256 });
  });

  it('names each bad value as typed and keeps the rest', () => {
    const s = readUrlState('?ranks=abc&hidden=40&view=nope&sim.latency=-1&sim.ranks=16&compare.schedules=1f1b,nope&compare.steps=2');
    expect(s.problems.map((p) => p.message)).toEqual([
      'ranks = "abc": must be a number in decimal notation, such as 12 or 0.01',
      'sim.latency = -1: must be at least 0',
      'compare.schedules = "1f1b,nope": "nope" not among gpipe, 1f1b, interleaved-1f1b, zb-h1, interleaved-zb, zb-v, looped-bfs, dualpipe-v, dualpipe, hanayo, auto, pipedream, pipedream-2bw',
      'view = "nope": must be one of run, compare, simulate',
    ]);
    expect(s.config.hidden).toBe(40);
    expect(s.config.ranks).toBe(defaultRunConfig().ranks);
    expect(s.sim.ranks).toBe(16);
    expect(s.sim.latency).toBe(0);
    expect(s.view).toBe('run');
    expect(s.compare.steps).toBe(2);
  });

  it('refuses hex, binary and other non-decimal numbers instead of reading them', () => {
    const s = readUrlState('?seed=0x10&ranks=0b11&hidden=1_000&layers=%20');
    expect(s.problems.map((p) => p.message)).toEqual([
      'seed = "0x10": must be a number in decimal notation, such as 12 or 0.01',
      'ranks = "0b11": must be a number in decimal notation, such as 12 or 0.01',
      'hidden = "1_000": must be a number in decimal notation, such as 12 or 0.01',
      'layers = " ": must be a number in decimal notation, such as 12 or 0.01',
    ]);
    expect(s.config.seed).toBe(defaultRunConfig().seed);
    expect(s.config.ranks).toBe(defaultRunConfig().ranks);
    // Plain decimal forms are read.
    expect(readUrlState('?lr=1e-3&seed=+7&ranks=2.0').config).toMatchObject({ lr: 0.001, seed: 7, ranks: 2 });
  });

  it('words a problem the same for the page, urlConfig() and a configuration object', async () => {
    const page = readUrlState('?lr=Infinity').problems.map((p) => p.message);
    expect(page).toEqual(['lr = Infinity: must be a finite number']);
    expect(urlConfigOf('?lr=Infinity').errors).toEqual(page);
    expect(() => validateRunConfig({ ...defaultRunConfig(), lr: Infinity })).toThrow(page[0]);
  });

  it('refuses unknown keys naming the nearest known key, and knows the page keys', () => {
    const s = readUrlState('?foo=1&stages=4&__proto__=x&hiden=32&view=simulate&sim.ranks=8&compare.steps=2');
    expect(s.problems.map((p) => p.message)).toEqual([
      expect.stringMatching(/^foo = "1": is not a known URL key; the nearest is "/),
      'stages = "4": is not a known URL key; the nearest is "steps"',
      expect.stringMatching(/^__proto__ = "x": is not a known URL key; the nearest is "/),
      'hiden = "32": is not a known URL key; the nearest is "hidden"',
    ]);
    expect(s.view).toBe('simulate');
    expect(s.config.hidden).toBe(defaultRunConfig().hidden);
  });

  it('cuts an echoed value to a readable length', () => {
    const long = 'a'.repeat(8000);
    const [message] = readUrlState(`?schedule=${long}`).problems.map((p) => p.message);
    expect(message).toMatch(/^schedule = "a{60}…" \(8000 characters\): must be one of /);
    // The echo is cut; the rest is the rule and the list of schedules.
    expect(message.replace(RUN_SCHEDULES.join(', '), '').length).toBeLessThan(120);
  });

  it('a clash with a reverted value reverts the key it clashes with, not the latest one the link gave', () => {
    // virtual = 2 cannot be cut from 4 blocks on 4 ranks; at its default (1) zb-v clashes with it, not steps.
    const s = readUrlState('?model=gpt&dataset=names&schedule=zb-v&virtual=2&steps=40');
    expect(s.problems.map((p) => p.message)).toEqual([
      expect.stringMatching(/^virtual = 2: ranks × virtual = 8 stages/),
      'schedule = "zb-v": zb-v holds exactly 2 stages per rank (a V), so virtual must be 2 (with virtual at its default, 1)',
    ]);
    expect(s.config).toMatchObject({ steps: 40, model: 'gpt', schedule: defaultRunConfig().schedule, virtual: 1 });
  });

  it('a link to hanayo keeps its waves as virtual = 2W and refuses an odd virtual by name', () => {
    const ok = readUrlState('?schedule=hanayo&virtual=4&layers=15');
    expect(ok.problems).toEqual([]);
    expect(ok.config).toMatchObject({ schedule: 'hanayo', virtual: 4, layers: 15 });
    const odd = readUrlState('?schedule=hanayo&virtual=3&layers=15');
    // virtual reverts to its default, 1, with which hanayo clashes in turn (as zb-v does below).
    const rule = 'hanayo holds 2 stages per rank in each of its W waves (down the ranks and back up), so virtual = 2W must be even (2, 4, …)';
    expect(odd.problems.map((p) => p.message)).toEqual([`virtual = 3: ${rule}`, `schedule = "hanayo": ${rule} (with virtual at its default, 1)`]);
    expect(odd.config).toMatchObject({ schedule: defaultRunConfig().schedule, virtual: 1, layers: 15 });
  });

  it('sim.* problems name the value the link gave, not a default', () => {
    const s = readUrlState('?sim.microbatches=8192&sim.ranks=512&sim.virtual=16');
    const messages = s.problems.map((p) => p.message);
    expect(messages[0]).toMatch(/^sim\.microbatches = 8192: ranks · virtual · microbatches · ops = 134217728 actions/);
    // Every message names a value the link holds.
    for (const m of messages) expect(m).toMatch(/^sim\.(microbatches = 8192|ranks = 512|virtual = 16): /);
    expect(s.sim.ranks * s.sim.virtual * s.sim.microbatches * 2).toBeLessThanOrEqual(2_000_000);
  });

  it('lists at most a dozen problems for a link full of unknown keys', () => {
    const query = Array.from({ length: 1000 }, (_, i) => `k${i}=1`).join('&');
    const problems = readUrlState(`?${query}`).problems.map((p) => p.message);
    expect(problems).toHaveLength(MAX_URL_PROBLEMS);
    expect(problems[0]).toMatch(/^k0 = "1": is not a known URL key/);
    expect(problems[MAX_URL_PROBLEMS - 1]).toBe(`… and ${1000 - (MAX_URL_PROBLEMS - 1)} more problems in the link`);
  });
});
