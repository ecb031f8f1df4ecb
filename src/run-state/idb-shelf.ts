/**
 * Checkpoints kept in the origin's IndexedDB: database "pipelab-checkpoints",
 * store "meta" (CheckpointInfo, key [config, step], indexed by config) and
 * store "files" (the bytes, same key), so listing never reads a file. A write
 * and the deletes it brings are one transaction: a quota error aborts all of
 * it. Errors are IndexedDB's own (QuotaExceededError, SecurityError where the
 * browser refuses storage); the CheckpointStore words them.
 */
import { committed, done, openDb } from '../util/idb.ts';
import type { CheckpointInfo, CheckpointShelf, StoredCheckpoint } from './checkpoint-store.ts';

const META = 'meta';
const FILES = 'files';

export class IdbShelf implements CheckpointShelf {
  private opened: Promise<IDBDatabase> | null = null;

  constructor(
    private readonly factory: IDBFactory | undefined = globalThis.indexedDB,
    readonly dbName = 'pipelab-checkpoints',
  ) {}

  private db(): Promise<IDBDatabase> {
    this.opened ??= openDb(this.factory, this.dbName, 1, (db) => {
      const meta = db.createObjectStore(META, { keyPath: ['config', 'step'] });
      meta.createIndex('config', 'config');
      db.createObjectStore(FILES);
    });
    // A refusal is not cached: the next call asks again (the person may allow storage).
    this.opened.catch(() => (this.opened = null));
    return this.opened;
  }

  async list(config?: string): Promise<CheckpointInfo[]> {
    const store = (await this.db()).transaction(META, 'readonly').objectStore(META);
    return done(config === undefined ? store.getAll() : store.index('config').getAll(config)) as Promise<CheckpointInfo[]>;
  }

  async read(config: string, step: number): Promise<Uint8Array | undefined> {
    const v: unknown = await done((await this.db()).transaction(FILES, 'readonly').objectStore(FILES).get([config, step]));
    return v instanceof Uint8Array ? v : undefined;
  }

  async write(entry: StoredCheckpoint, drop: readonly number[]): Promise<void> {
    const tx = (await this.db()).transaction([META, FILES], 'readwrite');
    const end = committed(tx);
    const { config, step } = entry.info;
    for (const s of drop) {
      tx.objectStore(META).delete([config, s]);
      tx.objectStore(FILES).delete([config, s]);
    }
    tx.objectStore(META).put({ ...entry.info });
    tx.objectStore(FILES).put(entry.bytes, [config, step]);
    return end;
  }

  async remove(config: string, steps: readonly number[]): Promise<void> {
    const tx = (await this.db()).transaction([META, FILES], 'readwrite');
    const end = committed(tx);
    for (const s of steps) {
      tx.objectStore(META).delete([config, s]);
      tx.objectStore(FILES).delete([config, s]);
    }
    return end;
  }
}
