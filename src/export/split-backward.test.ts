/**
 * The exported program's split backward (src/export/torch/split_backward.py), which the zero-bubble schedules'
 * I and W actions and `train.py --profile` both use: for stages of the char-MLP and of the GPT (first, middle,
 * last; float64, fresh random weights and inputs), I then W give the full backward's gradients, and the matrix
 * products they run (counted in multiply-adds by a TorchDispatchMode in the probe) add up to exactly those of one
 * full backward, W's being one product per weight matrix: nothing is computed twice. The naive split
 * (W = autograd.grad(stage output, weights) after I) would redo the activation gradients inside the stage: the
 * last check catches it. Needs Debian's python3-torch.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PYTHON } from './testing/torchrun.ts';

const PROGRAM_DIR = fileURLToPath(new URL('./torch/', import.meta.url));
const PROBE = fileURLToPath(new URL('./testing/split_backward_probe.py', import.meta.url));

interface Case { case: string; diff: number; fullMacs: number; iMacs: number; wMacs: number; wCalls: number; weightMatrices: number }

describe('split backward: I + W = one full backward, nothing twice', () => {
  const r = spawnSync(PYTHON, [PROBE], { env: { ...process.env, PYTHONPATH: PROGRAM_DIR }, encoding: 'utf8', timeout: 60_000 });
  const cases = (r.stdout ?? '').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Case);

  it('runs every case', () => {
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    expect(cases.map((c) => c.case)).toEqual([
      'char-MLP first stage (embedding, two hidden blocks)',
      'char-MLP last stage (two hidden blocks, head)',
      'GPT middle stage (two blocks)',
      'GPT last stage (a block, the head)',
      'GPT first stage (embedding, a block)',
    ]);
  });

  it('gives the full backward’s gradients (float64)', () => {
    for (const c of cases) expect(c.diff, c.case).toBeLessThan(1e-12);
  });

  it('runs the full backward’s matrix products once: I + W = B, and W one product per weight matrix', () => {
    for (const c of cases) {
      expect(c.iMacs + c.wMacs, c.case).toBe(c.fullMacs);
      expect(c.wCalls, c.case).toBe(c.weightMatrices);
      expect(c.iMacs, c.case).toBeGreaterThan(0);
      expect(c.wMacs, c.case).toBeGreaterThan(0);
    }
  });
});
