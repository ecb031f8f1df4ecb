/**
 * The page's checkpoints as its run controls show them: the last checkpoint
 * stored for the configuration in the form (what "Resume run from step k"
 * resumes), the run's last save or refused save, a recovery, and what became
 * of a loaded or downloaded file. Download writes the stored file as is; Load
 * reads a file through the codec (refused past 1 GiB before it is read whole;
 * a bad file refused with the CheckpointError's message, nothing stored or
 * changed), stores it under its own configuration and makes that the form's.
 */
import { create } from 'zustand';
import { readRunStateFile } from '../../run-state/codec.ts';
import { pageCheckpoints } from '../../run-state/page-checkpoints.ts';
import { checkpointKey } from '../../run-state/checkpoint-store.ts';
import { MAX_RECOVERIES } from '../../run-state/durable-run.ts';
import { meshText } from '../../run-state/recut.ts';
import type { MeshShape } from '../../runtime/report/index.ts';
import type { RunConfig } from '../../config/run-config.ts';
import { setConfig } from '../store/index.ts';
import { usePipeLab } from '../store/index.ts';

export interface CheckpointView {
  /** The configuration (its key) the latest step below is of. */
  key: string | null;
  /** Steps done by the last checkpoint stored for that configuration; null: none. */
  latestStep: number | null;
  /** What the run's saving, a load or a download last said (a refusal's message, or what was done). */
  note: string | null;
  /** Whether `note` reports a refusal. */
  refused: boolean;
  /** The current or last run's recoveries, in order: the steps done when it failed, and the checkpoint it restarted from. */
  recoveries: { failedAtStep: number; fromStep: number; failure: string }[];
}

export const useCheckpoints = create<CheckpointView>(() => ({ key: null, latestStep: null, note: null, refused: false, recoveries: [] }));

function say(note: string, refused = false): void {
  useCheckpoints.setState({ note, refused });
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Reads the last checkpoint stored for `config` (the form's when absent). Storage that refuses reads as none, with its message. */
export async function refreshCheckpoints(config: RunConfig = usePipeLab.getState().config): Promise<void> {
  const key = checkpointKey(config);
  try {
    const latest = await pageCheckpoints.latest(config);
    if (checkpointKey(usePipeLab.getState().config) !== key) return;
    useCheckpoints.setState({ key, latestStep: latest?.step ?? null });
  } catch (e) {
    useCheckpoints.setState({ key, latestStep: null });
    say(messageOf(e), true);
  }
}

export function noteSave(r: { step: number } | { error: string }): void {
  if ('error' in r) say(r.error, true);
  else {
    useCheckpoints.setState({ key: checkpointKey(usePipeLab.getState().run.config ?? usePipeLab.getState().config), latestStep: r.step });
    say(`Checkpoint saved at step ${r.step}.`);
  }
}

export function noteRecovery(r: { failure: string; fromStep: number; failedAtStep: number; mesh?: MeshShape }): void {
  const n = useCheckpoints.getState().recoveries.length + 1;
  useCheckpoints.setState((s) => ({ recoveries: [...s.recoveries, { failure: r.failure, fromStep: r.fromStep, failedAtStep: r.failedAtStep }] }));
  const on = r.mesh ? `on fresh workers: ${meshText(r.mesh)}` : 'on fresh workers';
  say(`A worker failed (${r.failure}); recovering${n > 1 ? ` (recovery ${n} of at most ${MAX_RECOVERIES})` : ''} from the checkpoint of step ${r.fromStep} ${on}.`);
}

/** Offers the form's configuration's last stored checkpoint as a file download. */
export async function downloadCheckpoint(): Promise<void> {
  const config = usePipeLab.getState().config;
  try {
    const bytes = await pageCheckpoints.readFile(config);
    const step = useCheckpoints.getState().latestStep;
    const url = URL.createObjectURL(new Blob([bytes as Uint8Array<ArrayBuffer>], { type: 'application/octet-stream' }));
    const a = document.createElement('a');
    a.href = url;
    a.download = `pipelab-checkpoint-step${step ?? 'latest'}.safetensors`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  } catch (e) {
    say(messageOf(e), true);
  }
}

/** Loads a checkpoint file: checked whole, stored under its configuration, which becomes the form's (Resume then continues it). */
export async function loadCheckpointFile(file: Blob): Promise<void> {
  try {
    const state = await readRunStateFile(file);
    await pageCheckpoints.saveFile(new Uint8Array(await file.arrayBuffer()));
    // How often the form saves and how it recovers are the person's, not the file's.
    const { checkpointEvery, recovery } = usePipeLab.getState().config;
    setConfig({ ...state.config, checkpointEvery, recovery });
    await refreshCheckpoints(state.config);
    say(`Loaded a checkpoint of step ${state.stepsDone} (written by ${state.producer}); Resume continues it.`);
  } catch (e) {
    say(messageOf(e), true);
  }
}
