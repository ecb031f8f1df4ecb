/**
 * The torchrun line that starts an exported bundle, one text for the CLI's
 * "run it:" line, the bundle's README and the tests that launch it.
 *
 * `--redirects 1 --tee 1`: with Debian's PyTorch 1.13 on Python 3.11, torchrun's
 * default (`--redirects 0 --tee 0`) dies at once in the elastic launcher with
 * `AttributeError: 'NoneType' object has no attribute 'get'` (an enum change in
 * Python 3.11); with the flags it runs, each process's output prefixed
 * `[default<rank>]:`. Newer torch accepts the same flags, so one line works on both.
 */

/** The flags every torchrun line we print or run carries, before `--nproc_per_node`. */
export const TORCHRUN_LAUNCH_FLAGS: readonly string[] = ['--redirects', '1', '--tee', '1'];

/** `torchrun --redirects 1 --tee 1 --nproc_per_node=W train.py`, the extra arguments (after train.py) appended. */
export function torchrunLine(workers: number, ...trainArgs: string[]): string {
  return ['torchrun', ...TORCHRUN_LAUNCH_FLAGS, `--nproc_per_node=${workers}`, 'train.py', ...trainArgs].join(' ');
}
