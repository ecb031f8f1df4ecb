/**
 * `pipelab plan --model gpt ...`: plan a transformer on N devices (src/plan/mesh-plan.ts): every
 * dp × tp × pp, schedule, micro-batch size, ZeRO stage (0–3, src/plan/zero.ts) and recomputation; the top
 * candidates as a table or JSON.
 */
import { DEVICE_PRESET_NAMES, DEVICE_PRESETS, type DeviceSpec } from '../plan/device.ts';
import { MESH_PLAN_LIMITS, PLAN_SCHEDULES, planMesh, type MeshCandidate, type ZeroChoice } from '../plan/mesh-plan.ts';
import { RECOMPUTE_MODES, TRANSFORMER_LIMITS, type TransformerModel } from '../plan/transformer.ts';
import type { MoeSpec } from '../plan/moe.ts';
import { meshLayoutLabel, meshSavingLabel, meshScheduleLabel } from '../plan/mesh-labels.ts';
import { ConfigError } from '../util/errors.ts';
import { boolFlag, helpFor, intFlag, numberFlag, oneOfFlag, parseArgs, required, stringFlag, UsageError, type FlagSpec } from './args.ts';
import { count, fmt, table } from './format.ts';
import { EXIT_OK, type CliIo } from './io.ts';

const MODELS = ['gpt'] as const;
const PRECISIONS = ['bf16', 'fp32'] as const;
const FORMATS = ['text', 'json'] as const;
const ZERO_CHOICES = ['auto', '0', '1', '2', '3'] as const;

