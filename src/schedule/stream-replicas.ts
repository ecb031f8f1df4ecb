/**
 * A stream (PipeDream, PipeDream-2BW: no flush) on data-parallel replicas: what the run, `pipelab simulate` and the
 * Simulate view refuse, one rule for all three. PipeDream updates each stage after every backward, so its replicas
 * never hold a point to sum their gradients at; PipeDream-2BW sums each block of m micro-batches' gradients with a
 * plain all-reduce before the block's update (no ZeRO sharding), as soon as the block's last backward ends (no
 * flush to hold it back to). Each caller names the setting in its own words (a config key, a flag, a field).
 */
import { scheduleKind, type RunScheduleName } from './registry.ts';

export interface StreamMeshRefusal {
  /** The setting at fault, and the value it must take with this schedule. */
  key: 'dp' | 'zero' | 'overlap';
  want: number | boolean;
  rule: string;
}

/** True for a schedule that takes no replicas at all (PipeDream: it updates after every backward). */
export function takesNoReplicas(schedule: RunScheduleName): boolean {
  return scheduleKind(schedule).update === 'stash-and-update-after-backward';
}

/** Why `schedule` cannot run (or be simulated) with this mesh, or null when it can (or is not a stream). */
export function streamMeshRefusal(schedule: RunScheduleName, mesh: { dp: number; zero: number; overlap: boolean }): StreamMeshRefusal | null {
  if (mesh.dp <= 1) return null;
  const update = scheduleKind(schedule).update;
  if (takesNoReplicas(schedule)) {
    return { key: 'dp', want: 1, rule: `${schedule} updates each stage's weights after every backward, with no point at which replicas could sum their gradients; data parallelism needs a synchronous schedule or PipeDream-2BW` };
  }
  if (update !== 'double-buffered') return null;
  if (mesh.zero !== 0) {
    return { key: 'zero', want: 0, rule: `${schedule} sums each block's gradients over the replicas with a plain all-reduce before its update; ZeRO runs with synchronous schedules here` };
  }
  if (!mesh.overlap) {
    return { key: 'overlap', want: true, rule: `${schedule} has no flush to hold the all-reduce back to: each stage's runs as soon as its block of m micro-batches ends` };
  }
  return null;
}
