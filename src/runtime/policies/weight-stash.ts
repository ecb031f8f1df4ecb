/**
 * Weight stashing for PipeDream's asynchronous 1F1B (Narayanan et al., SOSP
 * 2019): each stage applies its optimizer after every backward, so its weights
 * move on while earlier micro-batches are still in flight. A micro-batch's
 * backward must use the weights its forward used: the stage keeps ("stashes")
 * that version until the backward is done. The update policy in
 * update-policy.ts drives it.
 */
import type { Backend, Tensor } from '../../nn/backend.ts';
import type { Param } from '../../nn/param.ts';

export interface VersionRecord {
  stage: number;
  mb: number;
  /** Weight version the forward ran with. */
  forward: number;
  /** Weight version loaded when the backward ran. */
  backward: number;
  /** The stage's current version when the backward ran (> forward when the stash mattered). */
  current: number;
}

interface StashedVersion {
  copies: Tensor[];
  refs: number;
}

/** The weight versions of one stage. */
export class WeightStash {
  /** Updates applied so far: the version of the current weights. */
  version = 0;
  private readonly versions = new Map<number, StashedVersion>();
  private readonly mbVersion = new Map<number, number>();
  private peakVersions = 0;
  private peakBytes = 0;

  constructor(
    private readonly be: Backend,
    private readonly stage: number,
    private readonly params: readonly Param[],
  ) {}

  /** Called at a micro-batch's forward: remembers (and keeps) the current version. */
  onForward(mb: number): void {
    let v = this.versions.get(this.version);
    if (!v) {
      v = { copies: this.params.map((p) => this.be.memory.scope('weights', () => this.be.clone(p.value))), refs: 0 };
      this.versions.set(this.version, v);
    }
    v.refs++;
    this.mbVersion.set(mb, this.version);
    this.peakVersions = Math.max(this.peakVersions, this.versions.size);
    this.peakBytes = Math.max(this.peakBytes, this.bytes());
  }

  /** Runs `backward` with the weights mb's forward used, then puts the current ones back. */
  async withForwardWeights<T>(mb: number, backward: () => Promise<T>): Promise<{ result: T; record: VersionRecord }> {
    const fv = this.mbVersion.get(mb);
    if (fv === undefined) throw new Error(`stage ${this.stage} has no stashed weights for micro-batch ${mb}`);
    const stash = this.versions.get(fv) as StashedVersion;
    let result: T;
    let loaded = this.version;
    if (fv === this.version) {
      result = await backward();
    } else {
      const current = this.params.map((p) => this.be.memory.scope('weights', () => this.be.clone(p.value)));
      this.params.forEach((p, i) => this.be.copyInto(p.value, stash.copies[i]));
      loaded = fv;
      try {
        result = await backward();
      } finally {
        this.params.forEach((p, i) => this.be.copyInto(p.value, current[i]));
        for (const t of current) this.be.dispose(t);
      }
    }
    this.mbVersion.delete(mb);
    if (--stash.refs === 0) {
      for (const t of stash.copies) this.be.dispose(t);
      this.versions.delete(fv);
    }
    return { result, record: { stage: this.stage, mb, forward: fv, backward: loaded, current: this.version } };
  }

  bytes(): number {
    let b = 0;
    for (const v of this.versions.values()) for (const t of v.copies) b += 4 * t.size;
    return b;
  }

  peak(): { versions: number; bytes: number } {
    return { versions: this.peakVersions, bytes: this.peakBytes };
  }

  dispose(): void {
    for (const v of this.versions.values()) for (const t of v.copies) this.be.dispose(t);
    this.versions.clear();
    this.mbVersion.clear();
  }
}
