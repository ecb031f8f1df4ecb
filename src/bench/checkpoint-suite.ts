/**
 * The checkpoint suite: for the bench's char-MLP and GPT (benchConfig, 2 ranks,
 * 1F1B), a run that saves every 2 steps into this page's IndexedDB: the
 * checkpoint's size, the state read on the workers' path per save and the
 * encode and store beside training, each beside the run's own mean step time;
 * and a run whose worker crashes after its first checkpoint: the recovery's
 * time (failure to the first step after it) beside the step time. And a
 * PipeDream-2BW stream saving inside it every 2 steps beside the same stream
 * saving only at its end (runs alternated: without, with, without): the
 * stream's time per step with saves against without.
 */
import { runInBrowser } from '../runtime/browser-run.ts';
import type { RunReport } from '../runtime/report/index.ts';
import type { RunConfig } from '../config/run-config.ts';
import { CheckpointStore } from '../run-state/checkpoint-store.ts';
import { runDurably } from '../run-state/durable-run.ts';
import { IdbShelf } from '../run-state/idb-shelf.ts';
import { benchConfig } from './schedules-suite.ts';

export interface CheckpointBenchRow {
  model: string;
  kind: 'save' | 'recovery' | 'stream-save';
  steps: number;
  /** The run's mean step time (wall, steps after the first), ms: the peer of every figure here. */
  stepMs: number;
  /** The checkpoint file, bytes. */
  bytes: number;
  /** Saves, and the state read on the workers' path per save (mean), ms. */
  saves: number;
  stateReadMs: number;
  /** Encode and store per save (mean), beside training, ms. */
  encodeMs: number;
  storeMs: number;
  /** stateReadMs / stepMs: the stall a save adds, in steps. */
  stallSteps: number;
  /** Recovery rows: failure to the first step after it, ms, and in steps; steps redone. */
  recoveryMs?: number;
  recoverySteps?: number;
  stepsRedone?: number;
  /** Stream rows: the stream's wall time per step saving inside it (stepMs) and, its peer, saving only at its end (mean of the runs before and after). */
  peerStepMs?: number;
}

const OPTS = { recvTimeoutMs: 120_000, stepTimeoutMs: 300_000 };

function meanStepMs(r: RunReport): number {
  const steps = r.steps.length > 1 ? r.steps.slice(1) : r.steps;
  return steps.reduce((s, x) => s + x.makespanMs, 0) / Math.max(1, steps.length);
}

function row(model: string, kind: CheckpointBenchRow['kind'], r: RunReport): CheckpointBenchRow {
  const stepMs = meanStepMs(r);
  const read = r.stateReads?.meanMs ?? 0;
  const out: CheckpointBenchRow = {
    model,
    kind,
    steps: r.losses.length,
    stepMs,
    bytes: r.checkpointSaves?.bytes ?? 0,
    saves: r.checkpointSaves?.steps.length ?? 0,
    stateReadMs: read,
    encodeMs: r.checkpointSaves?.meanEncodeMs ?? 0,
    storeMs: r.checkpointSaves?.meanStoreMs ?? 0,
    stallSteps: stepMs > 0 ? read / stepMs : 0,
  };
  if (r.recovery) Object.assign(out, { recoveryMs: r.recovery.recoveryMs, recoverySteps: stepMs > 0 ? r.recovery.recoveryMs / stepMs : 0, stepsRedone: r.recovery.stepsRedone });
  return out;
}

export async function benchCheckpoint(steps: number): Promise<CheckpointBenchRow[]> {
  const store = new CheckpointStore(new IdbShelf());
  const models: [string, RunConfig][] = [
    ['char-mlp', benchConfig({ schedule: '1f1b', ranks: 2, microbatches: 4 }, steps)],
    ['gpt', benchConfig({ schedule: '1f1b', ranks: 2, microbatches: 4, model: 'gpt' }, steps)],
  ];
  const rows: CheckpointBenchRow[] = [];
  for (const [model, base] of models) {
    const cfg = { ...base, checkpointEvery: 2 };
    await store.delete(cfg);
    rows.push(row(model, 'save', await runDurably(cfg, OPTS, { store }, runInBrowser)));
    await store.delete(cfg);
  }
  const [model, base] = models[0];
  const cfg: RunConfig = { ...base, checkpointEvery: 2, fault: { kind: 'crash-worker', action: '1F0', step: 3 } };
  rows.push(row(model, 'recovery', await runDurably(cfg, OPTS, { store }, runInBrowser)));
  await store.delete(cfg);
  for (const [model, base] of models) rows.push(await streamRow(store, model, { ...base, schedule: 'pipedream-2bw' }));
  return rows;
}

/** A 2BW stream saving every 2 steps inside it, beside the same stream saving only at its end (before and after it). */
async function streamRow(store: CheckpointStore, model: string, base: RunConfig): Promise<CheckpointBenchRow> {
  const perStep = (r: RunReport) => r.wallMs / Math.max(1, r.losses.length);
  const once = async (every: number) => {
    const cfg = { ...base, checkpointEvery: every };
    await store.delete(cfg);
    const r = await runDurably(cfg, OPTS, { store }, runInBrowser);
    await store.delete(cfg);
    return r;
  };
  const before = await once(base.steps);
  const saving = await once(2);
  const after = await once(base.steps);
  const out = row(model, 'stream-save', saving);
  return { ...out, stepMs: perStep(saving), peerStepMs: (perStep(before) + perStep(after)) / 2, stallSteps: saving.stateReads ? saving.stateReads.meanMs / perStep(saving) : 0 };
}
