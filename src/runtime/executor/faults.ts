/**
 * Fault injection for tests of the failure paths: a run configuration may name
 * one fault, which the rank that owns the action injects when it reaches it.
 * The faults are wrappers around the transport, the update policy and the
 * step runner, installed only when a fault is configured (rank-runtime.ts).
 */
import type { Action } from '../../schedule/types.ts';
import type { Payload } from '../comm/index.ts';
import type { StepRunner } from './rank-executor.ts';
import { Transport, type TransportOptions } from '../comm/index.ts';
import type { Fault } from '../../config/fault-spec.ts';
import { forwardingPolicy, type UpdatePolicy } from '../policies/index.ts';

/** `AR<stage>`: a fault in a stage's collective. */
const COLLECTIVE_ACTION = /^AR(\d+)$/;

export function faultFires(f: Fault | undefined, a: Action, step: number): boolean {
  return !!f && f.action === `${a.stage}${a.op}${a.mb}` && (f.step ?? 0) === step;
}

/** Whether `f` fires before exchange `exchange` of stage `stage`'s collective in `step` (of `exchanges` in all): the second one, mid-collective. */
export function collectiveFaultFires(f: Fault | undefined, stage: number, step: number, exchange: number, exchanges: number): boolean {
  const m = f ? COLLECTIVE_ACTION.exec(f.action) : null;
  return !!m && Number(m[1]) === stage && (f?.step ?? 0) === step && exchange === Math.min(1, exchanges - 1);
}

/** What an injected fault may do to the rank's surroundings (the stage worker supplies them). */
export interface FaultEffects {
  loseDevice?(): void;
  crash?(): void;
}

/** The transport with message faults: drop the message, or post it with a wrong shape. */
export class FaultyTransport extends Transport {
  constructor(
    o: TransportOptions,
    private readonly fault: Fault,
  ) {
    super(o);
  }

  protected override post(port: MessagePort, msg: Payload, from: Action, step: number): boolean {
    if (!faultFires(this.fault, from, step)) return super.post(port, msg, from, step);
    if (this.fault.kind === 'drop-message') return false;
    if (this.fault.kind === 'malformed-message') {
      port.postMessage({ ...msg, shape: [msg.shape[0] + 1, ...msg.shape.slice(1)] });
      return false;
    }
    return super.post(port, msg, from, step);
  }
}

/** The update policy with action faults: a kernel that throws, a lost device, a crashed worker. */
export function faultyPolicy(inner: UpdatePolicy, fault: Fault, effects: FaultEffects, step: () => number): UpdatePolicy {
  return {
    ...forwardingPolicy(inner),
    apply(a, compute) {
      if (faultFires(fault, a, step())) {
        if (fault.kind === 'throw') throw new Error('injected fault: the stage kernel threw');
        if (fault.kind === 'lose-device') effects.loseDevice?.();
        if (fault.kind === 'crash-worker') effects.crash?.();
      }
      return inner.apply(a, compute);
    },
  };
}

/** The step runner with a loss fault: the step's losses read as NaN. */
export function faultyRunner(inner: StepRunner, fault: Fault): StepRunner {
  return {
    async runStep(step, onActionDone, lossesEvery) {
      const r = await inner.runStep(step, onActionDone, lossesEvery);
      if (fault.kind === 'nan-loss' && (fault.step ?? 0) === step) r.losses = r.losses.map((l) => ({ ...l, loss: NaN }));
      return r;
    },
    lateTimes: () => inner.lateTimes(),
  };
}
