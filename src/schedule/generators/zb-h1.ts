/**
 * ZB-H1 from "Zero Bubble Pipeline Parallelism" (Qi et al., ICLR 2024,
 * arXiv:2401.10241, section 3.1): 1F1B with the backward split into I (input
 * gradient, on the critical path) and W (weight gradient, off it). Rank r warms
 * up with p−1−r forwards like 1F1B, then alternates F and I; its W passes trail
 * its I passes by r, which fills the cool-down bubble with W work while the
 * number of micro-batches in flight stays at most p, as in 1F1B.
 *
 * With F = I = W = 1 the makespan is 3m + p − 1 when m ≥ p (bubble p − 1 per
 * rank against 1F1B's 3(p − 1) with B = 2): rank p−1 gets its first input at
 * p − 1 and never waits again; its last I ends at 3m, then it drains its p − 1
 * deferred W's. The last I of micro-batch m−1 reaches rank r at 3m + (p−1−r)
 * and rank r drains r deferred W's after it, so every rank ends together at
 * 3m + p − 1. With m < p the warm-up cannot be filled and the makespan is
 * 2m + 2p − 1 (see theory.ts; the simulator is checked against both).
 */
import type { Schedule } from '../types.ts';
import { deferWeightGradients } from './defer-w.ts';
import { oneFOneB } from './one-f-one-b.ts';

/** 1F1B's order with each B split into I and W, rank r's W's trailing its I's by r (defer-w.ts). */
export function zbH1(ranks: number, microbatches: number): Schedule {
  return deferWeightGradients(oneFOneB(ranks, microbatches), (r) => r, 'zb-h1');
}
