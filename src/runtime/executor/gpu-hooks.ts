/**
 * What a rank takes from a GpuBackend beyond the Backend contract (a stage worker's, or one given to an
 * in-process host in Node tests): the clock that times its actions on the GPU without waiting for them, and
 * its counts of waits and submits (rank-executor.ts StepCounts).
 */
import type { GpuCore } from '../../gpu/gpu-core.ts';
import type { Backend } from '../../nn/backend.ts';
import { epochMs } from '../comm/index.ts';
import type { RankHooks } from './rank-runtime.ts';

/** The hooks of a GpuBackend; none for another backend (the CPU host: wall-clock times, each action awaited). */
export function gpuHooks(be: Backend): Pick<RankHooks, 'clock' | 'gpuCounts'> {
  if (!hasGpuHooks(be)) return {};
  return { clock: be.actionClock(epochMs), gpuCounts: () => be.counts() };
}

/** Whether `be` is a GpuBackend (asked by shape, so that this module loads no GPU code: the CLI reaches it through the room's face). */
function hasGpuHooks(be: Backend): be is Backend & Pick<GpuCore, 'actionClock' | 'counts'> {
  const g = be as Partial<Pick<GpuCore, 'actionClock' | 'counts'>>;
  return typeof g.actionClock === 'function' && typeof g.counts === 'function';
}
