/** The recovery field: validated by field, value and rule (the config, a link, the automation entry); in a link only when not the default; not part of a checkpoint's identity; the smaller mesh its 'fewer' picks. */
import { describe, expect, it } from 'vitest';
import { checkpointKey, CheckpointStore } from '../run-state/checkpoint-store.ts';
import { runDurably } from '../run-state/durable-run.ts';
import { MemoryShelf } from '../run-state/memory-shelf.ts';
import { fewerWorkers } from '../run-state/recut.ts';
import { stateConfig } from '../run-state/run-state.ts';
import { ConfigError } from '../util/errors.ts';
import { configFromQuery, configToQuery, defaultRunConfig, recoveryOf, validateRunConfig, type RunConfig } from '../config/run-config.ts';

const RULE = "must be 'fresh' (a failed run restarts from its last checkpoint on fresh workers, the same mesh) or 'fewer' (on the workers that remain, a smaller mesh)";

describe('recovery', () => {
  it("defaults to 'fresh' when absent", () => {
    expect(recoveryOf(defaultRunConfig())).toBe('fresh');
    expect(recoveryOf({ recovery: 'fewer' })).toBe('fewer');
  });

  it('refuses any other value, naming the field, the value and the rule', () => {
    for (const bad of ['sometimes', 'Fewer', 1, null] as unknown[]) {
      const cfg = { ...defaultRunConfig(), recovery: bad } as RunConfig;
      expect(() => validateRunConfig(cfg)).toThrow(ConfigError);
      expect(() => validateRunConfig(cfg)).toThrow(`: ${RULE}`);
      expect(() => validateRunConfig(cfg)).toThrow(/^recovery = /);
    }
    expect(() => validateRunConfig({ ...defaultRunConfig(), recovery: 'fewer' })).not.toThrow();
  });

  it('is refused the same way through the automation entry (a durable run), before any worker starts', async () => {
    const store = new CheckpointStore(new MemoryShelf());
    let started = 0;
    const cfg = { ...defaultRunConfig(), recovery: 'sometimes' } as unknown as RunConfig;
    await expect(runDurably(cfg, {}, { store }, () => Promise.reject(new Error(`started ${++started}`)))).rejects.toThrow(`recovery = "sometimes": ${RULE}`);
    expect(started).toBe(0);
  });

  it('travels in a link only when not the default, and reads back; a bad value in a link is reported and left absent', () => {
    expect(configToQuery({ ...defaultRunConfig(), recovery: 'fresh' })).not.toContain('recovery');
    const q = configToQuery({ ...defaultRunConfig(), recovery: 'fewer' });
    expect(q).toContain('recovery=fewer');
    const back = configFromQuery(q);
    expect(back.errors).toEqual([]);
    expect(back.config.recovery).toBe('fewer');
    const bad = configFromQuery('recovery=always');
    expect(bad.errors.map((e) => e.message)).toEqual([`recovery = "always": ${RULE}`]);
    expect('recovery' in bad.config).toBe(false);
  });

  it('is not kept in a checkpoint, nor part of the key its checkpoints are stored under', () => {
    const cfg: RunConfig = { ...defaultRunConfig(), recovery: 'fewer' };
    expect('recovery' in stateConfig(cfg)).toBe(false);
    expect(checkpointKey(cfg)).toBe(checkpointKey(defaultRunConfig()));
  });
});

describe("the smaller mesh of recovery = 'fewer'", () => {
  const base: RunConfig = { ...defaultRunConfig(), layers: 3, batchSize: 16, microbatches: 2, recovery: 'fewer' };

  it('dp = 1: ranks − 1, the blocks re-cut; an explicit cut becomes the balanced-FLOPs cut, said so', () => {
    const r = fewerWorkers({ ...base, ranks: 3, partition: 'cut', cut: [1, 1, 2] });
    expect(r.config).toMatchObject({ ranks: 2, dp: 1, partition: 'flops' });
    expect('cut' in r.config).toBe(false);
    expect(r.before).toEqual({ dp: 1, ranks: 3, virtual: 1, schedule: '1f1b', workers: 3 });
    expect(r.after).toEqual({ dp: 1, ranks: 2, virtual: 1, schedule: '1f1b', workers: 2 });
    expect(r.how).toMatch(/explicit cut \(one entry per stage\) replaced by the balanced-FLOPs cut/);
  });

  it('dp > 1: a replica dropped when the batch stays divisible (ZeRO-1 kept with two replicas left), else ranks − 1', () => {
    // 24 rows: 4 × 2 micro-batches divide them, 3 × 2 do too.
    expect(fewerWorkers({ ...base, ranks: 2, dp: 4, zero: 1, batchSize: 24 }).config).toMatchObject({ dp: 3, ranks: 2, zero: 1 });
    // 16 rows: 3 × 2 does not divide them: one rank fewer in each of the 4 replicas.
    expect(fewerWorkers({ ...base, ranks: 2, dp: 4, zero: 1, batchSize: 16 }).config).toMatchObject({ dp: 4, ranks: 1, zero: 1 });
  });

  it('none: ranks = 1 with dp = 1, or ranks = 1 with an indivisible batch, named', () => {
    expect(() => fewerWorkers({ ...base, ranks: 1 })).toThrow(/^no smaller mesh to recover on: the run has ranks = 1 and dp = 1, one worker$/);
    expect(() => fewerWorkers({ ...base, ranks: 1, dp: 3, batchSize: 18 })).toThrow(
      /^no smaller mesh to recover on: the run has ranks = 1 and dp = 3 \(dropping a replica would leave batchSize 18 not divisible by dp × microbatches = 2 × 2\)$/,
    );
  });
});
