/**
 * Recomputation in the exported PyTorch program: selective (model.py's GptBlock with the run's
 * recomputeAttention: the attention core under torch.utils.checkpoint) and full (the run's recompute: the whole
 * stage under it). testing/recompute_probe.py, in float64 on fresh random weights, against the same stage keeping
 * everything: the same gradients from a full and from a split (I, then W) backward; no attention probabilities
 * saved by autograd (nothing at all with full); each block's core run once more in the backward, also when the
 * backward is split. The exported runs themselves are checked against the page's float64 loop in
 * torch-export.test.ts, torch-export-stream.test.ts and torch-export-tp.test.ts. Needs Debian's python3-torch.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PYTHON } from './testing/torchrun.ts';

const PROGRAM_DIR = fileURLToPath(new URL('./torch/', import.meta.url));
const TESTING_DIR = fileURLToPath(new URL('./testing/', import.meta.url));
const PROBE = fileURLToPath(new URL('./testing/recompute_probe.py', import.meta.url));

interface Backward { diff: number; probsSavedPlain: number; probsSaved: number; savedPlain: number; saved: number; coreCalls: { plain: [number, number]; recomputing: [number, number] } }

describe('recomputation in the exported GPT stage', () => {
  const r = spawnSync(PYTHON, [PROBE], { env: { ...process.env, PYTHONPATH: `${PROGRAM_DIR}:${TESTING_DIR}` }, encoding: 'utf8', timeout: 60_000 });
  const line = (r.stdout ?? '').split('\n').find((l) => l.startsWith('{'));
  const out = () => JSON.parse(line!) as { blocks: number } & Record<string, Backward>;

  it('runs every case', () => {
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    expect(Object.keys(out()).filter((k) => k !== 'blocks')).toEqual(['selective full backward', 'selective split backward', 'full full backward', 'full split backward']);
  });

  for (const mode of ['selective', 'full'] as const) {
    for (const backward of ['full', 'split'] as const) {
      it(`${mode} recomputation, ${backward} backward: the same gradients, no attention probabilities kept${mode === 'full' ? ' (nothing kept by autograd)' : ''}, each core run again once`, () => {
        const o = out();
        const b = o[`${mode} ${backward} backward`];
        expect(b.diff).toBeLessThanOrEqual(1e-12);
        expect(b.probsSavedPlain).toBeGreaterThanOrEqual(o.blocks);
        expect(b.probsSaved).toBe(0);
        if (mode === 'full') expect(b.saved).toBe(0);
        else expect(b.saved).toBeGreaterThan(0);
        expect(b.saved).toBeLessThan(b.savedPlain);
        expect(b.coreCalls.plain).toEqual([o.blocks, 0]);
        expect(b.coreCalls.recomputing).toEqual([o.blocks, o.blocks]);
      });
    }
  }
});
