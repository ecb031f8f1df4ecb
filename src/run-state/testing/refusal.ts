/** Test helper: the CheckpointError `f` throws (any other error is rethrown; returning is a failure). */
import { CheckpointError } from '../checkpoint-error.ts';

export function refusal(f: () => unknown): CheckpointError {
  try {
    f();
  } catch (e) {
    if (e instanceof CheckpointError) return e;
    throw e;
  }
  throw new Error('expected a CheckpointError; the call returned');
}
