/**
 * Saves a run's progress into a CheckpointStore as it is handed over
 * (RunOptions.onProgress), beside training: `take` returns at once; the
 * encoding and the store's write run one save after another, in order. A
 * refused save (storage full or denied) is kept as the first error and the
 * saves after it are still tried; what was stored stays as it was.
 */
import type { TrainProgress } from '../nn/train.ts';
import type { CheckpointSaves } from '../runtime/report/index.ts';
import type { RunConfig } from '../config/run-config.ts';
import type { CheckpointStore } from './checkpoint-store.ts';
import { encodeRunState } from './codec.ts';
import { runStateOf } from './run-state.ts';

export class RunSaver {
  private chain: Promise<void> = Promise.resolve();
  private readonly steps: number[] = [];
  private readonly encodeMs: number[] = [];
  private readonly storeMs: number[] = [];
  private bytes = 0;
  private error: string | undefined;

  constructor(
    private readonly store: CheckpointStore,
    private readonly config: RunConfig,
    /** Told after each save that landed (its steps done), or each refusal (its message). */
    private readonly onSaved?: (r: { step: number } | { error: string }) => void,
  ) {}

  /** Queues a save of `progress`; returns at once. */
  take(progress: TrainProgress): void {
    this.chain = this.chain.then(() => this.save(progress));
  }

  private async save(progress: TrainProgress): Promise<void> {
    try {
      const t0 = performance.now();
      const bytes = encodeRunState(runStateOf(this.config, progress));
      const t1 = performance.now();
      await this.store.saveEncoded(bytes, this.config, progress.stepsDone);
      this.encodeMs.push(t1 - t0);
      this.storeMs.push(performance.now() - t1);
      this.steps.push(progress.stepsDone);
      this.bytes = bytes.length;
      this.onSaved?.({ step: progress.stepsDone });
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      this.error ??= message;
      this.onSaved?.({ error: message });
    }
  }

  /** Waits for every queued save; the saves so far. */
  async settled(): Promise<CheckpointSaves> {
    await this.chain;
    const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
    return { steps: [...this.steps], bytes: this.bytes, meanEncodeMs: mean(this.encodeMs), meanStoreMs: mean(this.storeMs), ...(this.error ? { error: this.error } : {}) };
  }
}
