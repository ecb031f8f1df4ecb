/**
 * An explicit cut: the blocks of each stage as a list (`cut: [1, 1, 2]`: four
 * blocks cut into stages of 1, 1 and 2), used when `partition` is 'cut'. It
 * is how a cut the Plan panel found (by block count, FLOPs or measured time)
 * becomes a run, and how a link reproduces it (`cut=1,1,2`).
 *
 * The rule for the field: `cut` is present exactly when partition = 'cut'
 * (a cut with another partition is refused, not silently ignored; a link that
 * gives `cut` without `partition` means partition = 'cut'). When present it
 * has one entry per stage (ranks × virtual), each a whole number ≥ 1, summing
 * to the model's blocks (layers + 1). The stage limits (buffer, memory per
 * rank) are then checked on this cut like on any other (run-limits.ts).
 */
import type { BlockRange } from '../nn/partition.ts';
import { ConfigError } from '../util/errors.ts';

/** What the cut's rules read from a run configuration. */
export interface CutInput {
  ranks: number;
  virtual: number;
  layers: number;
  partition: string;
  cut?: readonly number[];
}

const TEXT_RULE = 'must list the blocks of each stage as whole numbers separated by commas, such as 1,1,2';

/** The cut as typed in a URL, a CLI flag or the page's field (`1,1,2`; blanks around entries allowed). */
export function parseCutText(raw: string): number[] {
  const parts = raw.split(',').map((s) => s.trim());
  if (raw.trim() === '' || parts.some((p) => !/^\d+$/.test(p))) throw new ConfigError('cut', raw, TEXT_RULE);
  return parts.map(Number);
}

/** The cut as the URL and the page's field write it. */
export function cutText(cut: readonly number[]): string {
  return cut.join(',');
}

/** Block ranges [start, end) of a cut. */
export function rangesOfCut(cut: readonly number[]): BlockRange[] {
  const out: BlockRange[] = [];
  let a = 0;
  for (const n of cut) {
    out.push([a, a + n]);
    a += n;
  }
  return out;
}

/** The cut (blocks per stage) of block ranges. */
export function cutOfRanges(ranges: readonly BlockRange[]): number[] {
  return ranges.map(([a, b]) => b - a);
}

/**
 * Throws a ConfigError naming the field, the value and the rule; call after
 * ranks, virtual, layers and partition passed their own rules.
 */
export function validateCut(cfg: CutInput): void {
  const cut: unknown = cfg.cut;
  if (cfg.partition !== 'cut') {
    if (cut !== undefined) {
      throw new ConfigError('cut', cut, `is read only with partition = "cut" (partition is ${JSON.stringify(cfg.partition)}): leave cut out, or set partition to "cut"`);
    }
    return;
  }
  if (cut === undefined) throw new ConfigError('partition', cfg.partition, 'needs cut, the blocks of each stage (e.g. cut = [1, 1, 2], in a link cut=1,1,2)');
  if (!Array.isArray(cut)) throw new ConfigError('cut', cut, 'must be a list of blocks per stage, such as [1, 1, 2]');
  const bad = cut.findIndex((n) => typeof n !== 'number' || !Number.isInteger(n) || n < 1);
  if (bad >= 0) throw new ConfigError('cut', cut, `entry ${bad} is ${JSON.stringify(cut[bad]) ?? String(cut[bad])}; every entry must be a whole number ≥ 1 (a stage holds at least one block)`);
  const stages = cfg.ranks * cfg.virtual;
  if (cut.length !== stages) {
    throw new ConfigError('cut', cut, `has ${cut.length} stage${cut.length === 1 ? '' : 's'}; ranks × virtual = ${stages} stage${stages === 1 ? '' : 's'} need${stages === 1 ? 's' : ''} ${stages} entr${stages === 1 ? 'y' : 'ies'}`);
  }
  const blocks = cfg.layers + 1;
  const sum = (cut as number[]).reduce((s, n) => s + n, 0);
  if (sum !== blocks) throw new ConfigError('cut', cut, `sums to ${sum} blocks; the model has ${blocks} (layers + 1)`);
}
