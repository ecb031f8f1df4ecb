/**
 * Test support: the CPU reference whose reads take a turn of the event loop (as a GPU read waits for its queue),
 * counting how many are in flight at once, so a test can tell reads issued together from reads one after another;
 * `failOn` rejects the n-th read of a one-element tensor (a loss).
 */
import { CpuBackend } from '../cpu-backend.ts';

export class CountingReads extends CpuBackend {
  inFlight = 0;
  most = 0;
  reads = 0;
  scalarReads = 0;
  constructor(private readonly failOn = -1) {
    super();
  }

  override async read(t: Parameters<CpuBackend['read']>[0]) {
    const scalar = t.size === 1;
    const n = scalar ? this.scalarReads++ : -1;
    this.reads++;
    this.inFlight++;
    this.most = Math.max(this.most, this.inFlight);
    try {
      await new Promise((r) => setTimeout(r, 1));
      if (scalar && n === this.failOn) throw new Error('the GPU lost the loss read');
      return await super.read(t);
    } finally {
      this.inFlight--;
    }
  }
}
