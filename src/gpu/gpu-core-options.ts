/** What a GpuCore (gpu-core.ts) is made with, and what it reports of itself. */
import type { PoolStats } from './buffer-pool.ts';

export interface GpuCoreOptions {
  /** The GPU object to use; default navigator.gpu (page or worker). */
  gpu?: GPU;
  /** Use timestamp-query for timing when the adapter has it (default true). */
  timestamps?: boolean;
  /** Free pooled buffers beyond this many bytes are destroyed. Default 512 MiB. */
  maxPooledBytes?: number;
  /** Dispatches per submitted batch at most (uniform ring slots). Default 1024. */
  uniformSlots?: number;
  /**
   * The subgroup size the subgroup matmuls lay their workgroups out for; default
   * the device's (AcquiredDevice.subgroupSize). 0 turns them off; another size
   * than the device's makes them take their path for a workgroup that is not one
   * full subgroup (the tests check that path so).
   */
  subgroupSize?: number;
  /**
   * Milliseconds between the empty submits sent while a wait for the GPU is pending (src/gpu/wait-nudge.ts);
   * 0: none. Default: defaultNudgeMs (0.25 on a hardware adapter in a browser, else 0).
   */
  nudgeWaitsMs?: number;
}

export interface GpuStats {
  /** Tensors created and not disposed, and their buffers' bytes: what a leak check counts. */
  liveBuffers: number;
  liveBytes: number;
  /** The pool: every GPU buffer (tensors, temporaries in flight, free ones kept for reuse). */
  pool: PoolStats;
  pipelines: number;
  submits: number;
  dispatches: number;
  /** Empty submits sent while waiting for the GPU (nudgeWaitsMs). */
  nudges: number;
  /** Waits for the GPU: awaited buffer maps and submitted-work waits (reads, syncs, span ends). */
  waits: number;
}

