/**
 * Why a checkpoint was refused or could not be kept, as a message a person can
 * act on. `kind` lets the page choose what to offer (e.g. nothing to retry for
 * a newer format; free space for a full store).
 */
export type CheckpointErrorKind =
  /** Larger than MAX_CHECKPOINT_BYTES: refused before it is read whole. */
  | 'too-large'
  /** Its bytes end before its header says they do. */
  | 'truncated'
  /** Not a PipeLab run-state file at all (another safetensors file, or not safetensors). */
  | 'not-a-checkpoint'
  /** Written by a newer PipeLab (a format version this one does not read). */
  | 'newer-version'
  /** Damaged: its checksum, layout or contents are inconsistent. */
  | 'corrupt'
  /** A sound checkpoint of another model or configuration than the one expected. */
  | 'mismatch'
  /** The browser's storage refused the space; what was stored is unchanged. */
  | 'storage-full'
  /** The browser's storage is not available here (private browsing, blocked site data). */
  | 'storage-denied'
  /** No checkpoint stored under that configuration and step. */
  | 'not-found';

export class CheckpointError extends Error {
  constructor(
    readonly kind: CheckpointErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'CheckpointError';
  }
}
