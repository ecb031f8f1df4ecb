/**
 * Test support (Node only, vitest): a run's bundle written to a fresh temporary
 * folder. Apart from ./torchrun.ts because it builds the bundle, which loads the
 * data sets (JSON modules the Playwright loader does not import).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunConfig } from '../../config/run-config.ts';
import { buildTorchBundle, type BundleFile } from '../torch-bundle.ts';
import { readTorchProgram } from '../torch-program-disk.ts';
import { writeBundle } from './torchrun.ts';

/** The run's bundle (src/export/torch/ as its program), written to a fresh temporary folder. */
export function writeTempBundle(cfg: RunConfig): { dir: string; files: BundleFile[] } {
  const dir = mkdtempSync(join(tmpdir(), 'pipelab-torch-'));
  const files = buildTorchBundle(cfg, readTorchProgram());
  writeBundle(dir, files);
  return { dir, files };
}
