/**
 * The checkpoint store over the in-memory shelf (the IndexedDB shelf runs the
 * same checks in Chromium: e2e/checkpoints.spec.ts): save, list, load the
 * latest or a given step, keep the last few saves per configuration, refuse a
 * bad file without storing it, and report a full or refused storage with a
 * message, leaving what was stored unchanged.
 */
import { describe, expect, it } from 'vitest';
import { defaultRunConfig, type RunConfig } from '../config/run-config.ts';
import { lrAt } from '../nn/train-config.ts';
import { CheckpointError } from './checkpoint-error.ts';
import { checkpointKey, CheckpointStore } from './checkpoint-store.ts';
import { encodeRunState } from './codec.ts';
import { MemoryShelf } from './memory-shelf.ts';
import { initialRunState, type RunState } from './run-state.ts';

const cfg: RunConfig = { ...defaultRunConfig(), hidden: 4, layers: 3, steps: 20 };
const other: RunConfig = { ...cfg, seed: 2 };

/** The state of `config` as if `step` steps were done (the initial weights; the fields a step moves). */
async function at(config: RunConfig, step: number): Promise<RunState> {
  const s = await initialRunState(config);
  return { ...s, stepsDone: step, lrNext: lrAt(config, step), data: { seed: config.seed, nextBatch: step }, losses: Array.from({ length: step }, (_, i) => 1 / (i + 1)) };
}

function clock(): () => number {
  let t = 1_000;
  return () => (t += 10);
}

async function rejection(p: Promise<unknown>): Promise<CheckpointError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  if (!(e instanceof CheckpointError)) throw new Error(`expected a CheckpointError, got ${String(e)}`);
  return e;
}

describe('checkpoint store', () => {
  it('saves, lists per configuration, loads the latest or a given step, deletes', async () => {
    const store = new CheckpointStore(new MemoryShelf(), 3, clock());
    for (const s of [5, 10]) await store.save(await at(cfg, s));
    await store.save(await at(other, 5));
    expect((await store.list(cfg)).map((c) => [c.config, c.step])).toEqual([[checkpointKey(cfg), 5], [checkpointKey(cfg), 10]]);
    expect(checkpointKey(cfg)).toContain('hidden=4');
    expect(await store.list()).toHaveLength(3);
    expect((await store.latest(cfg))?.step).toBe(10);
    const latest = await store.load(cfg);
    expect(latest).toEqual(await at(cfg, 10));
    expect((await store.load(cfg, 5)).stepsDone).toBe(5);
    expect((await store.readFile(cfg, 5)).length).toBe((await store.list(cfg))[0].bytes);
    expect(await store.delete(cfg, 5)).toBe(1);
    expect(await store.delete(cfg)).toBe(1);
    expect(await store.list(cfg)).toEqual([]);
    expect((await rejection(store.load(cfg))).message).toBe('no checkpoint is stored for this configuration');
    expect((await rejection(store.load(cfg, 5))).kind).toBe('not-found');
    expect(await store.list(other)).toHaveLength(1);
  });

  it('keeps the last `keep` saves of each configuration; saving a step again replaces it', async () => {
    const store = new CheckpointStore(new MemoryShelf(), 3, clock());
    for (const s of [1, 2, 3, 4, 5]) await store.save(await at(cfg, s));
    await store.save(await at(other, 1));
    expect((await store.list(cfg)).map((c) => c.step)).toEqual([3, 4, 5]);
    await store.save(await at(cfg, 4));
    expect((await store.list(cfg)).map((c) => c.step)).toEqual([3, 4, 5]);
    // Resumed from step 3 and saved at 6: the oldest save (3) goes, the newer ones stay.
    await store.save(await at(cfg, 6));
    expect((await store.list(cfg)).map((c) => c.step)).toEqual([4, 5, 6]);
    expect((await store.list(other)).map((c) => c.step)).toEqual([1]);
  });

  it('a loaded checkpoint must be of the configuration asked for, unless the differing fields are ignored', async () => {
    const store = new CheckpointStore(new MemoryShelf());
    await store.save(await at(cfg, 3));
    // Another configuration has its own key: nothing stored under it.
    expect((await rejection(store.load({ ...cfg, lr: 0.02 }))).kind).toBe('not-found');
    expect((await store.load(cfg, 3, ['ranks'])).stepsDone).toBe(3);
  });

  it('a bad file is refused before it is stored', async () => {
    const store = new CheckpointStore(new MemoryShelf());
    const good = encodeRunState(await at(cfg, 2));
    expect((await store.saveFile(good)).step).toBe(2);
    const bad = Uint8Array.from(good);
    bad[bad.length - 1] ^= 1;
    expect((await rejection(store.saveFile(bad))).kind).toBe('corrupt');
    expect((await rejection(store.saveFile(good.subarray(0, 100)))).kind).toBe('truncated');
    expect(await store.list()).toHaveLength(1);
  });

  it('storage full: refused with a message; what was stored is unchanged', async () => {
    const size = encodeRunState(await at(cfg, 1)).length;
    const shelf = new MemoryShelf({ capacityBytes: 2 * size + 100 });
    const store = new CheckpointStore(shelf, 3, clock());
    await store.save(await at(cfg, 1));
    await store.save(await at(cfg, 2));
    const before = await store.list();
    const e = await rejection(store.save(await at(cfg, 3)));
    expect(e.kind).toBe('storage-full');
    expect(e.message).toMatch(/^storage full: the checkpoint of step 3 \([\d.]+ kB\) was not saved: the browser refused the space \(QuotaExceededError\); the stored checkpoints are unchanged/);
    expect(await store.list()).toEqual(before);
    expect((await store.load(cfg, 2)).stepsDone).toBe(2);
    // With keep = 2 the same save fits: the oldest goes in the same step.
    const tight = new CheckpointStore(shelf, 2, clock());
    await tight.save(await at(cfg, 3));
    expect((await tight.list(cfg)).map((c) => c.step)).toEqual([2, 3]);
  });

  it('storage denied (private browsing): every call says so; nothing is thrown but a CheckpointError', async () => {
    const store = new CheckpointStore(new MemoryShelf({ denied: true }));
    const e = await rejection(store.save(await at(cfg, 1)));
    expect(e.kind).toBe('storage-denied');
    expect(e.message).toMatch(/^storage unavailable: the checkpoint of step 1 \([\d.]+ kB\) was not saved: the browser refuses this page's storage \(SecurityError: storage is not available; private browsing or blocked site data\?\)/);
    expect((await rejection(store.list())).message).toMatch(/^storage unavailable: the stored checkpoints could not be listed/);
    expect((await rejection(store.load(cfg))).kind).toBe('storage-denied');
  });
});

describe('the latest checkpoint', () => {
  it('is the one saved last, not the one with the most steps (a finished run, then a run stopped early)', async () => {
    const store = new CheckpointStore(new MemoryShelf(), 3, clock());
    await store.save(await at(cfg, 10));
    await store.save(await at(cfg, 4));
    expect((await store.latest(cfg))?.step).toBe(4);
    expect((await store.load(cfg)).stepsDone).toBe(4);
  });
});
