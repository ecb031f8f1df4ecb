/**
 * Colours of the timeline: one hue per op (F, B, I, W), a lighter shade for
 * every other virtual-stage chunk, greys, teal and red for communication, and
 * the grey hatch that marks idle time (the bubble), unlike red waiting.
 */
import type { CollectiveKind, CommKind, Op } from '../../schedule/index.ts';

export const OP_COLORS: Readonly<Record<Op, string>> = {
  F: '#5b9cff',
  B: '#ff9f43',
  I: '#ffd166',
  W: '#c084fc',
};

export const OP_NAMES: Readonly<Record<Op, string>> = {
  F: 'forward',
  B: 'backward',
  I: 'backward (input)',
  W: 'backward (weights)',
};

export const COMM_COLORS: Readonly<Record<CommKind, string>> = {
  send: '#8b95a7',
  transfer: '#2dd4bf',
  'recv-wait': '#f87171',
  readback: '#a3b1c6',
  upload: '#a3b1c6',
  'state-read': '#f8fafc',
  'swap-out': '#fb923c',
  'swap-in': '#fdba74',
};

export const COMM_NAMES: Readonly<Record<CommKind, string>> = {
  send: 'send',
  transfer: 'in flight',
  'recv-wait': 'waiting to receive',
  readback: 'GPU → CPU',
  upload: 'CPU → GPU',
  'state-read': 'checkpoint: state GPU → CPU',
  'swap-out': 'swap: stash GPU → host',
  'swap-in': 'swap: stash host → GPU',
};

/** The data-parallel collective (the all-reduce at the flush): greens, one shade per part. */
export const COLLECTIVE_COLORS: Readonly<Record<CollectiveKind, string>> = {
  'gather-grads': '#86efac',
  'reduce-scatter': '#22c55e',
  'all-gather': '#16a34a',
  'shard-update': '#bef264',
  'scatter-back': '#86efac',
  'tp-all-reduce': '#c084fc',
  'tp-all-gather': '#e879f9',
  'copy-sum': '#fbbf24',
  'tp-reduce-scatter': '#6366f1',
  'ep-all-to-all': '#f97316',
  'ep-all-reduce': '#fb923c',
  'cpu-update': '#fde68a',
};

export const COLLECTIVE_NAMES: Readonly<Record<CollectiveKind, string>> = {
  'gather-grads': 'gradients GPU → CPU',
  'reduce-scatter': 'reduce-scatter chunk',
  'all-gather': 'all-gather chunk',
  'shard-update': 'ZeRO: optimizer on this shard',
  'scatter-back': 'result CPU → GPU',
  'tp-all-reduce': 'tp all-reduce (between layers)',
  'tp-all-gather': 'tp all-gather (between layers)',
  'copy-sum': 'sum over the model copies (DualPipe)',
  'tp-reduce-scatter': 'tp reduce-scatter (sequence parallelism)',
  'ep-all-to-all': 'ep all-to-all (experts’ dispatch or combine)',
  'ep-all-reduce': 'ep all-reduce (dense gradients over the ep workers)',
  'cpu-update': 'offload: optimizer step on the CPU',
};

export const THEME = {
  laneBg: '#1a1f29',
  hatch: 'rgba(170, 179, 194, 0.2)',
  gutterText: '#aab3c2',
  axisText: '#8791a3',
  grid: 'rgba(255, 255, 255, 0.06)',
  label: '#0b0e14',
  overlay: 'rgba(255, 255, 255, 0.9)',
  hover: '#ffffff',
  commLaneBg: '#141821',
  /** Stripes over the waiting part of an ep all-to-all (its colour showing between them). */
  epWait: 'rgba(11, 14, 20, 0.7)',
} as const;

function mixWithWhite(hex: string, amount: number): string {
  const n = parseInt(hex.slice(1), 16);
  const ch = (v: number) => Math.round(v + (255 - v) * amount);
  const r = ch((n >> 16) & 255);
  const g = ch((n >> 8) & 255);
  const b = ch(n & 255);
  return `#${((1 << 24) | (r << 16) | (g << 8) | b).toString(16).slice(1)}`;
}

/** Fill for an op on virtual-stage chunk `chunk` (0-based); odd chunks are lighter. */
export function opColor(op: Op, chunk: number): string {
  return chunk % 2 === 1 ? mixWithWhite(OP_COLORS[op], 0.42) : OP_COLORS[op];
}

/**
 * Every fill the timeline uses, by index: op o (F, B, I, W) on an even chunk
 * at 2·o, on an odd chunk at 2·o + 1; communication kinds from 8 on. The
 * lane index stores these indices so drawing never builds a colour string.
 */
const COMM_ORDER: readonly CommKind[] = ['send', 'transfer', 'recv-wait', 'readback', 'upload', 'state-read', 'swap-out', 'swap-in'];
const COLLECTIVE_ORDER: readonly CollectiveKind[] = ['gather-grads', 'reduce-scatter', 'all-gather', 'shard-update', 'scatter-back', 'tp-all-reduce', 'tp-all-gather', 'copy-sum', 'tp-reduce-scatter', 'ep-all-to-all', 'cpu-update'];
const OP_ORDER: readonly Op[] = ['F', 'B', 'I', 'W'];

export const PALETTE: readonly string[] = [
  ...OP_ORDER.flatMap((op) => [opColor(op, 0), opColor(op, 1)]),
  ...COMM_ORDER.map((k) => COMM_COLORS[k]),
  ...COLLECTIVE_ORDER.map((k) => COLLECTIVE_COLORS[k]),
];

export function paletteIndex(op: Op | 'comm' | 'collective', chunk: number, comm?: CommKind, coll?: CollectiveKind): number {
  if (op === 'comm') return 8 + COMM_ORDER.indexOf(comm ?? 'send');
  if (op === 'collective') return 8 + COMM_ORDER.length + COLLECTIVE_ORDER.indexOf(coll ?? 'reduce-scatter');
  return OP_ORDER.indexOf(op) * 2 + (chunk % 2);
}
