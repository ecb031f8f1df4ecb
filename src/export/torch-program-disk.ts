/** The PyTorch program's files read from disk (Node: the CLI and tests; the page imports them with `?raw`). */
import { readFileSync } from 'node:fs';
import { TORCH_PROGRAM_FILES, type TorchProgram } from './torch-program.ts';

export const TORCH_PROGRAM_DIR = new URL('./torch/', import.meta.url);

export function readTorchProgram(): TorchProgram {
  return Object.fromEntries(TORCH_PROGRAM_FILES.map((name) => [name, readFileSync(new URL(name, TORCH_PROGRAM_DIR), 'utf8')]));
}
