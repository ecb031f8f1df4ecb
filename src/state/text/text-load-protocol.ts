/** The messages between the page and its text-loading worker (text-load-worker.ts). */
import type { TextCorpus } from '../../data/text-corpus.ts';

export type TextLoadRequest =
  | { id: number; kind: 'file'; file: File }
  | { id: number; kind: 'text'; name: string; text: string }
  | { id: number; kind: 'example' };

export type TextLoadReply = { id: number; corpus: TextCorpus; error?: undefined } | { id: number; error: string; corpus?: undefined };
