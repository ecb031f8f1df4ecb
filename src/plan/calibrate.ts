/**
 * From what a run measured to what a block costs alone. On a shared device an
 * action's measured time is its solo time stretched by whatever else ran
 * beside it, so a run's mean op times overstate the quiet stretches (warm-up,
 * cool-down) and understate nothing. Given the device's effective lanes k,
 * `calibrateSolo` finds the solo per-stage op times whose shared-device play
 * (simulate.ts, lanes = k) reproduces the measured means, by a fixed-point
 * iteration: scale each solo time by measured mean / simulated mean until they
 * agree. Its makespan is the shared-device prediction of the run; the same solo
 * times played on independent devices are the ideal.
 */
import { simulate, type CostModel, type Op, type Schedule, type SimulationResult } from '../schedule/index.ts';
import { ConfigError } from '../util/errors.ts';

export type StageOpMs = Record<number, Partial<Record<Op, number>>>;

export interface Calibration {
  /** Solo time of each op on each stage, as the simulator's per-stage lists. */
  solo: Record<Op, number[]>;
  /** The schedule played with the solo times on the shared device. */
  shared: SimulationResult;
  /** And on independent devices. */
  independent: SimulationResult;
  /** Largest relative gap left between a simulated and a measured mean. */
  residual: number;
  iterations: number;
}

const OPS: readonly Op[] = ['F', 'B', 'I', 'W'];

/** Mean duration of each (stage, op) in a simulated or measured timeline. */
export function meanOpTimes(r: SimulationResult): StageOpMs {
  const sums = new Map<string, { t: number; n: number }>();
  for (const iv of r.timeline.intervals) {
    if (iv.op === 'comm') continue;
    const k = `${iv.stage}:${iv.op}`;
    const e = sums.get(k) ?? { t: 0, n: 0 };
    e.t += iv.end - iv.start;
    e.n++;
    sums.set(k, e);
  }
  const out: StageOpMs = {};
  for (const [k, e] of sums) {
    const [s, op] = k.split(':');
    (out[Number(s)] ??= {})[op as Op] = e.t / e.n;
  }
  return out;
}

export function calibrateSolo(schedule: Schedule, measured: StageOpMs, lanes: number, links: Pick<CostModel, 'latency' | 'bandwidth' | 'activationBytes' | 'comm'> = {}, maxIterations = 200): Calibration {
  if (typeof lanes !== 'number' || Number.isNaN(lanes) || lanes <= 0) throw new ConfigError('lanes', lanes, 'must be a number greater than 0');
  const S = schedule.stages;
  const solo = Object.fromEntries(OPS.map((op) => [op, Array.from({ length: S }, (_, s) => measured[s]?.[op] ?? 0)])) as Record<Op, number[]>;
  const used = new Set(schedule.order.flat().map((a) => `${a.stage}:${a.op}`));
  for (const key of used) {
    const [s, op] = key.split(':');
    const x = measured[Number(s)]?.[op as Op];
    if (typeof x !== 'number' || !Number.isFinite(x) || x < 0) throw new ConfigError(`measured[${s}].${op}`, x, 'must be a finite time ≥ 0: the schedule runs this op');
  }
  const costs = (): CostModel => ({ ...links, F: solo.F, B: solo.B, I: solo.I, W: solo.W, unit: 'ms' });
  let shared = simulate(schedule, { ...costs(), lanes });
  let residual = Infinity;
  let it = 0;
  for (; it < maxIterations; it++) {
    const sim = meanOpTimes(shared);
    residual = 0;
    for (const key of used) {
      const [ss, op] = key.split(':') as [string, Op];
      const s = Number(ss);
      const want = measured[s]?.[op] ?? 0;
      const got = sim[s]?.[op] ?? 0;
      if (want > 0 && got > 0) {
        residual = Math.max(residual, Math.abs(got - want) / want);
        solo[op][s] *= want / got;
      }
    }
    if (residual < 1e-9) break;
    shared = simulate(schedule, { ...costs(), lanes });
  }
  return { solo, shared, independent: simulate(schedule, costs()), residual, iterations: it };
}
