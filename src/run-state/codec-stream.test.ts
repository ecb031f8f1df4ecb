/**
 * A PipeDream-2BW state from inside its stream in the run-state file: its previous weight version travels as
 * `previous.<param>` and decodes back equal; the file of a 2BW state after its first step must hold it and any other
 * state must not, each refusal a CheckpointError saying which; a damaged previous tensor is named.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import type { TrainProgress } from '../nn/train.ts';
import { defaultRunConfig, type RunConfig } from '../config/run-config.ts';
import { runPipeline } from '../runtime/coordinator.ts';
import { InProcessRankHost } from '../runtime/executor/in-process-host.ts';
import { decodeRunState, encodeRunState, previousTensorName } from './codec.ts';
import { runStateOf } from './run-state.ts';
import { refusal } from './testing/refusal.ts';
import { editHeader, headerOf } from './testing/edit-file.ts';

const cfg: RunConfig = { ...defaultRunConfig(), hidden: 8, layers: 3, batchSize: 16, schedule: 'pipedream-2bw', ranks: 2, microbatches: 2, steps: 6, evalEvery: 0 };

async function streamStates(): Promise<TrainProgress[]> {
  const saved: TrainProgress[] = [];
  await runPipeline(cfg, { hostFactory: (w) => new InProcessRankHost(w, new CpuBackend()), progressEvery: 2, onProgress: (p) => saved.push(p) });
  return saved;
}


describe("PipeDream-2BW's previous weight version in the run-state file", () => {
  it('is written as previous.<param> and read back equal; a 2BW state needs it and another state may not hold it', async () => {
    const saved = await streamStates();
    expect(saved.map((p) => p.stepsDone)).toEqual([2, 4, 6]);
    const state = runStateOf(cfg, saved[0]);
    const bytes = encodeRunState(state);
    const back = decodeRunState(bytes, { config: cfg });
    expect(back).toEqual(state);
    const h = headerOf(bytes);
    for (const p of Object.keys(state.params)) expect(h[previousTensorName(p)]).toBeDefined();
    // The two versions differ: the file holds a real older version, not a copy of the latest.
    const first = Object.keys(state.params)[0];
    expect(Array.from(back.previous?.[first] ?? [])).not.toEqual(Array.from(back.params[first]));

    const { previous: _p, ...bare } = state;
    expect(refusal(() => encodeRunState(bare)).message).toMatch(/a PipeDream-2BW state after 2 steps needs its previous weight version/);
    const sync = { ...state, config: { ...state.config, schedule: '1f1b' as const } };
    expect(refusal(() => encodeRunState(sync)).message).toMatch(/a state of 1f1b after 2 steps holds no previous weight version/);

    // A previous tensor of the wrong shape is named.
    const wrong = editHeader(bytes, (hd) => {
      const t = hd[previousTensorName(first)] as { shape: number[] };
      t.shape = [t.shape.reduce((a, b) => a * b, 1)];
    });
    expect(refusal(() => decodeRunState(wrong)).message).toMatch(new RegExp(`tensor previous\\.${first.replace(/\./g, '\\.')} is \\[`));
  }, 30_000);
});
