/**
 * Model copies in a schedule (types.ts `copies`; DualPipe runs 2): the
 * schedule's stages are cut into `copies` equal runs, each a whole model, and
 * its micro-batches into `copies` equal blocks, block c running through copy
 * c only. A stage takes its activation from the stage before it and its output
 * gradient from the stage after it only inside its own copy: the first stage
 * of a copy reads the data, the last computes the loss. With one copy (every
 * other schedule) these are the usual s > 0 and s < stages − 1.
 */
import type { Schedule } from './types.ts';

type Shape = Pick<Schedule, 'stages' | 'microbatches' | 'copies'>;

export function copiesOf(s: Pick<Schedule, 'copies'>): number {
  return s.copies ?? 1;
}

/** Stages of one copy: the model's stages. */
export function stagesPerCopy(s: Shape): number {
  return s.stages / copiesOf(s);
}

/** The copy stage `stage` belongs to. */
export function copyOfStage(s: Shape, stage: number): number {
  return Math.floor(stage / stagesPerCopy(s));
}

/** The model stage (0 … stages/copies − 1) schedule stage `stage` holds: copies of a stage hold the same blocks. */
export function modelStage(s: Shape, stage: number): number {
  return stage % stagesPerCopy(s);
}

/** The copy micro-batch `mb` runs through. */
export function copyOfMicrobatch(s: Shape, mb: number): number {
  return Math.floor(mb / (s.microbatches / copiesOf(s)));
}

/** True when stage `stage` runs micro-batch `mb` (always, with one copy). */
export function stageRuns(s: Shape, stage: number, mb: number): boolean {
  return copyOfStage(s, stage) === copyOfMicrobatch(s, mb);
}

/** True when stage `stage` takes its input from stage − 1 (it is not the first stage of its copy). */
export function hasPrevStage(s: Shape, stage: number): boolean {
  return stage % stagesPerCopy(s) !== 0;
}

/** True when stage `stage` sends its output to stage + 1 (it is not the last stage of its copy). */
export function hasNextStage(s: Shape, stage: number): boolean {
  return (stage + 1) % stagesPerCopy(s) !== 0;
}

/** The micro-batches [lo, hi) stage `stage` runs. */
export function microbatchesOf(s: Shape, stage: number): [number, number] {
  const n = s.microbatches / copiesOf(s);
  const c = copyOfStage(s, stage);
  return [c * n, (c + 1) * n];
}
