/**
 * What a worker's end of an in-stage group (tp's, ep's) holds whatever its collectives: the members' ports and
 * mailbox, and the step's context its collectives are logged against and numbered in (tp-collective.ts,
 * ep-collective.ts). The group's members run the same actions with the same layers, so their numbers agree.
 */
import type { Backend } from '../../nn/backend.ts';
import type { Action } from '../../schedule/types.ts';
import type { Mailbox } from './mailbox.ts';
import type { StepLog } from './transport.ts';

/** The calls a group's collectives make of its backend: the tensors they read, make and free. */
export type GroupBackend = Pick<Backend, 'tensor' | 'zeros' | 'read' | 'readMany' | 'dispose'>;

export interface GroupChannelOptions {
  be: GroupBackend;
  /** This worker's place in its group, and the group's size. */
  index: number;
  size: number;
  /** The group's workers (mesh.ts order), by index in the group: for messages. */
  workers: readonly number[];
  /** Ports to the other members, by index in the group. */
  ports: ReadonlyMap<number, MessagePort>;
  mailbox: Mailbox;
  recvTimeoutMs: number;
}

export abstract class GroupChannel {
  /** The action running now and its step's log (set before every action). */
  protected current: { a: Action; log: StepLog } | null = null;
  /** Collectives issued so far in the step, per stage. */
  protected issued = new Map<number, number>();
  private step = -1;

  constructor(protected readonly o: GroupChannelOptions) {}

  /** Called before every action: collectives are logged against it and numbered within its step. */
  enter(a: Action, log: StepLog): void {
    if (log.step !== this.step) {
      this.step = log.step;
      this.issued.clear();
    }
    this.current = { a, log };
  }

  /** Outside a step (the warm-up's dry pass): collectives return tensors of the right shapes and exchange nothing. */
  leave(): void {
    this.current = null;
  }
}

/** A collective's values on the CPU. */
export type Vector = Float32Array | Float64Array;

/** The vectors one after another. */
export function concat(vs: readonly Vector[]): Vector {
  const out = new (vs[0].constructor as new (n: number) => Vector)(vs.reduce((n, v) => n + v.length, 0));
  let at = 0;
  for (const v of vs) {
    out.set(v, at);
    at += v.length;
  }
  return out;
}
