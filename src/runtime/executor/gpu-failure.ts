/**
 * Naming what went wrong with a rank's GPU, at the boundary where a worker's
 * error leaves it: a lost device and running out of memory are said as such,
 * with the rank and its stages, rather than a bare DOMException text such as
 * `OperationError: A valid external Instance reference no longer exists.`.
 */

/** What Dawn says when the GPU process or instance behind a device has gone (often after running out of memory). */
const INSTANCE_GONE = /(OperationError: )?A valid external Instance reference no longer exists\.?/;
const OUT_OF_MEMORY = /out of memory|OutOfMemory|allocation failed/i;

/** A message that names its worker already starts so: `rank 2` or `replica 1, rank 2`. */
const NAMES_WORKER = /^(replica \d+, )?rank \d+/;

/** The (replica and) rank and the stages it holds, as every message of a worker starts. */
export function rankWhere(rank: number, stageToRank: readonly number[], replica?: number): string {
  const stages = stageToRank.flatMap((r, s) => (r === rank ? [s] : []));
  return `${replica !== undefined ? `replica ${replica}, ` : ''}rank ${rank}, stage${stages.length === 1 ? '' : 's'} ${stages.join(', ')}`;
}

/** The message of `e` with GPU failures named; `where` prefixes it unless it already names its rank. */
export function describeGpuFailure(e: unknown, where: string): string {
  let message: string;
  try {
    const raw = e instanceof Error ? e.message : String(e);
    // A message that already names its rank (an ActionError's) keeps its words; others get their kind (TypeError, OperationError).
    const named = e instanceof Error && !NAMES_WORKER.test(raw) && e.name && e.name !== 'Error' && !raw.startsWith(e.name);
    message = named ? `${(e as Error).name}: ${raw}` : raw;
  } catch {
    message = 'an unreadable error';
  }
  if (INSTANCE_GONE.test(message)) {
    message = message.replace(INSTANCE_GONE, 'the WebGPU device was lost: the browser ended its GPU instance (this happens when the GPU process runs out of memory or crashes)');
  } else if (OUT_OF_MEMORY.test(message) && !/out of GPU memory/.test(message)) {
    message = `out of GPU memory: ${message}`;
  }
  return NAMES_WORKER.test(message) ? message : `${where}: ${message}`;
}

/** A GPU error scope's error as the failure it is (null: none). */
export function scopeFailure(err: GPUError | null, doing: string): Error | null {
  if (!err) return null;
  const kind = typeof GPUOutOfMemoryError !== 'undefined' && err instanceof GPUOutOfMemoryError ? 'out of GPU memory' : 'a GPU error';
  return new Error(`${kind} while ${doing}: ${err.message}`);
}
