/** An error of one rank's action (or of its optimizer flush), naming (replica,) rank, stage, action and step. */
import type { Action } from '../../schedule/types.ts';

export class ActionError extends Error {
  constructor(
    readonly rank: number,
    readonly action: Action | null,
    readonly step: number,
    cause: unknown,
    /** The worker's replica in a data-parallel mesh (absent with one pipeline). */
    readonly replica?: number,
  ) {
    const what = action ? `stage ${action.stage}, action ${action.stage}${action.op}${action.mb}` : 'optimizer flush';
    const msg = cause instanceof Error ? cause.message : String(cause);
    super(`${replica !== undefined ? `replica ${replica}, ` : ''}rank ${rank}, ${what}, step ${step}: ${msg}`);
    this.name = 'ActionError';
  }
}
