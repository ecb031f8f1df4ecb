/**
 * A description of N devices for the planner: what one device computes and
 * holds, how devices are grouped into nodes, and the links within and across
 * nodes (α–β: latency and bandwidth, one direction of one device's link).
 *
 * Presets carry the vendors' published figures (dense, no sparsity): peak
 * 16-bit tensor FLOP/s (bf16) and TF32 FLOP/s for fp32 training, memory, the
 * NVLink bandwidth per direction (half the published bidirectional figure) and
 * one InfiniBand NIC per GPU (the DGX/HGX systems' 8 NICs for 8 GPUs). The
 * latencies and the efficiency factor are assumptions, not published figures;
 * every value can be overridden (`pipelab plan --peak-tflops …`).
 *
 *   h100  H100 SXM5 80 GB: 989.4 TFLOP/s bf16, 494.7 TF32; NVLink 4 900 GB/s
 *         (450 per direction); NDR InfiniBand 400 Gb/s (50 GB/s).
 *   h200  H200 SXM 141 GB: the H100's compute and links, 141 GB.
 *   a100  A100 SXM4 80 GB: 312 TFLOP/s bf16, 156 TF32; NVLink 3 600 GB/s (300
 *         per direction); HDR InfiniBand 200 Gb/s (25 GB/s).
 * The host link (PCIe x16, one direction): Gen5's 128 GB/s both ways on the H100 and H200 (64), Gen4's 64 on the
 * A100 (32).
 */
import type { AllToAllLink } from '../schedule/ep-cost.ts';
import { ConfigError, requireFinite, requireInt } from '../util/errors.ts';

export interface DeviceSpec {
  name: string;
  /** Peak dense 16-bit (bf16/fp16) tensor FLOP/s, in TFLOP/s. */
  peakTflops: number;
  /** Peak for fp32 training (TF32 tensor cores), TFLOP/s. */
  peakTflopsFp32: number;
  /** Fraction of the peak a transformer's matmuls reach (0 < e ≤ 1). */
  efficiency: number;
  /** Device memory, GB (10⁹ bytes). */
  memoryGB: number;
  /** Devices per node: a link is intra-node when both ends share a node. */
  devicesPerNode: number;
  /** Bandwidth of one device's link in one direction, GB/s (10⁹ bytes per second). */
  bwIntraGBps: number;
  bwInterGBps: number;
  /** Latency of one message, µs. */
  latIntraUs: number;
  latInterUs: number;
  /** The link to the host's memory (PCIe), GB/s one direction: what optimizer offload and swapping cross (host-options.ts); absent: neither is planned. */
  hostLinkGBps?: number;
}

const ASSUMED = { efficiency: 0.5, latIntraUs: 5, latInterUs: 10 } as const;

export const DEVICE_PRESETS = {
  h100: { name: 'h100', peakTflops: 989.4, peakTflopsFp32: 494.7, memoryGB: 80, devicesPerNode: 8, bwIntraGBps: 450, bwInterGBps: 50, hostLinkGBps: 64, ...ASSUMED },
  h200: { name: 'h200', peakTflops: 989.4, peakTflopsFp32: 494.7, memoryGB: 141, devicesPerNode: 8, bwIntraGBps: 450, bwInterGBps: 50, hostLinkGBps: 64, ...ASSUMED },
  a100: { name: 'a100', peakTflops: 312, peakTflopsFp32: 156, memoryGB: 80, devicesPerNode: 8, bwIntraGBps: 300, bwInterGBps: 25, hostLinkGBps: 32, ...ASSUMED },
} as const satisfies Record<string, DeviceSpec>;

export type DevicePreset = keyof typeof DEVICE_PRESETS;
export const DEVICE_PRESET_NAMES = Object.keys(DEVICE_PRESETS) as DevicePreset[];

/** Checks every field; throws ConfigError naming `device.<field>`, the value and the rule. */
export function checkDevice(d: DeviceSpec): DeviceSpec {
  for (const f of ['peakTflops', 'peakTflopsFp32', 'memoryGB', 'bwIntraGBps', 'bwInterGBps'] as const) requireFinite(`device.${f}`, d[f], { min: 0, exclusiveMin: true });
  requireFinite('device.efficiency', d.efficiency, { min: 0, max: 1, exclusiveMin: true });
  requireFinite('device.latIntraUs', d.latIntraUs, { min: 0 });
  requireFinite('device.latInterUs', d.latInterUs, { min: 0 });
  requireInt('device.devicesPerNode', d.devicesPerNode, 1, 1 << 20);
  if (d.hostLinkGBps !== undefined) requireFinite('device.hostLinkGBps', d.hostLinkGBps, { min: 0, exclusiveMin: true });
  if (typeof d.name !== 'string') throw new ConfigError('device.name', d.name, 'must be a string');
  return d;
}

/** Seconds one device takes for `flops` FLOPs at its efficiency (fp32 training uses the TF32 peak). */
export function computeSeconds(d: DeviceSpec, flops: number, bytesPerElement: 2 | 4): number {
  return flops / ((bytesPerElement === 4 ? d.peakTflopsFp32 : d.peakTflops) * 1e12 * d.efficiency);
}

/** The links an all-to-all runs on (schedule/ep-cost.ts), in ms and bytes per ms: the node's and the network's. */
export function allToAllLink(d: DeviceSpec): AllToAllLink {
  return { latencyIntra: d.latIntraUs / 1e3, bandwidthIntra: d.bwIntraGBps * 1e6, latencyInter: d.latInterUs / 1e3, bandwidthInter: d.bwInterGBps * 1e6 };
}
