/**
 * "Your text" in the page: a dropped or picked file, pasted text, or the
 * shipped example, read in a worker (text-load-worker.ts) so the page stays
 * responsive; the corpus is kept here by content hash (text-registry.ts) and
 * never leaves the browser. A loaded text becomes the configuration's data set.
 *
 * A link cannot carry a file: a link to a run on a text this page does not
 * have is held as `pending` (its hash and its query); the page asks for the
 * file, refuses one whose content hash differs from the link's, and applies
 * the link once the right file is in. The example's hash loads the example,
 * and a text this browser kept (text-shelf.ts: every text read here is kept,
 * the last four) loads from there: a reload resumes a run on your own text.
 */
import type { TextCorpus } from '../../data/text-corpus.ts';
import { checkTextFileSize, describeCorpus, TEXT_HASH_PATTERN } from '../../data/text-corpus.ts';
import { loadedCorpus, registerCorpus } from '../../data/text-registry.ts';
import { MOBY_DICK } from '../../data/moby-dick.ts';
import { withDataset } from '../../config/run-config.ts';
import { ConfigError } from '../../util/errors.ts';
import { setConfig } from '../store/index.ts';
import { usePipeLab, type TextSourceState } from '../store/index.ts';
import type { TextLoadReply, TextLoadRequest } from './text-load-protocol.ts';
import { readUrlState } from '../store/index.ts';
import { pageGptSize } from '../run/index.ts';
import { pageTexts } from './text-shelf.ts';

type Job = { kind: 'file'; file: File } | { kind: 'text'; name: string; text: string } | { kind: 'example' };

let worker: Worker | null = null;
let nextId = 1;
const waiting = new Map<number, { resolve: (c: TextCorpus) => void; reject: (e: Error) => void }>();

function loader(): Worker {
  if (worker) return worker;
  const w = new Worker(new URL('./text-load-worker.ts', import.meta.url), { type: 'module', name: 'pipelab-text' });
  w.onmessage = (e: MessageEvent<TextLoadReply>) => {
    const job = waiting.get(e.data.id);
    waiting.delete(e.data.id);
    if (!job) return;
    if (e.data.corpus) job.resolve(e.data.corpus);
    else job.reject(new Error(e.data.error));
  };
  w.onerror = (e) => {
    e.preventDefault();
    for (const job of waiting.values()) job.reject(new Error(`the text could not be read: ${e.message || 'the reading worker failed'}`));
    waiting.clear();
    worker = null;
    w.terminate();
  };
  worker = w;
  return w;
}

/** Reads a text in the worker; resolves to its corpus or rejects with the refusal's message. */
export function readInWorker(job: Job): Promise<TextCorpus> {
  const id = nextId++;
  return new Promise<TextCorpus>((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    loader().postMessage({ id, ...job } as TextLoadRequest);
  });
}

function patchText(patch: Partial<TextSourceState>): void {
  usePipeLab.setState((s) => ({ text: { ...s.text, ...patch } }));
}

/**
 * Keeps a read text and makes it the configuration's data set; with a link
 * waiting for its text, only the text it names is taken, and then the link is applied.
 */
