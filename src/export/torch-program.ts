/**
 * The exported PyTorch program: the Python modules in src/export/torch/, shipped
 * side by side at the bundle's root (train.py imports the others). Each holds
 * one idea: train.py (the entry: flags, the training loop, the final weights),
 * bundle.py (config.json, schedule.csv, the replica-major mesh and their
 * checks), data.py (a replica's rows of each step's batch), model.py (layers,
 * stages, the loss), moe.py (a GPT block's mixture-of-experts MLP and its aux loss), pipeline.py (one step of a rank's schedule row with
 * point-to-point messages), split_backward.py (I and W without computing twice),
 * collectives.py (the data-parallel flush: gradient
 * all-reduce, ZeRO-1; ZeRO-2's reduce-scatters and ZeRO-3's gathers around
 * the actions), copies.py (DualPipe's model copies: their gradients summed at
 * the flush), stream.py (PipeDream's and PipeDream-2BW's weight versions and
 * updates over one stream), tensor_parallel.py (a process's piece of the split layers and
 * Megatron's f/g collectives on its tp group), waits.py (the wait for a message or a collective, never
 * past the timeout: it imports none of the others), optimizer.py, profiling.py (`train.py --profile`),
 * safetensors_io.py and checkpoint.py (the run-state file, as src/run-state/codec.ts
 * writes it: `train.py --resume` and `--save-every`).
 *
 * The program's text is a parameter of the bundle: the page imports the files
 * with `?raw` (src/ui/exports/export-files.ts), Node reads them from disk
 * (./torch-program-disk.ts).
 */
/** One file of an exported bundle (the program's files and torch-bundle.ts's data alike). */
export interface BundleFile {
  /** Relative path inside the bundle folder. */
  path: string;
  data: string | Uint8Array;
}

export const TORCH_PROGRAM_FILES = [
  'train.py',
  'bundle.py',
  'data.py',
  'model.py',
  'moe.py',
  'pipeline.py',
  'split_backward.py',
  'collectives.py',
  'copies.py',
  'stream.py',
  'tensor_parallel.py',
  'waits.py',
  'optimizer.py',
  'profiling.py',
  'safetensors_io.py',
  'checkpoint.py',
] as const;

/** The program's files by name (`train.py` → its text). */
export type TorchProgram = Readonly<Record<string, string>>;

/** The program's files as bundle files; throws when one is missing or one is not part of the program. */
export function programFiles(program: TorchProgram): BundleFile[] {
  const names: readonly string[] = TORCH_PROGRAM_FILES;
  const missing = names.filter((n) => typeof program[n] !== 'string');
  const extra = Object.keys(program).filter((n) => !names.includes(n));
  if (missing.length > 0 || extra.length > 0) {
    throw new Error(`the PyTorch program must be ${names.join(', ')}; ${missing.length ? `missing ${missing.join(', ')}` : ''}${missing.length && extra.length ? '; ' : ''}${extra.length ? `not expected ${extra.join(', ')}` : ''}`);
  }
  return names.map((n) => ({ path: n, data: program[n] }));
}