const FLAGS: FlagSpec[] = [
  { name: 'model', value: 'gpt', help: 'the analytic model: a GPT (embedding, layers, head with its logits)' },
  { name: 'layers', value: 'L', help: `transformer layers (1 … ${TRANSFORMER_LIMITS.layers})` },
  { name: 'hidden', value: 'H', help: 'hidden size' },
  { name: 'heads', value: 'A', help: 'attention heads (must divide the hidden size)' },
  { name: 'seq', value: 'S', help: 'sequence length' },
  { name: 'vocab', value: 'V', help: 'vocabulary size' },
  { name: 'experts', value: 'E', help: 'routed experts per MoE layer (a mixture-of-experts GPT; absent: dense). Each expert a SwiGLU of three hidden × F matrices' },
  { name: 'top-k', value: 'K', help: 'experts each token is routed to (1 … E; default 1)' },
  { name: 'expert-hidden', value: 'F', help: 'each expert\'s width (default 4 × hidden / top-k)' },
  { name: 'shared-experts', value: 'S', help: 'shared experts every token passes through, width F (default 0)' },
  { name: 'dense-layers', value: 'N', help: 'the first N layers keep a dense MLP (default 0)' },
  { name: 'dense-hidden', value: 'F', help: 'the dense layers\' SwiGLU width (default: the GPT\'s 4 × hidden GELU MLP)' },
  { name: 'capacity-factor', value: 'C', help: 'C ≥ 0: 0 dropless (default), C > 0 each expert runs C·k·T/E rows, padded' },
  { name: 'ep', value: 'EP', help: 'expert-parallel workers, fixed (default: every EP dividing the experts and dp × tp, a multiple of tp, is tried); each MoE layer\'s all-to-all priced on the links its group spans' },
  { name: 'attention-params', value: 'P', help: 'parameters of a layer\'s attention (default 4h² + 4h; MLA\'s low-rank projections by their count)' },
  { name: 'attention-core-width', value: 'W', help: 'over the heads, Σ (query-key dim + value dim) / 2 (default the hidden size)' },
  { name: 'precision', value: 'P', help: 'bf16 (mixed precision, default) or fp32' },
  { name: 'devices', value: 'N', help: `devices in all (1 … ${MESH_PLAN_LIMITS.devices})` },
  { name: 'global-batch', value: 'B', help: 'sequences per optimizer step, over all replicas' },
  { name: 'device', value: 'NAME', help: `a preset: ${DEVICE_PRESET_NAMES.join(', ')} (default h100; published peak and memory, see src/plan/device.ts)` },
  { name: 'devices-per-node', value: 'K', help: 'devices per node (default: the preset\'s, 8)' },
  { name: 'peak-tflops', value: 'T', help: 'peak 16-bit TFLOP/s of one device (overrides the preset)' },
  { name: 'efficiency', value: 'E', help: 'fraction of the peak the matmuls reach, 0 < E ≤ 1 (default 0.5)' },
  { name: 'memory-gb', value: 'GB', help: 'memory of one device, GB' },
  { name: 'bw-intra', value: 'GBPS', help: 'one device\'s link inside a node, GB/s per direction' },
  { name: 'bw-inter', value: 'GBPS', help: 'one device\'s link across nodes, GB/s per direction' },
  { name: 'lat-intra', value: 'US', help: 'latency of a message inside a node, µs' },
  { name: 'lat-inter', value: 'US', help: 'latency of a message across nodes, µs' },
  { name: 'schedules', value: 'LIST', help: `comma-separated, among ${PLAN_SCHEDULES.join(', ')} (default all)` },
  { name: 'tp', value: 'T', help: 'tensor-parallel workers per stage, fixed (default: every T dividing the heads and a node is tried; Megatron’s split, its all-reduces on the node’s links)' },
  { name: 'sequence-parallel', boolean: true, help: 'with tensor parallelism, split the LayerNorm and dropout activations T ways too (Korthikanti et al. 2022)' },
  { name: 'recompute', value: 'LIST', help: `recomputation tried, comma-separated among ${RECOMPUTE_MODES.join(', ')} (default all, in that order, each only where the one before does not fit; selective recomputes each layer's attention core, full its whole forward)` },
  { name: 'zero', value: 'Z', help: 'ZeRO stage: auto (default: the least of 0, 1, 2, 3 that fits), or 0, 1, 2, 3 fixed wherever dp > 1 (3 re-gathers the weights for every forward and backward)' },
  { name: 'host-link', value: 'GBPS', help: 'one device\'s link to its host\'s memory (PCIe), GB/s per direction (default: the preset\'s)' },
  { name: 'host-options', boolean: true, help: 'also try optimizer offload and activation swapping over the host link where a layout fits no other way; the fastest that fits is kept' },
  { name: 'max-micro-batch', value: 'b', help: `largest micro-batch size tried, powers of two (default 8, at most ${MESH_PLAN_LIMITS.microBatch})` },
  { name: 'top', value: 'K', help: 'candidates printed (default 10)' },
  { name: 'format', value: 'FMT', help: 'text (a table, default) or json (the plan)' },
  { name: 'help', boolean: true, help: 'show this help' },
];

export const PLAN_MESH_HELP = helpFor(
  'pipelab plan --model gpt --layers L --hidden H --heads A --seq S --vocab V --devices N --global-batch B\n' +
    '                   [--device h100|h200|a100] [--devices-per-node K] [--peak-tflops T --memory-gb GB --bw-intra GBPS --bw-inter GBPS] ...',
  'Plan a transformer on N devices: every dp × tp × pp = N (tp dividing the heads and a node, pp ≤ layers),\n' +
    'schedule, virtual stages, micro-batch size, ZeRO stage and recomputation; layouts that do not fit a device\'s memory are dropped, the rest ranked\n' +
    'by the simulated step time (α–β all-reduce and point-to-point costs, NVLink inside a node, the\n' +
    'network across). Prints step time, bubble, all-reduce share, memory per device and MFU.\n' +
    'With --experts, a mixture-of-experts GPT: ep (dividing the experts and dp × tp) is searched too, each MoE\n' +
    'layer\'s all-to-all priced on the links its ep group spans, overlapped with compute by DualPipe.',
  FLAGS,
);

