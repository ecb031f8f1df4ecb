/**
 * Actions as text, the way torch.distributed.pipelining writes them:
 * `{stage}{op}{mb}`, e.g. `2F0` (stage 2, forward, micro-batch 0) or `1I3`.
 */
import type { Action, Op } from './types.ts';

const ACTION_RE = /^(\d+)([FBIW])(\d+)$/;

export function formatAction(a: Action): string {
  return `${a.stage}${a.op}${a.mb}`;
}

/**
 * Parses `{stage}{F|B|I|W}{mb}`; surrounding whitespace is ignored (PyTorch
 * strips it too). Returns null for anything else: PyTorch's communication
 * actions (`1SEND_F0`, `0UNSHARD`, ...) are not compute actions and have no
 * place in a compute-only schedule.
 */
export function parseAction(text: string): Action | null {
  const m = ACTION_RE.exec(text.trim());
  if (!m) return null;
  const stage = Number(m[1]);
  const mb = Number(m[3]);
  if (!Number.isSafeInteger(stage) || !Number.isSafeInteger(mb)) return null;
  return { stage, op: m[2] as Op, mb };
}
