/**
 * What a run on a GPU backend (the page's workers, automation in Chromium, Dawn in Node) holds beyond the plan's
 * float32 values (issue 54): the plan of config/memory-budget.ts counts 4 bytes a value, the GPU backend's allocator
 * counts each buffer's bucket, its readback staging and the buffers it has let go that wait for their commands'
 * submit, and a fixed uniform ring. Computed from the GPU backend's own constants (gpu/buffer-pool.ts, gpu/launch.ts):
 *  - uniform ring: UNIFORM_SLOTS × UNIFORM_SLOT bytes a worker (its own kind, `uniforms`; outside the per-step check's
 *    kinds, but the device holds it);
 *  - pending: buffers released while commands that use them wait for their submit (gpu/launch.ts
 *    releaseAfterSubmit) — at most one more of the plan's transient (one action's working set and staging);
 *  - pool rounding: each buffer's bucket is at most twice its request up to POW2_BUCKETS_UNTIL (powers of two) and
 *    1 / BUCKET_STEPS more above it; as the plan does not know which of its bytes lie in small buffers, it takes the
 *    power-of-two bound (the plan and the pending bytes again). A request under MIN_BUCKET / 2 bytes takes more than
 *    twice itself (MIN_BUCKET whole): a model of many such tensors could pass this bound; the tiny MLP (hidden 16, 64-byte
 *    biases) and the Make it fit preset's GPT stay under it (runtime/budget-gpu.test.ts measures the ratio).
 */
import { BUCKET_STEPS, MIN_BUCKET, POW2_BUCKETS_UNTIL } from '../gpu/buffer-pool.ts';
import { UNIFORM_SLOT, UNIFORM_SLOTS } from '../gpu/launch.ts';

/** Where the run's memory lives: the float64 CPU host and the CLI/export plan the values; a GPU backend plans its overheads too. */
export type BudgetTarget = 'cpu' | 'gpu';

/** A worker's GPU overheads beyond its plan, bytes. */
export interface GpuOverhead {
  ring: number;
  pending: number;
  rounding: number;
  total: number;
}

/** The GPU overheads of a worker whose plan holds `total` bytes, `transient` of them around one action. */
export function gpuOverhead(plan: { total: number; transient: number }): GpuOverhead {
  const ring = UNIFORM_SLOTS * UNIFORM_SLOT;
  const pending = plan.transient;
  const rounding = plan.total + pending;
  return { ring, pending, rounding, total: ring + pending + rounding };
}

/** `GPU runtime: uniform ring 256.0 KiB, …`: the refusal's line of the GPU's own overheads. */
export function gpuOverheadText(o: GpuOverhead, fmt: (b: number) => string): string {
  return (
    `GPU runtime ${fmt(o.total)}: uniform ring ${fmt(o.ring)}, buffers pending their submit ≤ ${fmt(o.pending)}, ` +
    `pool rounding ≤ ${fmt(o.rounding)} (buckets of ${MIN_BUCKET} B at least, powers of two to ${POW2_BUCKETS_UNTIL / 1024} KiB, then ≤ ${100 / BUCKET_STEPS}% more)`
  );
}
