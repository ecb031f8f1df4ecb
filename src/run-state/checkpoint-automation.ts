/**
 * window.pipelab.checkpoints: the checkpoints this origin keeps in IndexedDB,
 * for automation and tests (plain data in and out; files as Uint8Array). A
 * refusal rejects with the CheckpointError's message.
 */
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice } from '../nn/train.ts';
import { snapshotRunConfig } from '../config/config-snapshot.ts';
import { toTrainConfig, validateRunConfig, type RunConfig } from '../config/run-config.ts';
import { requireInt } from '../util/errors.ts';
import { CheckpointStore, type CheckpointInfo } from './checkpoint-store.ts';
import { encodeRunState } from './codec.ts';
import { pageCheckpoints } from './page-checkpoints.ts';
import { runStateOf } from './run-state.ts';

export interface CheckpointAutomation {
  /** The stored checkpoints (of `config` only, when given). */
  list(config?: RunConfig): Promise<CheckpointInfo[]>;
  /** The file of `config`'s checkpoint at `step` (default: the latest). */
  read(config: RunConfig, step?: number): Promise<Uint8Array>;
  /** What `config`'s checkpoint at `step` (default: the latest) holds, checked whole and against `config`. */
  inspect(config: RunConfig, step?: number): Promise<{ stepsDone: number; losses: number[]; lrNext: number; producer: string; params: number }>;
  /** Checks a checkpoint file whole and stores it under its own configuration and step. */
  store(bytes: Uint8Array): Promise<CheckpointInfo>;
  /** Deletes `config`'s checkpoint at `step`, or all of them; resolves to how many. */
  remove(config: RunConfig, step?: number): Promise<number>;
  /** The file of `config`'s float64 single-device run (the CPU reference) stopped after `steps` steps (default 0: the seeded initial state). */
  reference(config: RunConfig, steps?: number): Promise<Uint8Array>;
}

export function checkpointAutomation(store: CheckpointStore = pageCheckpoints): CheckpointAutomation {
  return {
    list: (config) => store.list(config),
    read: (config, step) => store.readFile(config, step),
    async inspect(config, step) {
      const s = await store.load(config, step);
      return { stepsDone: s.stepsDone, losses: s.losses, lrNext: s.lrNext, producer: s.producer, params: Object.keys(s.params).length };
    },
    store: (bytes) => store.saveFile(bytes),
    remove: (config, step) => store.delete(config, step),
    async reference(input, steps = 0) {
      const config = snapshotRunConfig(input);
      validateRunConfig(config);
      requireInt('steps', steps, 0, config.steps);
      let done = 0;
      const r = await trainSingleDevice(new CpuBackend(), toTrainConfig(config), { onStep: () => void done++, shouldStop: () => done >= steps }, { readProgress: true });
      return encodeRunState(runStateOf(config, r.progress!));
    },
  };
}
