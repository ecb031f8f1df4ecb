/**
 * The shared-device play: like engine.ts, but the ranks share one device. A
 * device with k effective lanes runs up to k actions at full speed; when n > k
 * ranks compute at once, each progresses at rate k/n (processor sharing). Links
 * are not shared: a message still arrives its delay after its producer ends.
 * With k ≥ ranks this is engine.ts's play exactly. k need not be an integer (a
 * machine whose two cores give 1.6 cores' worth of work has k = 1.6).
 *
 * The caller guarantees a valid schedule (validate.ts): no stuck ranks.
 * Cost: O(events · ranks), events ≤ 2 · actions.
 */
import type { Play, PlayCosts } from './engine.ts';
import type { Schedule } from './types.ts';

export function playShared(s: Schedule, costs: PlayCosts, lanes: number): Play {
  const S = s.stages;
  const m = s.microbatches;
  const R = s.ranks;
  const keys = S * m;
  // Stages per model copy: a copy's first stage reads data, its last the loss (copies.ts).
  const perCopy = S / (s.copies ?? 1);
  const finish = new Float64Array(2 * keys).fill(-1);
  const start: Float64Array[] = [];
  const end: Float64Array[] = [];
  for (let r = 0; r < R; r++) {
    start.push(new Float64Array(s.order[r].length).fill(NaN));
    end.push(new Float64Array(s.order[r].length).fill(NaN));
  }
  const ptr = new Int32Array(R);
  const free = new Float64Array(R);
  const running = new Uint8Array(R);
  const remaining = new Float64Array(R);
  const s2r = s.stageToRank;

  /** When rank r's next action may start, or NaN while an input is not yet produced. */
  const readyAt = (r: number): number => {
    const a = s.order[r][ptr[r]];
    const base = a.stage * m + a.mb;
    let t = free[r];
    const need = (k: number, fromStage: number, boundary: number): boolean => {
      const f = finish[k];
      if (f < 0) return false;
      const from = s2r[fromStage];
      const arrive = from === r ? f : f + costs.linkDelay(from, r, boundary);
      if (arrive > t) t = arrive;
      return true;
    };
    if (a.op === 'F') {
      if (a.stage % perCopy !== 0 && !need(base - m, a.stage - 1, a.stage - 1)) return NaN;
    } else if (a.op === 'W') {
      if (!need(keys + base, a.stage, a.stage)) return NaN;
    } else {
      if (!need(base, a.stage, a.stage)) return NaN;
      if ((a.stage + 1) % perCopy !== 0 && !need(keys + base + m, a.stage + 1, a.stage)) return NaN;
    }
    return t;
  };

  const reportTransfer = (r: number): void => {
    if (!costs.onTransfer) return;
    const a = s.order[r][ptr[r]];
    const base = a.stage * m + a.mb;
    let fromStage = -1;
    let k = -1;
    if (a.op === 'F' && a.stage % perCopy !== 0) {
      fromStage = a.stage - 1;
      k = base - m;
    } else if ((a.op === 'B' || a.op === 'I') && (a.stage + 1) % perCopy !== 0) {
      fromStage = a.stage + 1;
      k = keys + base + m;
    }
    if (k < 0) return;
    const from = s2r[fromStage];
    if (from === r) return;
    const f = finish[k];
    const arrive = f + costs.linkDelay(from, r, Math.min(a.stage, fromStage));
    if (arrive > f) costs.onTransfer(a, r, from, f, arrive);
  };

  let now = 0;
  let left = 0;
  for (const list of s.order) left += list.length;
  while (left > 0) {
    // Start every action whose inputs are in and whose rank is free by now.
    let nextReady = Infinity;
    for (let r = 0; r < R; r++) {
      if (running[r] || ptr[r] >= s.order[r].length) continue;
      const t = readyAt(r);
      if (Number.isNaN(t)) continue;
      if (t <= now) {
        reportTransfer(r);
        running[r] = 1;
        remaining[r] = costs.duration(s.order[r][ptr[r]]);
        start[r][ptr[r]] = now;
      } else if (t < nextReady) nextReady = t;
    }
    let n = 0;
    let minRem = Infinity;
    for (let r = 0; r < R; r++) {
      if (!running[r]) continue;
      n++;
      if (remaining[r] < minRem) minRem = remaining[r];
    }
    const rate = n > lanes ? lanes / n : 1;
    const dtDone = n > 0 ? minRem / rate : Infinity;
    const dt = Math.min(dtDone, nextReady - now);
    if (!Number.isFinite(dt)) throw new Error('playShared: no action can run (an invalid schedule?)');
    now += dt;
    if (n === 0) continue;
    const done = dt === dtDone;
    for (let r = 0; r < R; r++) {
      if (!running[r]) continue;
      const rem = remaining[r] - rate * dt;
      // The one(s) that set the step finish exactly; guard the others against rounding.
      if ((done && remaining[r] === minRem) || rem <= 1e-12 * Math.max(1, remaining[r])) {
        const i = ptr[r];
        const a = s.order[r][i];
        end[r][i] = now;
        running[r] = 0;
        free[r] = now;
        if (a.op !== 'W') finish[(a.op === 'F' ? 0 : keys) + a.stage * m + a.mb] = now;
        ptr[r]++;
        left--;
      } else remaining[r] = rem;
    }
  }
  return { start, end, stuck: [] };
}
