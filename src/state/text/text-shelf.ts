/**
 * The texts this browser trained on, kept in the origin's IndexedDB (database "pipelab-texts", store "texts",
 * keyed by content hash): a link or a reload names its text by hash only, and without this the page would ask
 * for the file again after every reload; with it, a run on your own text resumes from its checkpoint as a run
 * on a shipped data set does. The text never leaves the browser. The last KEEP_TEXTS are kept (the oldest is
 * dropped first), as the page keeps loaded texts; an index on savedAt finds the oldest without reading any
 * text. Storage refused or full: nothing is kept and the page asks for the file as before.
 */
import { committed, done, openDb } from '../../util/idb.ts';

export const KEEP_TEXTS = 4;
const STORE = 'texts';
const SAVED_AT = 'savedAt';

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
    this.opened ??= openDb(this.factory, this.dbName, 1, (db) => db.createObjectStore(STORE, { keyPath: 'hash' }).createIndex(SAVED_AT, SAVED_AT));
    this.opened.catch(() => (this.opened = null));
    return this.opened;
  }

  /** Keeps `t` (again: it becomes the newest) and drops all but the newest KEEP_TEXTS, in one transaction. */
  async keep(t: Omit<StoredText, 'savedAt'>, now = Date.now()): Promise<void> {
    const tx = (await this.db()).transaction(STORE, 'readwrite');
    const end = committed(tx);
    end.catch(() => undefined); // awaited below; a failed read aborts it before then
    const store = tx.objectStore(STORE);
    // The kept hashes, oldest first, from the index alone (no text is read).
    const oldestFirst = (await done(store.index(SAVED_AT).getAllKeys())).map(String);
    for (const old of textsToDrop(oldestFirst.map((hash, i) => ({ hash, savedAt: i })), t.hash)) store.delete(old);
    store.put({ hash: t.hash, name: t.name, text: t.text, savedAt: now });
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
}

/** The page's text shelf. */
export const pageTexts = new TextShelf();
