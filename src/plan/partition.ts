/**
 * Where to cut, from a profile: the contiguous split of the profile's blocks
 * into one stage per rank that minimises the slowest stage, compute (F + B)
 * plus the communication at its cuts, under an optional per-rank cap on the
 * activation bytes it keeps. The dynamic program is nn/partition.ts's
 * `partitionWith`; this module says what the costs and the memory mean.
 *
 * Memory: under 1F1B (and ZB-H1) stage s holds min(p − s, m) micro-batches at
 * once, so its peak is that many times the bytes its blocks keep for one
 * micro-batch (heldBytesRecompute with recomputation).
 */
import { partitionWith, type BlockRange } from '../nn/partition.ts';
import { ConfigError, requireInt } from '../util/errors.ts';
import type { Profile } from './profile.ts';

export interface PartitionPlan {
  ranges: BlockRange[];
  /** Compute plus cut communication of each stage. */
  stageTime: number[];
  /** Peak held bytes of each stage (its in-flight micro-batches times its bytes per micro-batch). */
  stageBytes: number[];
  bottleneck: number;
}

export interface PartitionOptions {
  /** Micro-batches per step (bounds the in-flight count); default: as many as ranks. */
  microbatches?: number;
  /** Per-rank cap on held activation bytes. */
  memCap?: number;
  recompute?: boolean;
}

/** Micro-batches stage s of p holds at once under 1F1B. */
export function inFlight1F1B(stage: number, ranks: number, microbatches: number): number {
  return Math.min(ranks - stage, microbatches);
}

export function stageTimeOf(p: Profile, [a, b]: BlockRange): number {
  let t = 0;
  for (let i = a; i < b; i++) t += p.blocks[i].F + p.blocks[i].B;
  if (a > 0) t += p.comm[a - 1];
  if (b < p.blocks.length) t += p.comm[b - 1];
  return t;
}

export function planPartition(p: Profile, ranks: number, opts: PartitionOptions = {}): PartitionPlan {
  const n = p.blocks.length;
  requireInt('ranks', ranks, 1);
  if (ranks > n) throw new ConfigError('ranks', ranks, `must be at most the number of blocks, ${n} (a stage holds at least one block)`);
  const m = opts.microbatches === undefined ? ranks : requireInt('microbatches', opts.microbatches, 1);
  const held = p.blocks.map((b) => (opts.recompute ? b.heldBytesRecompute : b.heldBytes));
  const factor = (s: number) => inFlight1F1B(s, ranks, m);
  const r = partitionWith(
    { compute: p.blocks.map((b) => b.F + b.B), comm: p.comm, memory: held, memCap: opts.memCap, memoryFactor: factor },
    ranks,
  );
  if (!r.ok) {
    throw new ConfigError('memCap', opts.memCap, `no split into ${ranks} stages keeps every rank's activations within it; the smallest cap that works is ${r.smallestCap} bytes`);
  }
  const stageBytes = r.ranges.map(([a, b], s) => held.slice(a, b).reduce((x, y) => x + y, 0) * factor(s));
  return { ranges: r.ranges, stageTime: r.ranges.map((x) => stageTimeOf(p, x)), stageBytes, bottleneck: r.bottleneck };
}
