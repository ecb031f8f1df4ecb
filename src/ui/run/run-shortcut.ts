/**
 * The Run/Pause keyboard shortcut: R runs (when nothing runs), pauses a
 * running run and resumes a paused one, unless the person is typing in a
 * field. The same action the primary run button performs.
 */
import { pauseRun, resumeRun, startRun } from '../../state/run/index.ts';
import { usePipeLab, type RunStatus } from '../../state/store/index.ts';

/**
 * What R (or the primary button) does in a status; null: nothing now (workers starting, or stopping). A stream
 * (PipeDream, 2BW: one window of all its steps) pauses too: its workers hold between their actions.
 */
export function toggleAction(status: RunStatus): 'start' | 'pause' | 'resume' | null {
  switch (status) {
    case 'idle':
    case 'done':
    case 'stopped':
    case 'error':
      return 'start';
    case 'running':
      return 'pause';
    case 'paused':
      return 'resume';
    default:
      return null;
  }
}

export function toggleRun(): void {
  const action = toggleAction(usePipeLab.getState().run.status);
  if (action === 'start') void startRun();
  else if (action === 'pause') pauseRun();
  else if (action === 'resume') resumeRun();
}

/** True when a key pressed in `target` is typing (inputs, selects, text areas, editable content). */
export function isTyping(target: EventTarget | null): boolean {
  if (!target || typeof (target as Element).closest !== 'function') return false;
  const el = target as Element;
  if ((el as HTMLElement).isContentEditable) return true;
  return el.closest('input, select, textarea, [contenteditable=""], [contenteditable="true"]') !== null;
}

/** The global keydown handler: R toggles the run, outside fields, without modifiers, on the Train view. */
export function onShortcutKey(e: KeyboardEvent): void {
  if (e.key !== 'r' && e.key !== 'R') return;
  if (e.ctrlKey || e.metaKey || e.altKey || e.repeat || isTyping(e.target)) return;
  if (usePipeLab.getState().view !== 'run') return;
  e.preventDefault();
  toggleRun();
}
