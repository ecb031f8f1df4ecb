/**
 * Where the planner may keep bytes off the device (issue 54): over a device's link to its host memory
 * (DeviceSpec.hostLinkGBps, PCIe, one direction), optimizer offload (ZeRO-Offload, Ren et al. 2021) and activation
 * swapping (vDNN, Rhu et al. 2016), tried on a layout that fits no other way, as the tab's runtime runs them:
 *  - offload (ZeRO 0 and 1, flush schedules, as the runtime takes it): the optimizer's K bytes a parameter (its ZeRO-1
 *    share) leave the device; at the step's end every rank's gradients (its ZeRO-1 shard after the reduce-scatter)
 *    come down and its weights go back up over the host link, after the flush (the CPU's update itself is not
 *    priced: ZeRO-Offload's CPU Adam overlaps or is short beside the transfers, an assumption);
 *  - swapping (every stage): each stage's stash leaves after its forward and comes back before its backward; the
 *    device holds at most two micro-batches' of each rank (the one a forward made, the one brought back); each copy
 *    crosses the link once a micro-batch and hides behind the action it overlaps, so a forward and a backward take
 *    the longer of their compute and their stash's copy.
 */
import { peakMemory, type CostModel, type PerStage, type Schedule } from '../schedule/index.ts';
import { SCHEDULES, UPDATE_WINDOWS } from '../schedule/registry.ts';
import { planStep, type PlanSchedule } from './plan-schedules.ts';
import type { DeviceSpec } from './device.ts';
import { ConfigError } from '../util/errors.ts';
import type { TransformerModel } from './transformer.ts';
import { optimizerBytesPerParam, stateBytesPerParam } from './transformer.ts';
import type { ZeroStage } from './zero.ts';

/** A plan request's hostOptions: a boolean, and true only with a host link to cross. */
export function checkHostOptions(hostOptions: unknown, device: DeviceSpec): void {
  if (hostOptions !== undefined && typeof hostOptions !== 'boolean') throw new ConfigError('hostOptions', hostOptions, 'must be true or false');
  if (hostOptions && !device.hostLinkGBps) throw new ConfigError('device.hostLinkGBps', device.hostLinkGBps, 'must be given (GB/s, one direction) to plan offload and swapping over the host link (hostOptions = true)');
}

export interface HostChoice {
  offload: boolean;
  swap: boolean;
}

/** What a layout that does not fit tries, cheapest first; none without a host link. */
export function hostChoices(device: DeviceSpec, zero: ZeroStage, stream: boolean): HostChoice[] {
  if (!device.hostLinkGBps) return [];
  const offload = zero <= 1 && !stream;
  return [...(offload ? [{ offload: true, swap: false }] : []), { offload: false, swap: true }, ...(offload ? [{ offload: true, swap: true }] : [])];
}

/** A rank's state with its optimizer offloaded: the optimizer's share of its bytes a parameter leaves the device. */
export function offloadedStateBytes(model: TransformerModel, state: readonly number[], zero: ZeroStage, dp: number): number[] {
  const per = stateBytesPerParam(model, zero, dp);
  const optimizer = optimizerBytesPerParam(model) / (zero >= 1 ? dp : 1);
  return state.map((x) => x * (1 - optimizer / per));
}

/** Milliseconds of a step's offload: each rank's gradients down and its weights up (its ZeRO-1 share), the slowest rank's. */
export function offloadMs(model: TransformerModel, state: readonly number[], zero: ZeroStage, dp: number, device: DeviceSpec): number {
  const per = stateBytesPerParam(model, zero, dp);
  const moved = (2 * model.bytesPerElement) / (zero >= 1 ? dp : 1);
  const bytes = Math.max(0, ...state.map((x) => (x / per) * moved));
  return (bytes / ((device.hostLinkGBps ?? Infinity) * 1e9)) * 1e3;
}

const at = (x: PerStage | undefined, s: number): number => (x === undefined ? 0 : typeof x === 'number' ? x : x[s]);

/** The costs with every stage swapping: a forward and a backward (or I) take at least their stash's copy over the host link (ms). */
export function swappedCosts(costs: CostModel, stages: number, device: DeviceSpec): CostModel {
  const bw = (device.hostLinkGBps ?? Infinity) * 1e9;
  const copy = (s: number) => ((at(costs.heldBytes ?? costs.activationBytes, s) / bw) * 1e3);
  const slower = (x: PerStage | undefined) => (x === undefined ? undefined : Array.from({ length: stages }, (_, s) => Math.max(at(x, s), copy(s))));
  return { ...costs, F: slower(costs.F), B: slower(costs.B), I: slower(costs.I) };
}

/** A rank's activations while swapping: at most two micro-batches' of its largest stash (the schedule's peak if less). */
export function swappedActivationBytes(peak: readonly number[], held: readonly number[], stageToRank: readonly number[]): number[] {
  return peak.map((p, r) => Math.min(p, 2 * Math.max(0, ...held.filter((_, s) => stageToRank[s] === r))));
}

export interface HostFit extends HostChoice {
  stepMs: number;
  st: number;
  act: number;
  sum: number;
}

export interface HostFitInput {
  model: TransformerModel;
  device: DeviceSpec;
  schedule: Schedule;
  name: PlanSchedule;
  /** The costs the layout was priced under (ms), with each stage's held bytes. */
  costs: CostModel;
  zero: ZeroStage;
  dp: number;
  /** Each rank's state at `zero` (with any extra weight version). */
  state: readonly number[];
  /** The step as priced without host options, and the part of it the ZeRO-2/3 link bounds (0 otherwise). */
  stepMs: number;
  linkMs: number;
  capacity: number;
}

/** The fastest way over the host link that brings the layout within `capacity`, or null (none fits, or no host link). */
export function fitOverHost(o: HostFitInput): HostFit | null {
  const kind = SCHEDULES[o.name];
  const stream = UPDATE_WINDOWS[kind.update].stream;
  const held = Array.from({ length: o.schedule.stages }, (_, s) => at(o.costs.heldBytes ?? o.costs.activationBytes, s));
  const peak = peakMemory(o.schedule, Float64Array.from(held)).map((x) => x.peakBytes);
  let best: HostFit | null = null;
  for (const c of hostChoices(o.device, o.zero, stream)) {
    const state = c.offload ? offloadedStateBytes(o.model, o.state, o.zero, o.dp) : [...o.state];
    const act = c.swap ? swappedActivationBytes(peak, held, o.schedule.stageToRank) : peak;
    const worst = state.map((st, r) => ({ st, act: act[r], sum: st + act[r] })).reduce((a, x) => (x.sum > a.sum ? x : a));
    if (worst.sum > o.capacity) continue;
    const computed = c.swap ? Math.max(planStep(o.name, o.schedule, swappedCosts(o.costs, o.schedule.stages, o.device)).makespan, o.linkMs) : o.stepMs;
    const stepMs = computed + (c.offload ? offloadMs(o.model, o.state, o.zero, o.dp, o.device) : 0);
    if (!best || stepMs < best.stepMs) best = { ...c, stepMs, ...worst };
  }
  return best;
}
