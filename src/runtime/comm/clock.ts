/**
 * One clock for all workers: each worker's performance.timeOrigin differs, so
 * every timestamp is taken as epoch milliseconds (timeOrigin + now) and the
 * coordinator subtracts the run's start.
 */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}
