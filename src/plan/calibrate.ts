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
import { meanOpTimes, simulate, type CostModel, type Op, type Schedule, type SimulationResult } from '../schedule/index.ts';
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

/** Mean duration of each (stage, op) of a simulation, as a record. */
export function meanOpTimesOf(r: SimulationResult): StageOpMs {
  return Object.fromEntries(meanOpTimes(r.timeline));
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
    const sim = meanOpTimesOf(shared);
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
