/**
 * Activation swapping (vDNN, Rhu et al. 2016; SwapAdvisor, Capuchin): a named stage's stash leaves the device after
 * its forward and comes back before its backward. Installed around a worker's update policy (its hooks run before
 * and after every action, policy.ts), so neither the executor nor the stages know a schedule swaps:
 *  - after `F` of a swapped stage, its stash's tensors are read into the worker's host memory and freed on the device
 *    (a 'swap-out' interval); a stash whose backward is the rank's very next action stays (it would come back at once);
 *  - before an action whose next action is the backward (B or I) of a stash on the host, that stash is uploaded again,
 *    so the copy is issued ahead of the action before the backward and overlaps it (vDNN's prefetch; a 'swap-in'
 *    interval); a backward whose stash is still away (nothing ran before it) brings it back itself.
 * The values come back as they left (the backend's own precision): the same numbers as without swapping.
 */
import type { Backend, Tensor } from '../../nn/backend.ts';
import type { Action } from '../../schedule/types.ts';
import { epochMs, type StepLog } from '../comm/index.ts';
import { forwardingPolicy, type PolicyReport, type UpdatePolicy } from './policy.ts';

/** What swapping asks of a stage (nn/stage.ts). */
export interface SwappableStage {
  stashTensors(mb: number): Tensor[];
  remapStash(mb: number, map: ReadonlyMap<Tensor, Tensor>, away: boolean): void;
}

export interface SwapParts {
  be: Backend;
  /** This worker's stages by schedule index. */
  stages: ReadonlyMap<number, SwappableStage>;
  /** The schedule stages whose stashes swap. */
  swapped: ReadonlySet<number>;
  /** This worker's actions, in order (a step's, or a stream's window). */
  order: readonly Action[];
}

interface Away {
  /** The stash's tensors as they were (freed on the device: they stand for the copies). */
  tensors: Tensor[];
  data: (Float32Array | Float64Array | Int32Array)[];
  bytes: number;
}

const isBackward = (a: Action | undefined, stage: number, mb: number) => a !== undefined && a.stage === stage && a.mb === mb && (a.op === 'B' || a.op === 'I');

/** `inner` with the stashes of `parts.swapped` kept in host memory between their forward and their backward. */
export function withSwapping(inner: UpdatePolicy, parts: SwapParts): UpdatePolicy {
  const { be, stages, swapped, order } = parts;
  const away = new Map<string, Away>();
  let pos = 0;
  let hostBytes = 0;
  let peakHost = 0;
  const key = (stage: number, mb: number) => `${stage}:${mb}`;
  /** The index of `a` in the order, searching on from the last one (a stream may skip actions past its end). */
  const indexOf = (a: Action): number => {
    for (let i = pos; i < order.length; i++) {
      const b = order[i];
      if (b.stage === a.stage && b.mb === a.mb && b.op === a.op) return (pos = i);
    }
    return -1;
  };

  const swapIn = (stage: number, mb: number, log: StepLog): void => {
    const h = away.get(key(stage, mb));
    if (!h) return;
    away.delete(key(stage, mb));
    const t0 = epochMs();
    // Back on the device they are the stash again (the allocator's count: nn/memory-ledger.ts).
    const back = new Map<Tensor, Tensor>(h.tensors.map((t, i) => [t, be.memory.scope('stash', () => be.tensor(h.data[i], t.shape, t.dtype))]));
    (stages.get(stage) as SwappableStage).remapStash(mb, back, false);
    hostBytes -= h.bytes;
    be.memory.setHost('stash', hostBytes);
    log.comm(stage, mb, 'swap-in', t0, epochMs());
  };

  const swapOut = async (a: Action, log: StepLog): Promise<void> => {
    const st = stages.get(a.stage) as SwappableStage;
    const t0 = epochMs();
    const tensors = st.stashTensors(a.mb);
    const data = await Promise.all(tensors.map((t) => be.read(t)));
    for (const t of tensors) be.dispose(t);
    st.remapStash(a.mb, new Map(), true);
    const bytes = tensors.reduce((n, t) => n + 4 * t.size, 0);
    away.set(key(a.stage, a.mb), { tensors, data, bytes });
    hostBytes += bytes;
    be.memory.setHost('stash', hostBytes);
    peakHost = Math.max(peakHost, hostBytes);
    log.comm(a.stage, a.mb, 'swap-out', t0, epochMs());
  };

  return {
    ...forwardingPolicy(inner),
    async beforeAction(a, log) {
      const i = indexOf(a);
      // The backward itself, when nothing ran between: its stash comes back now.
      if (a.op === 'B' || a.op === 'I') swapIn(a.stage, a.mb, log);
      // The prefetch: the next action's stash is issued back before this one runs.
      const next = i >= 0 ? order[i + 1] : undefined;
      if (next && (next.op === 'B' || next.op === 'I')) swapIn(next.stage, next.mb, log);
      await inner.beforeAction?.(a, log);
    },
    async afterAction(a, log) {
      await inner.afterAction?.(a, log);
      if (a.op !== 'F' || !swapped.has(a.stage)) return;
      const i = indexOf(a);
      if (i >= 0 && isBackward(order[i + 1], a.stage, a.mb)) return;
      await swapOut(a, log);
    },
    async endStep(step, log) {
      pos = 0;
      if (away.size > 0) throw new Error(`${away.size} swapped stash(es) never came back for their backward (${[...away.keys()].join(', ')})`);
      await inner.endStep(step, log);
    },
    report(): PolicyReport {
      const r = inner.report();
      const peak = peakHost;
      peakHost = hostBytes;
      return { ...r, hostStashBytes: peak };
    },
    dispose() {
      away.clear();
      inner.dispose();
    },
  };
}
