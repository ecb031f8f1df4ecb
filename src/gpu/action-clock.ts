/**
 * Times a worker's actions on its GPU without waiting for any of them.
 *
 *   clock.begin();  ...issue an action's kernels...  clock.end();      (per action, nothing awaited)
 *   const spans = await clock.collect();                                (once, at the step's end)
 *
 * With the adapter's timestamp-query feature (source 'timestamp'), `begin` opens a compute pass that writes a
 * timestamp at its start (the action's dispatches join it) and `end` writes one after its last command, each into
 * the next two slots of the step's query sets (1024 queries a set, more sets as a step needs them, kept from step
 * to step). `collect` resolves every slot written into one buffer, copies it to a staging buffer of the pool and
 * begins mapping it, in the same submit as the step's update; nothing waits for that map (it is no counted wait and
 * is not nudged): the caller awaits the spans a step later, when they have long arrived (rank-executor.ts). While
 * one step's spans are mapped the next step's resolve into another staging buffer: the pool is their ring. The spans
 * come back in ms on the device's own clock, from the step's first timestamp (browsers quantize timestamps, Chrome
 * to ~0.1 ms without its developer features: an action shorter than that may read 0).
 *
 * Without the feature (source 'wall'), `end` asks for a completion callback (queue.onSubmittedWorkDone) right
 * after the submit that carries the action's commands, noting the time it fires on `now`'s clock; nothing waits
 * for it. A span's end is that time and its start is unknown (NaN): the caller places it after the action's issue
 * and the previous action's end. Chromium notices finished work when the page sends commands or every 1–2 ms, so
 * these ends are late by up to that much.
 */
import type { BufferPool } from './buffer-pool.ts';
import type { CommandStream } from './launch.ts';

/** One action's span: [start, end] in ms (see ActionClock.source); start NaN where it is not measured. */
export type ActionSpan = readonly [number, number];

export interface ActionClock {
  /** 'timestamp': spans on the device's clock (ms from the step's first timestamp); 'wall': ends on `now`'s clock. */
  readonly source: 'timestamp' | 'wall';
  /** Before an action's kernels are issued. */
  begin(): void;
  /** After they are issued (before the submit that carries them, which the caller makes). */
  end(): void;
  /**
   * Every span since the last collect, in begin order; the clock is then empty for the next step. The read begins
   * at the call (what it needs is submitted then) and is no wait: the promise may be awaited much later.
   */
  collect(): Promise<ActionSpan[]>;
  /** Drops what was not collected (a step that failed): the next step starts empty. */
  discard(): void;
}

/** Queries per query set (WebGPU's limit is 4096); a multiple of 32 so each set's resolved bytes start 256-aligned. */
const QUERIES_PER_SET = 1024;

export class TimestampClock implements ActionClock {
  readonly source = 'timestamp';
  private readonly sets: GPUQuerySet[] = [];
  /** Queries written this step (two per action). */
  private used = 0;
  private open = false;

  constructor(
    private readonly device: GPUDevice,
    private readonly stream: CommandStream,
    private readonly pool: BufferPool,
    /** Maps a staging buffer without a counted or nudged wait (ended by a lost device): the spans are read late. */
    private readonly mapLater: (buf: GPUBuffer, bytes: number) => Promise<void>,
  ) {}

  private slot(i: number): [GPUQuerySet, number] {
    const set = Math.floor(i / QUERIES_PER_SET);
    while (this.sets.length <= set) this.sets.push(this.device.createQuerySet({ type: 'timestamp', count: QUERIES_PER_SET, label: `action spans ${this.sets.length}` }));
    return [this.sets[set], i % QUERIES_PER_SET];
  }

  begin(): void {
    if (this.open) throw new Error('ActionClock.begin() twice without end()');
    this.open = true;
    const [set, index] = this.slot(this.used);
    this.stream.beginTimestampPass(set, index);
  }

  end(): void {
    if (!this.open) throw new Error('ActionClock.end() without begin()');
    this.open = false;
    const [set, index] = this.slot(this.used + 1);
    this.stream.endTimestampPass(set, index);
    this.used += 2;
  }

  discard(): void {
    this.used = 0;
    this.open = false;
  }

  collect(): Promise<ActionSpan[]> {
    const n = this.used;
    this.used = 0;
    this.open = false;
    if (n === 0) return Promise.resolve([]);
    const bytes = n * 8;
    const resolve = this.pool.acquire(bytes, GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC, 'action clock', 'staging').buffer;
    const staging = this.pool.acquire(bytes, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, 'action clock readback', 'staging').buffer;
    const enc = this.stream.encoderForCommands();
    for (let at = 0; at < n; at += QUERIES_PER_SET) {
      enc.resolveQuerySet(this.sets[at / QUERIES_PER_SET], 0, Math.min(QUERIES_PER_SET, n - at), resolve, at * 8);
    }
    enc.copyBufferToBuffer(resolve, 0, staging, 0, bytes);
    this.stream.releaseAfterSubmit(resolve);
    this.stream.flush();
    return this.read(staging, bytes, n);
  }

  private async read(staging: GPUBuffer, bytes: number, n: number): Promise<ActionSpan[]> {
    let t: BigUint64Array;
    try {
      await this.mapLater(staging, bytes);
      t = new BigUint64Array(staging.getMappedRange(0, bytes).slice(0));
      staging.unmap();
    } finally {
      this.pool.release(staging);
    }
    const t0 = t[0];
    const ms = (x: bigint) => Number(x - t0) / 1e6;
    const spans: ActionSpan[] = [];
    for (let i = 0; i < n; i += 2) spans.push([ms(t[i]), ms(t[i + 1])]);
    return spans;
  }
}

export class CompletionClock implements ActionClock {
  readonly source = 'wall';
  private ends: Promise<number>[] = [];

  constructor(
    private readonly device: GPUDevice,
    private readonly stream: CommandStream,
    /** The clock the ends are read on (the caller's: epoch ms for the run's timeline). */
    private readonly now: () => number,
  ) {}

  begin(): void {}

  discard(): void {
    this.ends = [];
  }

  end(): void {
    let done!: (t: number) => void;
    this.ends.push(new Promise<number>((r) => (done = r)));
    // After the submit that carries the action's commands: its callback fires when they (and all before) are done.
    this.stream.onSubmit(() => {
      this.device.queue.onSubmittedWorkDone().then(
        () => done(this.now()),
        () => done(this.now()),
      );
    });
  }

  async collect(): Promise<ActionSpan[]> {
    const ends = this.ends;
    this.ends = [];
    // Each fired by the time the step's end has waited for its own reads (all submitted after them).
    return (await Promise.all(ends)).map((e): ActionSpan => [NaN, e]);
  }
}
