/**
 * The MoE block's counts against what a stage measures: the stash a forward keeps and what it keeps between its
 * backward's I and W equal the formulas (moe-spec.ts) exactly when the capacity needs no rounding, plus the aux
 * loss's one number a micro-batch; and the parameter count is the parameters built. A stage frees every tensor.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/rng.ts';
import { CpuBackend } from '../cpu-backend.ts';
import { buildModelSpec, defaultGptConfig } from '../model-config.ts';
import { layerActivationsPerRow, layerKeptAfterInputPerRow, layerParamCount } from '../model-spec.ts';
import { Stage } from '../stage.ts';
import { trackingBackend } from '../testing/tracking-backend.ts';

const be = new CpuBackend();

describe('MoE block counts equal the measured ones', () => {
  it.each([
    [1, 0],
    [2, 0],
    [1, 1],
    [2, 1.5],
  ])('top-%i, capacity factor %s', async (topK, capacityFactor) => {
    const B = 3, T = 16, E = 4;
    const spec = buildModelSpec({ ...defaultGptConfig(), layers: 2, heads: 2, width: 8, experts: E, topK, capacityFactor, batchSize: 12 });
    const layer = spec.blocks[1].layers[0];
    expect(layer.kind).toBe('gpt-moe-block');
    // cap = capacityFactor·k·S/E is whole for S = 48 here: no rounding.
    expect(Number.isInteger((capacityFactor * topK * B * T) / E)).toBe(true);
    const st = new Stage(be, spec, 1, [1, 2], 3);
    expect(st.params.reduce((n, p) => n + p.value.size, 0)).toBe(layerParamCount(layer));
    const rng = new Rng(1);
    const x = be.tensor(Array.from({ length: B * T * 8 }, () => rng.normal()), [B * T, 8]);
    await st.forward(0, x);
    expect(st.stashBytes()).toBe(4 * (B * layerActivationsPerRow(layer) + 1));
    const dx = await st.backwardInput(0, be.tensor(Array.from({ length: B * T * 8 }, () => rng.normal()), [B * T, 8]));
    be.dispose(dx as never);
    // Between I and W the stage keeps the layer's kept tensors and its output gradient (C a token).
    expect(st.stashBytes()).toBe(4 * B * (layerKeptAfterInputPerRow(layer) + T * 8));
    st.backwardWeight(0);
    expect(st.stashBytes()).toBe(0);
  });
});

describe('an MoE stage leaves nothing behind', () => {
  it.each([false, true])('forward, backward split in I and W, the aux loss and routing counts taken, dispose (recompute %s): no tensor left', async (recompute) => {
    const { be: tbe, live } = trackingBackend(new CpuBackend());
    const spec = buildModelSpec({ ...defaultGptConfig(), layers: 3, heads: 2, width: 8, experts: 3, topK: 2, capacityFactor: 1, batchSize: 4 });
    const st = new Stage(tbe, spec, 1, [1, 3], 3, { recompute });
    const baseline = live.size; // params, grads and the aux accumulators
    const before = new Set(live);
    const rng = new Rng(2);
    for (const mb of [0, 1]) tbe.dispose(await st.forward(mb, tbe.tensor(Array.from({ length: 32 * 8 }, () => rng.normal()), [32, 8])));
    for (const mb of [0, 1]) {
      const dx = await st.backwardInput(mb, tbe.tensor(Array.from({ length: 32 * 8 }, () => rng.normal()), [32, 8]));
      if (dx) tbe.dispose(dx);
      st.backwardWeight(mb);
    }
    const aux = tbe.zeros([1]);
    st.takeAuxLoss(aux);
    expect((await tbe.read(aux))[0]).toBeGreaterThan(0);
    tbe.dispose(aux);
    // The routing counts: one per MoE layer and micro-batch (the recomputed forward's with recompute), 32 tokens × top-2 each.
    const loads = st.takeRouteLoads();
    expect(loads.map((l) => [l.mb, l.layer.split('.')[0], l.experts, l.capacity])).toEqual([[0, 'block1', 3, 22], [0, 'block2', 3, 22], [1, 'block1', 3, 22], [1, 'block2', 3, 22]]);
    for (const l of loads) {
      const c = Array.from(await tbe.read(l.counts));
      expect([c[0] + c[3] + c[6], c[1] + c[4] + c[7]]).toEqual([32, 32]);
      tbe.dispose(l.counts);
    }
    expect([...live].filter((t) => !before.has(t)).map((t) => `${t.dtype} [${t.shape.join(', ')}]`)).toEqual([]);
    expect(live.size).toBe(baseline);
    st.dispose();
    expect(live.size).toBe(0);
  });
});
