/**
 * The coordinator's line to every worker of a data-parallel mesh, one
 * MessageChannel per worker beside the data plane:
 *
 * - a barrier: with overlap off, no stage's all-reduce starts before every
 *   worker of the mesh has finished its step's actions (each worker arrives,
 *   the hub releases all once the last one has);
 * - status: a worker says what collective it is in (and when it left it), so a
 *   worker that dies in the middle of one is named with the replica, the stage
 *   and the collective it was in, not only its number.
 */
export type ControlMessage = { type: 'arrive'; step: number } | { type: 'release'; step: number } | { type: 'status'; text: string | null };

/** The worker's side. */
export class MeshControlClient {
  private readonly released = new Map<number, () => void>();
  private readonly early = new Set<number>();

  constructor(
    private readonly port: MessagePort,
    private readonly timeoutMs: number,
  ) {
    port.onmessage = (e: MessageEvent<ControlMessage>) => {
      const m = e.data;
      if (m?.type !== 'release') return;
      const r = this.released.get(m.step);
      if (r) r();
      else this.early.add(m.step);
    };
    port.start();
  }

  /** Resolves once every worker of the mesh has arrived for `step`; `waitingFor` names what this worker waits to do. */
  barrier(step: number, waitingFor: string): Promise<void> {
    this.port.postMessage({ type: 'arrive', step } satisfies ControlMessage);
    if (this.early.delete(step)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.released.delete(step);
        reject(new Error(`waited ${(this.timeoutMs / 1000).toFixed(1)} s for every worker of the mesh to finish step ${step}'s actions before ${waitingFor}, and they never did`));
      }, this.timeoutMs);
      this.released.set(step, () => {
        clearTimeout(timer);
        this.released.delete(step);
        resolve();
      });
    });
  }

  /** What this worker is doing now (null: nothing the hub needs to know). */
  status(text: string | null): void {
    this.port.postMessage({ type: 'status', text } satisfies ControlMessage);
  }

  close(): void {
    for (const r of this.released.values()) r();
    this.released.clear();
    this.port.close();
  }
}

/** The coordinator's side: one port per worker. */
export class MeshControlHub {
  /** The ports to hand to the workers, by worker. */
  readonly workerPorts: MessagePort[] = [];
  private readonly own: MessagePort[] = [];
  private readonly arrived = new Map<number, Set<number>>();
  private readonly statuses: (string | null)[];

  constructor(workers: number) {
    this.statuses = new Array<string | null>(workers).fill(null);
    for (let w = 0; w < workers; w++) {
      const ch = new MessageChannel();
      this.workerPorts.push(ch.port2);
      this.own.push(ch.port1);
      ch.port1.onmessage = (e: MessageEvent<ControlMessage>) => this.receive(w, e.data);
      ch.port1.start();
    }
  }

  private receive(w: number, m: ControlMessage): void {
    if (m?.type === 'status') this.statuses[w] = m.text;
    if (m?.type !== 'arrive') return;
    const set = this.arrived.get(m.step) ?? new Set<number>();
    set.add(w);
    this.arrived.set(m.step, set);
    if (set.size < this.own.length) return;
    this.arrived.delete(m.step);
    for (const p of this.own) p.postMessage({ type: 'release', step: m.step } satisfies ControlMessage);
  }

  /** What worker `w` last said it was doing (null: nothing). */
  status(w: number): string | null {
    return this.statuses[w] ?? null;
  }

  close(): void {
    for (const p of this.own) p.close();
  }
}
