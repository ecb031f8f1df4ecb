/**
 * Checkpoints kept in memory: the shelf for tests and for a page whose
 * browser gives it no storage (they last as long as the tab). It copies bytes
 * in and out, as IndexedDB does, and can play a full or refusing storage:
 * `capacityBytes` (a write that would pass it throws QuotaExceededError and
 * changes nothing) and `denied` (every call throws SecurityError).
 */
import type { CheckpointInfo, CheckpointShelf, StoredCheckpoint } from './checkpoint-store.ts';

export interface MemoryShelfOptions {
  capacityBytes?: number;
  denied?: boolean;
}

export class MemoryShelf implements CheckpointShelf {
  private readonly entries = new Map<string, StoredCheckpoint>();

  constructor(readonly opts: MemoryShelfOptions = {}) {}

  private static key(config: string, step: number): string {
    return `${step}\n${config}`;
  }

  private check(): void {
    if (this.opts.denied) throw new DOMException('storage is not available', 'SecurityError');
  }

  async list(config?: string): Promise<CheckpointInfo[]> {
    this.check();
    return [...this.entries.values()].filter((e) => config === undefined || e.info.config === config).map((e) => ({ ...e.info }));
  }

  async read(config: string, step: number): Promise<Uint8Array | undefined> {
    this.check();
    const e = this.entries.get(MemoryShelf.key(config, step));
    return e && Uint8Array.from(e.bytes);
  }

  async write(entry: StoredCheckpoint, drop: readonly number[]): Promise<void> {
    this.check();
    const { config, step } = entry.info;
    const gone = new Set([MemoryShelf.key(config, step), ...drop.map((s) => MemoryShelf.key(config, s))]);
    let total = entry.bytes.length;
    for (const [k, e] of this.entries) if (!gone.has(k)) total += e.bytes.length;
    if (this.opts.capacityBytes !== undefined && total > this.opts.capacityBytes) {
      throw new DOMException(`${total} bytes would pass the capacity of ${this.opts.capacityBytes}`, 'QuotaExceededError');
    }
    for (const k of gone) this.entries.delete(k);
    this.entries.set(MemoryShelf.key(config, step), { info: { ...entry.info }, bytes: Uint8Array.from(entry.bytes) });
  }

  async remove(config: string, steps: readonly number[]): Promise<void> {
    this.check();
    for (const s of steps) this.entries.delete(MemoryShelf.key(config, s));
  }
}
