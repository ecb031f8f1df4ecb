/** What a stage's MoE layers tell once a step (stage.ts): their aux loss terms and their routing counts. */
import type { Backend, Tensor } from './backend.ts';
import type { Layer, StageRouteLoad } from './layers/layer.ts';

/** into += the aux loss terms `layers` accumulated; zeroes them. */
export function takeAuxLosses(be: Backend, layers: readonly Layer[], into: Tensor): void {
  for (const l of layers) {
    if (!l.auxLoss) continue;
    be.axpy(into, l.auxLoss, 1);
    be.fill(l.auxLoss, 0);
  }
}

/** The routing counts of micro-batch `mb`'s saving forward, one per MoE layer, taken from the layers. */
export function routeLoadsOf(layers: readonly Layer[], mb: number): StageRouteLoad[] {
  const out: StageRouteLoad[] = [];
  for (const l of layers) {
    const load = l.takeRouteLoad?.();
    if (load) out.push({ mb, layer: l.name, ...load });
  }
  return out;
}
