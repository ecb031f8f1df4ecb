/**
 * Checkpoints kept in the browser: run-state files stored per configuration
 * (its canonical query, configToQuery, as the page's link writes it) and step,
 * the last few saves of each configuration kept. Where the bytes live is a
 * CheckpointShelf: IndexedDB in the page (./idb-shelf.ts), memory in tests and
 * where the browser has no storage (./memory-shelf.ts).
 *
 * A save writes the new file and drops the oldest beyond `keep` in one
 * all-or-nothing step: storage full or denied leaves what was stored as it
 * was, and comes back as a CheckpointError ('storage-full', 'storage-denied')
 * whose message says so. A file is checked whole (decodeRunState) before it
 * is stored and again when it is loaded.
 */
import { configToQuery, type RunConfig } from '../config/run-config.ts';
import { CheckpointError } from './checkpoint-error.ts';
import { decodeRunState, encodeRunState } from './codec.ts';
import { stateConfig, type RunState } from './run-state.ts';
import type { StateExpectation } from './state-match.ts';

export interface CheckpointInfo {
  /** The configuration's canonical query (checkpointKey). */
  config: string;
  /** Steps done when saved. */
  step: number;
  /** The file's size. */
  bytes: number;
  /** When saved (ms since the epoch). */
  savedAt: number;
}

export interface StoredCheckpoint {
  info: CheckpointInfo;
  bytes: Uint8Array;
}

/** Where checkpoint files are kept. Errors are the storage's own (DOMExceptions named QuotaExceededError, SecurityError, ...). */
export interface CheckpointShelf {
  /** Every stored checkpoint's info, or only `config`'s. */
  list(config?: string): Promise<CheckpointInfo[]>;
  read(config: string, step: number): Promise<Uint8Array | undefined>;
  /** Stores `entry` (replacing one of the same config and step) and deletes the `drop` steps of its config, all or nothing. */
  write(entry: StoredCheckpoint, drop: readonly number[]): Promise<void>;
  remove(config: string, steps: readonly number[]): Promise<void>;
}

/** Saves kept per configuration. */
export const KEEP_CHECKPOINTS = 3;

/** The key a configuration's checkpoints are stored under: the query of its link (a test's injected fault left out). */
export function checkpointKey(config: RunConfig): string {
  return configToQuery(stateConfig(config));
}

function sizeText(bytes: number): string {
  return bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : bytes >= 1e3 ? `${(bytes / 1e3).toFixed(1)} kB` : `${bytes} bytes`;
}

/** What the storage threw, as a CheckpointError saying what did not happen (`undone`) and that what was stored is unchanged. */
function storageError(e: unknown, undone: string): CheckpointError {
  if (e instanceof CheckpointError) return e;
  const name = e instanceof Error || (typeof e === 'object' && e !== null && 'name' in e) ? String((e as { name: unknown }).name) : 'Error';
  const detail = e instanceof Error ? e.message.slice(0, 160) : String(e).slice(0, 160);
  if (name === 'QuotaExceededError') {
    return new CheckpointError('storage-full', `storage full: ${undone}: the browser refused the space (${name}); the stored checkpoints are unchanged (delete old checkpoints or free this site's data)`);
  }
  return new CheckpointError('storage-denied', `storage unavailable: ${undone}: the browser refuses this page's storage (${name}: ${detail}; private browsing or blocked site data?); the stored checkpoints are unchanged`);
}

export class CheckpointStore {
  constructor(
    private readonly shelf: CheckpointShelf,
    readonly keep = KEEP_CHECKPOINTS,
    private readonly now: () => number = Date.now,
  ) {
    if (!Number.isInteger(keep) || keep < 1) throw new RangeError(`keep = ${keep}: must be a whole number ≥ 1`);
  }

  private async guard<T>(undone: string, f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      throw storageError(e, undone);
    }
  }

  /** Encodes and stores `state` under its configuration and step, keeping the last `keep` saves of that configuration. */
  async save(state: RunState): Promise<CheckpointInfo> {
    return this.put(encodeRunState(state), state.config, state.stepsDone);
  }

  /** Stores a file encodeRunState just wrote of `config` at `step` (the caller encoded it, e.g. to time it). */
  async saveEncoded(bytes: Uint8Array, config: RunConfig, step: number): Promise<CheckpointInfo> {
    return this.put(bytes, config, step);
  }

  /** Stores a checkpoint file (e.g. one the person loaded) after checking it whole; a bad file is refused and nothing is stored. */
  async saveFile(bytes: Uint8Array): Promise<CheckpointInfo> {
    const state = decodeRunState(bytes);
    return this.put(bytes, state.config, state.stepsDone);
  }

  private async put(bytes: Uint8Array, config: RunConfig, step: number): Promise<CheckpointInfo> {
    const key = checkpointKey(config);
    const info: CheckpointInfo = { config: key, step, bytes: bytes.length, savedAt: this.now() };
    const undone = `the checkpoint of step ${step} (${sizeText(bytes.length)}) was not saved`;
    return this.guard(undone, async () => {
      const others = (await this.shelf.list(key)).filter((c) => c.step !== step).sort((a, b) => a.savedAt - b.savedAt || a.step - b.step);
      const drop = others.slice(0, Math.max(0, others.length + 1 - this.keep)).map((c) => c.step);
      await this.shelf.write({ info, bytes }, drop);
      return info;
    });
  }

  /** The stored checkpoints (of `config` only, when given), by configuration, then step. */
  async list(config?: RunConfig): Promise<CheckpointInfo[]> {
    const all = await this.guard('the stored checkpoints could not be listed', () => this.shelf.list(config ? checkpointKey(config) : undefined));
    return all.sort((a, b) => (a.config < b.config ? -1 : a.config > b.config ? 1 : a.step - b.step));
  }

  /** The checkpoint of `config` saved last (a later run stopped early saves fewer steps than an earlier one that finished), if any. */
  async latest(config: RunConfig): Promise<CheckpointInfo | undefined> {
    return (await this.list(config)).reduce<CheckpointInfo | undefined>((best, c) => (!best || c.savedAt > best.savedAt || (c.savedAt === best.savedAt && c.step > best.step) ? c : best), undefined);
  }

  /** The file of `config`'s checkpoint at `step` (default: the latest), as stored. */
  async readFile(config: RunConfig, step?: number): Promise<Uint8Array> {
    const key = checkpointKey(config);
    const at = step ?? (await this.latest(config))?.step;
    const bytes = at === undefined ? undefined : await this.guard(`the checkpoint of step ${at} could not be read`, () => this.shelf.read(key, at));
    if (!bytes) throw new CheckpointError('not-found', at === undefined ? 'no checkpoint is stored for this configuration' : `no checkpoint of step ${at} is stored for this configuration`);
    return bytes;
  }

  /** `config`'s checkpoint at `step` (default: the latest), checked whole and against `config` (fields in `ignore` may differ). */
  async load(config: RunConfig, step?: number, ignore?: StateExpectation['ignore']): Promise<RunState> {
    return decodeRunState(await this.readFile(config, step), { config, ignore });
  }

  /** Deletes `config`'s checkpoint at `step`, or all of its checkpoints; resolves to how many were deleted. */
  async delete(config: RunConfig, step?: number): Promise<number> {
    const key = checkpointKey(config);
    const steps = (await this.list(config)).map((c) => c.step).filter((s) => step === undefined || s === step);
    await this.guard('the checkpoints were not deleted', () => this.shelf.remove(key, steps));
    return steps.length;
  }
}