/** A positive number flag (finite, > 0); undefined when absent. */
function positive(a: ReturnType<typeof parseArgs>, name: string): number | undefined {
  const x = numberFlag(a, name, 0);
  if (x === 0) throw new UsageError(`--${name}`, stringFlag(a, name), 'must be a number greater than 0');
  return x;
}

const FLAG_OF: Readonly<Record<string, string>> = {
  'model.layers': '--layers',
  'model.hidden': '--hidden',
  'model.heads': '--heads',
  'model.seq': '--seq',
  'model.vocab': '--vocab',
  'device.peakTflops': '--peak-tflops',
  'device.efficiency': '--efficiency',
  'device.memoryGB': '--memory-gb',
  'device.bwIntraGBps': '--bw-intra',
  'device.bwInterGBps': '--bw-inter',
  'device.latIntraUs': '--lat-intra',
  'device.latInterUs': '--lat-inter',
  'device.hostLinkGBps': '--host-link',
  'device.devicesPerNode': '--devices-per-node',
  devices: '--devices',
  globalBatch: '--global-batch',
  maxMicroBatch: '--max-micro-batch',
  tp: '--tp',
  ep: '--ep',
  sequenceParallel: '--sequence-parallel',
  zero: '--zero',
  'model.attentionParams': '--attention-params',
  'model.attentionCoreWidth': '--attention-core-width',
  'model.moe.experts': '--experts',
  'model.moe.topK': '--top-k',
  'model.moe.expertHidden': '--expert-hidden',
  'model.moe.sharedExperts': '--shared-experts',
  'model.moe.denseLayers': '--dense-layers',
  'model.moe.denseHidden': '--dense-hidden',
  'model.moe.capacityFactor': '--capacity-factor',
};

const MOE_DETAIL_FLAGS = ['top-k', 'expert-hidden', 'shared-experts', 'dense-layers', 'dense-hidden', 'capacity-factor'] as const;

/** The MoE flags as the model's `moe` (checked by the planner, which names the field), or undefined without --experts. */
function moeFlags(a: ReturnType<typeof parseArgs>, hidden: number): MoeSpec | undefined {
  const experts = intFlag(a, 'experts', 0, Number.MAX_SAFE_INTEGER);
  if (experts === undefined) {
    const stray = MOE_DETAIL_FLAGS.find((f) => stringFlag(a, f) !== undefined);
    if (stray) throw new UsageError(`--${stray}`, stringFlag(a, stray), 'describes the experts: it needs --experts');
    return undefined;
  }
  const topK = intFlag(a, 'top-k', 0, Number.MAX_SAFE_INTEGER) ?? 1;
  const moe: MoeSpec = {
    experts,
    topK,
    expertHidden: intFlag(a, 'expert-hidden', 0, Number.MAX_SAFE_INTEGER) ?? Math.max(1, Math.round((4 * hidden) / Math.max(1, topK))),
    sharedExperts: intFlag(a, 'shared-experts', 0, Number.MAX_SAFE_INTEGER) ?? 0,
  };
  const denseLayers = intFlag(a, 'dense-layers', 0, Number.MAX_SAFE_INTEGER);
  const denseHidden = intFlag(a, 'dense-hidden', 0, Number.MAX_SAFE_INTEGER);
  const capacityFactor = numberFlag(a, 'capacity-factor', -Infinity);
  if (denseLayers !== undefined) moe.denseLayers = denseLayers;
  if (denseHidden !== undefined) moe.denseHidden = denseHidden;
  if (capacityFactor !== undefined) moe.capacityFactor = capacityFactor;
  return moe;
}

/** ", 64 experts top-2 of width 1024 + 1 shared, the first 3 layers dense" ('' for a dense model). */
function moeWords(m: TransformerModel): string {
  const x = m.moe;
  if (!x) return '';
  const cf = x.capacityFactor ? `, capacity factor ${x.capacityFactor}` : '';
  return `; ${x.experts} experts top-${x.topK} of width ${x.expertHidden}${x.sharedExperts ? ` + ${x.sharedExperts} shared` : ''}${x.denseLayers ? `, the first ${count(x.denseLayers, 'layer')} dense` : ''}${cf}`;
}

