/**
 * Interleaved zero bubble: Megatron's interleaved 1F1B order (v virtual
 * stages per rank, looped placement, any m; interleaved.ts) with each backward
 * split into I and W as in the zero-bubble paper (Qi et al., ICLR 2024,
 * arXiv:2401.10241, §3.1), rank r's W's trailing its I's by r (defer-w.ts), as
 * ZB-H1 does on 1F1B: the F's and I's keep the interleaved sequence, and the
 * deferred W's fill the waits of the cool-down. This is this repository's
 * construction (the paper's idea on the interleaved order), not a schedule
 * transcribed from the paper or from Megatron.
 *
 * With per-stage costs F = I = W = 1 (B = 2) and m ≥ p the makespan is
 * 3v·m + p − 1 — a bubble of p − 1 per rank against interleaved 1F1B's
 * 3(p − 1), a third, as ZB-H1 against 1F1B (theory.ts; checked against the
 * simulator for p ≤ 16, v ≤ 4, p ≤ m ≤ 64 in theory.test.ts). With m < p it
 * is still valid and shorter than interleaved 1F1B, but has no closed form here.
 *
 * Memory: rank r holds at most interleaved 1F1B's peak + r chunk activations
 * (its r deferred W's), min(2p − r − 1 + (v − 1)·g, v·m) with g the first
 * round's micro-batches; the most any rank holds, rank 0's, is interleaved
 * 1F1B's (2p − 1 + (v − 1)·g when that is below v·m).
 */
import type { Schedule } from '../types.ts';
import { deferWeightGradients } from './defer-w.ts';
import { interleaved1F1B } from './interleaved.ts';

export function interleavedZeroBubble(ranks: number, microbatches: number, virtual: number): Schedule {
  return deferWeightGradients(interleaved1F1B(ranks, microbatches, virtual), (r) => r, 'interleaved-zb');
}
