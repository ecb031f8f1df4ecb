/** IndexedDB's requests and transactions as promises (the checkpoint shelf and the text shelf use them). */

export function done<T>(r: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error ?? new DOMException('the request failed', 'UnknownError'));
  });
}

export function committed(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error ?? new DOMException('the transaction failed', 'UnknownError'));
    tx.onabort = () => reject(tx.error ?? new DOMException('the transaction was aborted', 'AbortError'));
  });
}

/** Opens `name` at `version`, creating its stores in `upgrade`; rejects where the browser gives no IndexedDB or another tab holds it. */
export function openDb(factory: IDBFactory | undefined, name: string, version: number, upgrade: (db: IDBDatabase) => void): Promise<IDBDatabase> {
  return new Promise<IDBDatabase>((resolve, reject) => {
    if (!factory) throw new DOMException('this browser gives the page no IndexedDB', 'SecurityError');
    const r = factory.open(name, version);
    r.onupgradeneeded = () => upgrade(r.result);
    r.onsuccess = () => {
      // Another tab upgrading the database: let it.
      r.result.onversionchange = () => r.result.close();
      resolve(r.result);
    };
    r.onerror = () => reject(r.error ?? new DOMException('IndexedDB did not open', 'UnknownError'));
    r.onblocked = () => reject(new DOMException('IndexedDB is held by another tab', 'InvalidStateError'));
  });
}