function row(c: MeshCandidate, rank: number): (string | number)[] {
  return [
    rank,
    meshLayoutLabel(c),
    meshScheduleLabel(c),
    `${c.microBatch} × ${c.microbatches}`,
    meshSavingLabel(c, '–'),
    fmt(c.stepMs),
    fmt(c.bubble, 3),
    fmt(c.allReduceShare, 3),
    (c.memoryBytes / 1e9).toFixed(1),
    (100 * c.mfu).toFixed(1) + '%',
  ];
}

/** A comma-separated flag of names among `allowed`; undefined when absent; a name not among them is refused, naming it. */
function listFlag<T extends string>(a: ReturnType<typeof parseArgs>, name: string, allowed: readonly T[]): T[] | undefined {
  const raw = stringFlag(a, name);
  if (raw === undefined) return undefined;
  const names = raw.split(',').map((x) => x.trim());
  const bad = names.find((x) => !(allowed as readonly string[]).includes(x));
  if (bad !== undefined) throw new UsageError(`--${name}`, raw, `names ${JSON.stringify(bad)}; each must be one of ${allowed.join(', ')}`);
  return names as T[];
}

export function planMeshCommand(argv: readonly string[], io: CliIo): number {
  const a = parseArgs(argv, FLAGS, 'plan');
  if (boolFlag(a, 'help')) {
    io.out(PLAN_MESH_HELP);
    return EXIT_OK;
  }
  if (a.positionals.length > 0) throw new UsageError('argument', a.positionals[0], '`pipelab plan --model` takes flags only');
  oneOfFlag(a, 'model', MODELS);
  const format = oneOfFlag(a, 'format', FORMATS) ?? 'text';
  const int = (name: string, max: number, what: string) => required(intFlag(a, name, 1, max), name, what);
  const precision = oneOfFlag(a, 'precision', PRECISIONS) ?? 'bf16';
  const model: TransformerModel = {
    layers: int('layers', TRANSFORMER_LIMITS.layers, 'the number of transformer layers'),
    hidden: int('hidden', TRANSFORMER_LIMITS.hidden, 'the hidden size'),
    heads: int('heads', TRANSFORMER_LIMITS.heads, 'the attention heads'),
    seq: int('seq', TRANSFORMER_LIMITS.seq, 'the sequence length'),
    vocab: int('vocab', TRANSFORMER_LIMITS.vocab, 'the vocabulary size'),
    bytesPerElement: precision === 'bf16' ? 2 : 4,
  };
  const moe = moeFlags(a, model.hidden);
  if (moe) model.moe = moe;
  const attentionParams = intFlag(a, 'attention-params', 0, Number.MAX_SAFE_INTEGER);
  const attentionCoreWidth = intFlag(a, 'attention-core-width', 0, Number.MAX_SAFE_INTEGER);
  if (attentionParams !== undefined) model.attentionParams = attentionParams;
  if (attentionCoreWidth !== undefined) model.attentionCoreWidth = attentionCoreWidth;
  const devices = int('devices', MESH_PLAN_LIMITS.devices, 'the number of devices N');
  const globalBatch = int('global-batch', MESH_PLAN_LIMITS.globalBatch, 'the sequences per step over all replicas');
  const preset = oneOfFlag(a, 'device', DEVICE_PRESET_NAMES) ?? 'h100';
  const peak = positive(a, 'peak-tflops');
  const device: DeviceSpec = {
    ...DEVICE_PRESETS[preset],
    // An explicit peak names a custom device; its fp32 peak is taken as half the 16-bit one, as on the presets.
    ...(peak !== undefined ? { name: 'custom', peakTflops: peak, peakTflopsFp32: peak / 2 } : {}),
  };
  const override = <K extends keyof DeviceSpec>(key: K, x: DeviceSpec[K] | undefined) => {
    if (x !== undefined) device[key] = x;
  };
  override('efficiency', numberFlag(a, 'efficiency', 0));
  override('memoryGB', positive(a, 'memory-gb'));
  override('bwIntraGBps', positive(a, 'bw-intra'));
  override('bwInterGBps', positive(a, 'bw-inter'));
  override('latIntraUs', numberFlag(a, 'lat-intra', 0));
  override('latInterUs', numberFlag(a, 'lat-inter', 0));
  override('devicesPerNode', intFlag(a, 'devices-per-node', 1, 1 << 20));
  override('hostLinkGBps', positive(a, 'host-link'));
  const hostOptions = boolFlag(a, 'host-options') || undefined;
  const schedules = listFlag(a, 'schedules', PLAN_SCHEDULES);
  const recompute = listFlag(a, 'recompute', RECOMPUTE_MODES);
  const maxMicroBatch = intFlag(a, 'max-micro-batch', 1, MESH_PLAN_LIMITS.microBatch);
  const tp = intFlag(a, 'tp', 1, 1 << 16);
  const ep = intFlag(a, 'ep', 0, Number.MAX_SAFE_INTEGER);
  const sequenceParallel = boolFlag(a, 'sequence-parallel') || undefined;
  const zeroFlag = oneOfFlag(a, 'zero', ZERO_CHOICES) ?? 'auto';
  const zero: ZeroChoice = zeroFlag === 'auto' ? 'auto' : (Number(zeroFlag) as ZeroChoice);
  const top = intFlag(a, 'top', 1, 1000) ?? 10;
  const t0 = performance.now();
  let plan;
  try {
    plan = planMesh({ model, device, devices, globalBatch, schedules, maxMicroBatch, tp, ep, sequenceParallel, zero, recompute, hostOptions });
  } catch (e) {
    // The request's errors are the flags' errors.
    const flag = e instanceof ConfigError ? FLAG_OF[e.field] : undefined;
    if (e instanceof ConfigError && flag) throw new UsageError(flag, e.value, e.rule);
    throw e;
  }
  const ms = performance.now() - t0;
  const shown = plan.candidates.slice(0, top);
  if (format === 'json') {
    io.out(JSON.stringify({ model, device, devices, globalBatch, evaluated: plan.evaluated, dropped: plan.dropped, skipped: plan.skipped, candidates: shown }, null, 1) + '\n');
    return EXIT_OK;
  }
  const best = shown[0];
  io.out(
    [
      `model      GPT: ${count(model.layers, 'layer')}, hidden ${model.hidden}, ${count(model.heads, 'head')}, seq ${model.seq}, vocab ${model.vocab}, ${precision}${moeWords(model)}`,
      `devices    ${devices} × ${device.name} (${device.peakTflops} TFLOP/s peak at ${device.efficiency} efficiency, ${device.memoryGB} GB), ${device.devicesPerNode} per node; ` +
        `links ${device.bwIntraGBps} GB/s inside a node, ${device.bwInterGBps} GB/s across`,
      `batch      ${count(globalBatch, 'sequence')} per step`,
      `searched   ${count(plan.evaluated, 'candidate')} in ${fmt(ms / 1e3, 3)} s; ${plan.dropped} did not fit ${device.memoryGB} GB; ${count(plan.skipped.length, 'layout')} skipped`,
      `best       dp × tp × pp = ${meshLayoutLabel(best)}, ${meshScheduleLabel(best)}, micro-batch ${best.microBatch}: step ${fmt(best.stepMs)} ms, MFU ${(100 * best.mfu).toFixed(1)}%`,
      '',
      '',
    ].join('\n'),
  );
  io.out(table(['#', 'dp × tp × pp', 'schedule', 'b × m', 'memory saving', 'step ms', 'bubble', 'all-reduce share', 'GB / device', 'MFU'], shown.map((c, i) => row(c, i + 1))));
  return EXIT_OK;
}
