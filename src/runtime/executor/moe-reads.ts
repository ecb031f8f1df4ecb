/**
 * What a worker's MoE stages tell once a step, read where the losses are read (DESIGN: wait only for a value the
 * CPU reads, batched at the step's end): the aux loss the stages accumulated and the routing counts of every MoE
 * layer and micro-batch (Stage.takeRouteLoads), packed into one tensor that the executor reads with the losses.
 */
import type { Backend, Tensor } from '../../nn/backend.ts';
import type { StageRouteLoad } from '../../nn/layers/layer.ts';

/** One MoE layer's routing of one micro-batch on one worker, as numbers. */
export interface MoeLoadRecord {
  stage: number;
  /** The layer's name (its block's, e.g. 'block1.moe'). */
  layer: string;
  mb: number;
  experts: number;
  /** Rows per expert the group was routed into (the micro-batch's tokens when dropless). */
  capacity: number;
  /** Per expert e: [3e] tokens whose first choice is e, [3e + 1] second choice, [3e + 2] choices dropped past the capacity. */
  counts: number[];
}

/** The parts of a stage these reads use (rank-executor.ts StageLike). */
export interface MoeStageLike {
  readonly hasAuxLoss?: boolean;
  takeAuxLoss?(into: Tensor): void;
  takeRouteLoads?(): StageRouteLoad[];
}

/** A step's MoE values packed into one tensor, to be read with the step's losses, and how to read them back. */
export interface MoePacked {
  packed: Tensor;
  decode(values: ArrayLike<number>): { auxLoss?: number; moeLoad?: MoeLoadRecord[] };
}

/**
 * Takes the step's aux loss and routing counts from the stages (zeroing them) and packs them into one tensor for the
 * step's one read; null where the stages have none. `report` false (a tp rank other than 0): taken and dropped.
 */
export function packMoeStep(be: Backend, stages: ReadonlyMap<number, MoeStageLike>, report: boolean): MoePacked | null {
  const held = [...stages.values()].filter((s) => s.hasAuxLoss && s.takeAuxLoss);
  const loads = [...stages].flatMap(([stage, s]) => (s.takeRouteLoads?.() ?? []).map((l) => ({ stage, ...l })));
  if (!report || (held.length === 0 && loads.length === 0)) {
    for (const l of loads) be.dispose(l.counts);
    return null;
  }
  const packed = be.zeros([1 + loads.reduce((n, l) => n + l.counts.size, 0)]);
  const aux = be.zeros([1]);
  for (const s of held) s.takeAuxLoss?.(aux);
  be.copyInto(packed, aux, 0);
  be.dispose(aux);
  let at = 1;
  const at0: number[] = [];
  for (const l of loads) {
    at0.push(at);
    be.copyInto(packed, l.counts, at);
    at += l.counts.size;
    be.dispose(l.counts);
  }
  const meta = loads.map(({ stage, layer, mb, experts, capacity, counts }) => ({ stage, layer, mb, experts, capacity, size: counts.size }));
  return {
    packed,
    decode(v) {
      const moeLoad = meta.map((l, i): MoeLoadRecord => ({
        stage: l.stage, layer: l.layer, mb: l.mb, experts: l.experts, capacity: l.capacity, counts: Array.from(v).slice(at0[i], at0[i] + l.size),
      }));
      return { ...(held.length > 0 ? { auxLoss: v[0] } : {}), ...(moeLoad.length > 0 ? { moeLoad } : {}) };
    },
  };
}