function accept(corpus: TextCorpus): void {
  const pending = usePipeLab.getState().text.pending;
  if (pending?.hash && corpus.hash !== pending.hash) {
    patchText({
      loading: null,
      error: new ConfigError(`text file "${corpus.name}"`, corpus.hash, `has another content hash than the text the link names (${pending.hash}): pick the file the run was made from`).message,
    });
    return;
  }
  registerCorpus(corpus);
  patchText({ loading: null, error: null, pending: null, loaded: { name: corpus.name, hash: corpus.hash, line: describeCorpus(corpus) } });
  // Kept for the next visit (the example ships with the page). Storage refused or full: the page asks for the file then.
  if (corpus.hash !== MOBY_DICK.hash) pageTexts.keep({ hash: corpus.hash, name: corpus.name, text: corpus.text }).catch(() => undefined);
  if (pending) {
    const q = new URLSearchParams(pending.search.startsWith('?') ? pending.search.slice(1) : pending.search);
    // Last, so that a rule the text breaks with the link's sizes reverts the text, not another field ...
    q.delete('textHash');
    q.append('textHash', corpus.hash);
    const { config, problems } = readUrlState(q.toString());
    // ... and then the text is kept anyway: it is what was picked, and the form says which rule it breaks.
    const kept = config.dataset === 'text' && config.textHash === corpus.hash;
    setConfig(kept ? config : withDataset(config, 'text', corpus.hash, pageGptSize()));
    usePipeLab.setState({ urlProblems: kept ? problems : problems.filter((p) => p.field !== 'textHash') });
  } else {
    setConfig(withDataset(usePipeLab.getState().config, 'text', corpus.hash, pageGptSize()));
  }
}

async function load(job: Job, name: string): Promise<void> {
  patchText({ loading: name, error: null });
  try {
    accept(await readInWorker(job));
  } catch (e) {
    patchText({ loading: null, error: e instanceof Error ? e.message : String(e) });
  }
}

/** A dropped or picked file: refused from its size before any of it is read. */
export function loadTextFile(file: File): Promise<void> {
  try {
    checkTextFileSize(file.name, file.size);
  } catch (e) {
    patchText({ error: (e as Error).message });
    return Promise.resolve();
  }
  return load({ kind: 'file', file }, file.name);
}

export function loadPastedText(text: string): Promise<void> {
  return load({ kind: 'text', name: 'pasted text', text }, 'pasted text');
}

export function loadExampleText(): Promise<void> {
  return load({ kind: 'example' }, MOBY_DICK.name);
}

/** Forgets the texts this browser kept (the one loaded now stays loaded until the page closes); says what happened. */
export async function forgetKeptTexts(): Promise<string> {
  try {
    await pageTexts.clear();
    return 'Kept texts forgotten: a reload will ask for the file again.';
  } catch (e) {
    return `The kept texts could not be forgotten: ${e instanceof Error ? e.message : String(e)}`;
  }
}

/** The hash of the text the page holds now, if any. */
export function currentTextHash(): string | undefined {
  return usePipeLab.getState().text.loaded?.hash;
}

/**
 * A link (query) to a run on a text the page does not have: held as pending
 * (the example's hash loads the example); a link to the text data set that
 * names no text waits for any text. True when the link waits for a text.
 */
export function holdLinkText(search: string): boolean {
  const q = new URLSearchParams(search.startsWith('?') ? search.slice(1) : search);
  if (q.get('dataset') !== 'text') return false;
  const hash = q.get('textHash');
  if (hash !== null && (!TEXT_HASH_PATTERN.test(hash) || loadedCorpus(hash))) return false;
  patchText({ pending: { hash, search } });
  if (hash === MOBY_DICK.hash) void loadExampleText();
  else if (hash !== null) void loadKeptText(hash);
  return true;
}

/** The text with this hash from this browser's kept texts, if it is there and the link still waits for it. */
async function loadKeptText(hash: string): Promise<void> {
  let kept;
  try {
    kept = await pageTexts.find(hash);
  } catch {
    return; // no storage: the page asks for the file
  }
  if (!kept || usePipeLab.getState().text.pending?.hash !== hash) return;
  await load({ kind: 'text', name: kept.name, text: kept.text }, kept.name);
}

/** For window.pipelab.loadText: reads `text` as the page reads pasted text and keeps it, without touching the form. */
export async function registerTextForAutomation(name: string, text: string): Promise<{ hash: string; symbols: number; characters: number; line: string }> {
  const c = await readInWorker({ kind: 'text', name, text });
  registerCorpus(c);
  return { hash: c.hash, symbols: c.symbols.length, characters: c.ids.length, line: describeCorpus(c) };
}
