/**
 * Which layouts the mesh planner (mesh-plan.ts) tries beyond dp × tp × pp: the micro-batch sizes, and for a model
 * with experts the expert-parallel sizes and how each one's all-to-all is priced.
 */
import { MAX_MICROBATCHES } from '../schedule/index.ts';
import { epLocal, type Layout, type PlanTarget } from './mesh-costs.ts';
import { overlapsAllToAll, type PlanSchedule } from './plan-schedules.ts';
import type { ExpertParallel, TransformerModel } from './transformer.ts';

/** Sequences per micro-batch to try for `rows` sequences per replica: powers of two dividing it, up to max. */
export function microBatchSizes(rows: number, max: number): number[] {
  const out: number[] = [];
  for (let b = 1; b <= Math.min(rows, max); b *= 2) if (rows % b === 0 && rows / b <= MAX_MICROBATCHES) out.push(b);
  return out;
}

/**
 * The expert-parallel sizes a layout dp × tp tries: the request's, or for a model with experts every ep dividing
 * them and dp · tp that is a multiple of tp (whole tensor-parallel groups), and 1; 1 for a dense model. A fixed
 * ep the layout cannot hold is named in `skipped`.
 */
export function epSizes(model: TransformerModel, fixed: number | undefined, dp: number, tp: number, skipped: string[]): number[] {
  const fits = (e: number) => e === 1 || ((dp * tp) % e === 0 && e % tp === 0);
  if (fixed !== undefined) {
    if (fits(fixed)) return [fixed];
    skipped.push(`dp × tp = ${dp} × ${tp}: ep = ${fixed} ${(dp * tp) % fixed !== 0 ? `does not divide dp · tp = ${dp * tp}` : `is not a multiple of tp = ${tp}`}`);
    return [];
  }
  const E = model.moe?.experts ?? 1;
  const out: number[] = [];
  for (let e = 1; e <= Math.min(E, dp * tp); e++) if (E % e === 0 && fits(e)) out.push(e);
  return out;
}

/** A layout's expert parallelism as the profile takes it: its ep, the fewest of its group on a node, the schedule's overlap. */
export function epOf(req: PlanTarget, l: Layout, name: PlanSchedule): ExpertParallel {
  return { n: l.ep ?? 1, local: epLocal(l, req.device.devicesPerNode), overlap: overlapsAllToAll(name) };
}

