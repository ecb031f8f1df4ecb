/**
 * How a mesh plan's candidate is named, in the CLI's table and the page's alike: its layout,
 * its schedule (none when pp = 1: one stage runs its micro-batches in turn, accumulating
 * gradients, and no pipeline schedule applies) and what it saves memory with.
 */
import type { MeshCandidate } from './mesh-plan.ts';

type Named = Pick<MeshCandidate, 'dp' | 'tp' | 'pp' | 'schedule' | 'virtual' | 'zero' | 'recompute' | 'offload' | 'swap'> & { ep?: number };

/** "8 × 1 × 1": dp × tp × pp; "128 × 1 × 16, ep 64" with the experts sharded over ep of a stage's dp × tp workers. */
export function meshLayoutLabel(c: Named): string {
  return `${c.dp} × ${c.tp} × ${c.pp}${(c.ep ?? 1) > 1 ? `, ep ${c.ep}` : ''}`;
}

/** "interleaved-zb v=2", or "no pipeline" for pp = 1 (the plan's JSON still names the order it simulated, 1f1b). */
export function meshScheduleLabel(c: Named): string {
  if (c.pp === 1) return 'no pipeline';
  return c.schedule + (c.virtual > 1 ? ` v=${c.virtual}` : '');
}

/** "ZeRO-1, selective recompute", or `none` when it saves nothing. */
export function meshSavingLabel(c: Named, none: string): string {
  return [c.zero ? `ZeRO-${c.zero}` : '', c.recompute !== 'none' ? `${c.recompute} recompute` : '', c.offload ? 'optimizer offload' : '', c.swap ? 'swapping' : ''].filter(Boolean).join(', ') || none;
}
