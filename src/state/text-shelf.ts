/**
 * The texts this browser trained on, kept in the origin's IndexedDB (database "pipelab-texts", store "texts",
 * keyed by content hash): a link or a reload names its text by hash only, and without this the page would ask
 * for the file again after every reload; with it, a run on your own text resumes from its checkpoint as a run
 * on a shipped data set does. The text never leaves the browser. The last KEEP_TEXTS are kept (the oldest is
 * dropped first), as the page keeps loaded texts. Storage refused or full: nothing is kept and the page asks
 * for the file as before (the reason is returned, for the page to say).
 */
import { committed, done, openDb } from '../util/idb.ts';

export const KEEP_TEXTS = 4;
const STORE = 'texts';

export interface StoredText {
  hash: string;
  name: string;
  text: string;
  /** When it was last kept (ms since the epoch): the oldest is dropped first. */
  savedAt: number;
}

/** The hashes to drop when `hash` is kept (again) beside `all`: all but the newest KEEP_TEXTS − 1 others. */
export function textsToDrop(all: readonly Pick<StoredText, 'hash' | 'savedAt'>[], hash: string, keep = KEEP_TEXTS): string[] {
  return all
    .filter((x) => x.hash !== hash)
    .sort((a, b) => b.savedAt - a.savedAt)
    .slice(Math.max(0, keep - 1))
    .map((x) => x.hash);
}

export class TextShelf {
  private opened: Promise<IDBDatabase> | null = null;

  constructor(
    private readonly factory: IDBFactory | undefined = globalThis.indexedDB,
    readonly dbName = 'pipelab-texts',
  ) {}

  private db(): Promise<IDBDatabase> {
    this.opened ??= openDb(this.factory, this.dbName, 1, (db) => db.createObjectStore(STORE, { keyPath: 'hash' }));
    this.opened.catch(() => (this.opened = null));
    return this.opened;
  }

  /** Keeps `t` (again: it becomes the newest) and drops all but the newest KEEP_TEXTS, in one transaction. */
  async keep(t: Omit<StoredText, 'savedAt'>, now = Date.now()): Promise<void> {
    const db = await this.db();
    const all = (await done(db.transaction(STORE, 'readonly').objectStore(STORE).getAll())) as StoredText[];
    const tx = db.transaction(STORE, 'readwrite');
    const end = committed(tx);
    for (const old of textsToDrop(all, t.hash)) tx.objectStore(STORE).delete(old);
    tx.objectStore(STORE).put({ hash: t.hash, name: t.name, text: t.text, savedAt: now });
    return end;
  }

  /** The kept text with this hash, if any. */
  async find(hash: string): Promise<StoredText | undefined> {
    const v = (await done((await this.db()).transaction(STORE, 'readonly').objectStore(STORE).get(hash))) as StoredText | undefined;
    return v && typeof v.text === 'string' ? v : undefined;
  }

  /** Forgets every kept text. */
  async clear(): Promise<void> {
    const tx = (await this.db()).transaction(STORE, 'readwrite');
    const end = committed(tx);
    tx.objectStore(STORE).clear();
    return end;
  }

  async hashes(): Promise<string[]> {
    return ((await done((await this.db()).transaction(STORE, 'readonly').objectStore(STORE).getAllKeys())) as IDBValidKey[]).map(String);
  }
}

/** The page's text shelf. */
export const pageTexts = new TextShelf();
