/**
 * A module worker that reads "your text" off the page's thread: a file (its
 * size checked before any of it is read), pasted text, or the shipped example;
 * decodes it, builds its vocabulary and hashes it (src/data/text-corpus.ts),
 * and posts the corpus back (its indices transferred), or the refusal's message.
 */
import { checkTextFileSize, corpusFromBytes, corpusFromText, type TextCorpus } from '../../data/text-corpus.ts';
import type { TextLoadReply, TextLoadRequest } from './text-load-protocol.ts';

async function load(req: TextLoadRequest): Promise<TextCorpus> {
  switch (req.kind) {
    case 'file': {
      checkTextFileSize(req.file.name, req.file.size);
      return corpusFromBytes(req.file.name, new Uint8Array(await req.file.arrayBuffer()));
    }
    case 'text':
      return corpusFromText(req.name, req.text);
    case 'example':
      return (await import('../../data/moby-dick.ts')).loadMobyDick();
  }
}

self.onmessage = (e: MessageEvent<TextLoadRequest>) => {
  const req = e.data;
  load(req).then(
    (corpus) => {
      const reply: TextLoadReply = { id: req.id, corpus };
      (self as unknown as Worker).postMessage(reply, [corpus.ids.buffer]);
    },
    (err: unknown) => {
      const reply: TextLoadReply = { id: req.id, error: err instanceof Error ? err.message : String(err) };
      (self as unknown as Worker).postMessage(reply);
    },
  );
};
