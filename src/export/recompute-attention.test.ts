/**
 * Selective recomputation in the exported PyTorch program (model.py's GptBlock with the run's
 * recomputeAttention): testing/recompute_probe.py, in float64 on fresh random weights, against the same stage
 * keeping everything. The same gradients from a full and from a split (I, then W) backward; no attention
 * probabilities saved by autograd; the core run once more in the backward, per block. The exported run itself
 * is checked against the page's float64 loop in torch-export.test.ts. Needs Debian's python3-torch.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PYTHON } from './testing/torchrun.ts';

const PROGRAM_DIR = fileURLToPath(new URL('./torch/', import.meta.url));
const TESTING_DIR = fileURLToPath(new URL('./testing/', import.meta.url));
const PROBE = fileURLToPath(new URL('./testing/recompute_probe.py', import.meta.url));

interface Backward { diff: number; probsSavedPlain: number; probsSavedSelective: number; savedPlain: number; savedSelective: number; coreCalls: { plain: [number, number]; selective: [number, number] } }

describe('selective recomputation in the exported GPT block', () => {
  const r = spawnSync(PYTHON, [PROBE], { env: { ...process.env, PYTHONPATH: `${PROGRAM_DIR}:${TESTING_DIR}` }, encoding: 'utf8', timeout: 60_000 });
  const line = (r.stdout ?? '').split('\n').find((l) => l.startsWith('{'));

  it('runs', () => {
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    expect(line, r.stdout).toBeDefined();
  });

  for (const key of ['full', 'split'] as const) {
    it(`${key} backward: the same gradients, no attention probabilities kept, the core run again once per block`, () => {
      const out = JSON.parse(line!) as { blocks: number } & Record<'full' | 'split', Backward>;
      const b = out[key];
      expect(b.diff).toBeLessThanOrEqual(1e-12);
      expect(b.probsSavedPlain).toBeGreaterThanOrEqual(out.blocks);
      expect(b.probsSavedSelective).toBe(0);
      expect(b.savedSelective).toBeLessThan(b.savedPlain);
      expect(b.coreCalls.plain).toEqual([out.blocks, 0]);
      expect(b.coreCalls.selective).toEqual([out.blocks, out.blocks]);
    });
  }
});
