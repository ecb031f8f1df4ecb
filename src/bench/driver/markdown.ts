/** The benchmark report as Markdown tables: every figure beside its peer, as ratios. */
import type { ScheduleBenchRow } from '../schedules-suite.ts';
import { zeroLabel } from '../zero-label.ts';
import type { KernelAutotune, KernelBenchRow } from '../kernels-suite.ts';
import type { TrainingBenchRow } from '../training-suite.ts';
import type { StepProfile } from '../step-profile.ts';
import type { SuiteResult } from './suites.ts';
import type { AllReduceBenchRow } from '../allreduce-bench.ts';
import { probeMarkdown, type PageAndWorkerProbe } from './gpu-probe-report.ts';
import { tpTable } from './tp-markdown.ts';
import { MAKEMORE_GOAL, type MakemorePageRow } from '../makemore-page-suite.ts';
import type { SyncBenchRow } from '../sync-suite.ts';

interface Report {
  date: string;
  quick: boolean;
  big?: boolean;
  seconds: number;
  machine: { cpus: number; cpuModel: string; memoryGiB: number; platform: string; node: string };
  browser: string;
  adapter: Record<string, string>;
  /** What the browser was started for (e2e/chromium.ts): 'swiftshader' or a GPU recipe; absent in older reports. */
  browserGpu?: string;
  /** The adapter probe in the page and a dedicated worker; absent in older reports. */
  probe?: PageAndWorkerProbe;
  packages: Record<string, string>;
  /** Suites still to run: present while a run is under way (results.json is written after every suite). */
  pending?: string[];
  /** Set where one table gathers the suites of several runs on the same machine (bench/chrome-vulkan; `--suite` laid over the file: merge-report.ts). */
  runs?: { date: string; seconds: number; suites: string[] }[];
  /** Suites that threw, with the first line of their error. */
  failures?: Record<string, string>;
  results: Partial<Record<string, SuiteResult>>;
}

const pct = (x: number | null) => (x === null ? 'n/a' : `${(100 * x).toFixed(1)}%`);
const f = (x: number, d = 1) => x.toFixed(d);

/** Issue 12's columns: the shared-device prediction and its signed error, and the p-independent-GPU ideal. */
function sharedCells(r: ScheduleBenchRow): string {
  const p = r.prediction;
  if (!p) return 'n/a | n/a | n/a';
  const signed = (e: number) => `${e >= 0 ? '+' : ''}${pct(e)}`;
  const from = p.lanesFrom === 'profile' ? 'profile' : p.fit ? 'fit' : 'fitted, held out';
  const ref = p.lanesFrom === 'profile' ? ` (k = ${p.fittedLanes} fitted on m = p: ${signed(p.fittedError)})` : '';
  return `${f(p.sharedMs)} (k = ${p.lanes}, ${from}) | ${signed(p.sharedError)}${ref} | ${f(p.independentMs)}`;
}

function schedulesTable(rows: ScheduleBenchRow[]): string {
  const head = '| schedule | p | m | makespan measured (ms) | simulated, today (ms) | today\'s prediction error | shared-device (ms) | shared-device prediction error | p independent GPUs (ms) | bubble measured | simulated | closed form | measured − closed | peak stash, stage 0 (KiB) | comm per crossing (ms) | comm / compute | samples/s |';
  const sep = '|' + ' --- |'.repeat(17);
  const lines = rows.map((r) =>
    `| ${r.schedule}${r.v > 1 ? ` (v=${r.v})` : ''}${r.moe ? ` (MoE, ep ${r.moe.ep})` : ''}${r.streamSteps ? ` (one stream: ${r.streamSteps} steps × ${r.m / r.streamSteps})` : ''} | ${r.p} | ${r.m} | ${f(r.makespanMeasuredMs)} | ${f(r.makespanSimulatedMs)} | ${pct(r.simulationError)} | ${sharedCells(r)} | ${pct(r.bubbleMeasured)} | ${pct(r.bubbleSimulated)} | ${pct(r.bubbleClosedForm)} | ${r.bubbleClosedForm === null ? 'n/a' : `${f(100 * (r.bubbleMeasured - r.bubbleClosedForm))} pp`} | ${f(r.peakStashBytes[0] / 1024, 0)} | ${f(r.commMsPerCrossing, 2)} | ${pct(r.commShare)} | ${f(r.samplesPerSecond, 0)} |`,
  );
  return [head, sep, ...lines].join('\n');
}

/** The MoE rows (ScheduleBenchRow.moe): the step measured beside simulated, and the all-to-alls' share of it. */
export function moeTable(rows: readonly ScheduleBenchRow[]): string {
  const signed = (e: number) => `${e >= 0 ? '+' : ''}${pct(e)}`;
  return table(
    ['schedule', 'pp', 'ep', 'experts (top-k)', 'm', 'step ms measured', 'step ms simulated', 'simulated − measured', 'simulated, all-to-alls overlapped (ms)', 'all-to-all share measured (own; simulated)', 'all-to-alls per worker per step', "run's α–β fit of one round", 'samples/s'],
    rows.flatMap((r) => {
      const e = r.moe;
      if (!e) return [];
      const beta = e.fit.bytesPerMs === null ? (e.fit.sizes > 1 ? '∞ (no slower with size)' : '∞ (one size)') : `${f(e.fit.bytesPerMs / 1000, 0)} MB/s`;
      return [[r.schedule, String(r.p), String(e.ep), `${e.experts} (top-${e.topK})`, String(r.m), f(e.stepMs), f(e.stepSimulatedMs), signed((e.stepSimulatedMs - e.stepMs) / e.stepMs), f(e.stepOverlappedSimulatedMs), `${pct(e.a2aShare)} (${pct(e.a2aOwnShare)}; ${pct(e.a2aShareSimulated)})`, f(e.a2aPerWorker, 0), `α ${f(e.fit.latencyMs, 2)} ms, β ${beta}`, f(r.samplesPerSecond, 0)]];
    }),
  );
}

const ratio = (x: number) => `${x.toFixed(2)}×`;

function table(head: string[], rows: string[][]): string {
  return [`| ${head.join(' | ')} |`, `|${' --- |'.repeat(head.length)}`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

function kernelsTable(res: SuiteResult): string {
  const rows = res.rows as KernelBenchRow[];
  const out: string[] = [];
  out.push(
    table(
      ['size (M×N×K)', 'form', 'ours GFLOP/s', 'TF.js GFLOP/s', 'ours / TF.js', 'ours ms', 'TF.js ms', 'our variant', 'dispatches ours / TF.js', 'TF.js program'],
      rows.map((r) => [`${r.M}×${r.N}×${r.K}`, r.op, f(r.oursGflops, 2), f(r.tfjsGflops, 3), ratio(r.ratio), f(r.oursMs, 2), f(r.tfjsMs, 1), r.variant, `${r.oursDispatches} / ${r.tfjsDispatches}`, r.tfjsPrograms.join(', ')]),
    ),
  );
  const at = res.meta?.autotune as KernelAutotune | undefined;
  if (at) {
    out.push('');
    out.push(`Autotune (GpuBackend.create({ autotune: true }), ${f(at.createMs, 0)} ms with the device): choice per form ${Object.entries(at.choice).map(([k, v]) => `${k} ${v}`).join(', ')}.`);
    for (const form of at.report?.forms ?? []) {
      out.push('');
      out.push(
        table(
          [`${form.form} candidate at ${at.report!.sizes.map((s) => s.join('×')).join(', ')}`, 'GFLOP/s', 'median ms', 'winner'],
          form.timings.map((t) => [t.variant, f(t.gflops, 2), t.ms.map((m) => f(m, 1)).join(', ') + (t.skipped ? ' (warm-up only: too slow)' : ''), t.variant === form.winner ? '✔' : '']),
        ),
      );
    }
  }
  return out.join('\n');
}

function profileRows(model: string, side: string, p: StepProfile, top = 6): string[][] {
  const rest = p.ops.slice(top);
  const rows = p.ops.slice(0, top).map((o) => [model, side, o.op, String(o.calls), f(o.ms, 2), pct(p.gpuMs > 0 ? o.ms / p.gpuMs : 0)]);
  if (rest.length) rows.push([model, side, `${rest.length} other ops`, String(rest.reduce((a, o) => a + o.calls, 0)), f(rest.reduce((a, o) => a + o.ms, 0), 2), pct(p.gpuMs > 0 ? rest.reduce((a, o) => a + o.ms, 0) / p.gpuMs : 0)]);
  rows.push([model, side, '**total GPU**', String(p.ops.reduce((a, o) => a + o.calls, 0)), f(p.gpuMs, 2), '100%']);
  return rows;
}

/** The GPT's step in tokens/s (samples/s × block size), each side, the ratio and both losses. */
function gptTokensTable(rows: TrainingBenchRow[]): string {
  return table(
    ['model', 'batch × block', 'params', 'ours tokens/s', 'TF.js tokens/s', 'ours / TF.js', 'loss after the steps: ours', 'TF.js', 'max rel. Δloss over steps'],
    rows.map((r) => [
      r.model,
      `${r.batchSize} × ${r.tokensPerSample}`,
      String(r.params),
      f(r.ours.samplesPerSecond * r.tokensPerSample, 0),
      f(r.tfjs.samplesPerSecond * r.tokensPerSample, 0),
      ratio(r.ratio),
      f(r.ours.finalLoss, 5),
      f(r.tfjs.finalLoss, 5),
      r.maxLossRelDiff.toExponential(1),
    ]),
  );
}

function trainingTable(res: SuiteResult): string {
  const rows = res.rows as TrainingBenchRow[];
  const out: string[] = [];
  out.push(
    table(
      ['model', 'batch', 'params', 'ours samples/s', 'TF.js samples/s', 'ours / TF.js', 'ours ms/step', 'TF.js ms/step', 'steps (warm-up + timed)', 'loss after them: ours', 'TF.js', 'max abs Δloss over steps'],
      rows.map((r) => [
        r.gpt ? `${r.model} (${r.layers} blocks × ${r.gpt.width}, ${r.gpt.heads} heads)` : `${r.model} (${r.layers}×${r.hidden}, ${r.activation})`,
        String(r.batchSize),
        String(r.params),
        f(r.ours.samplesPerSecond, 0),
        f(r.tfjs.samplesPerSecond, 0),
        ratio(r.ratio),
        f(r.ours.medianStepMs, 1),
        f(r.tfjs.medianStepMs, 1),
        `${r.warmup} + ${r.steps}`,
        f(r.ours.finalLoss, 4),
        f(r.tfjs.finalLoss, 4),
        r.maxLossDiff.toExponential(1),
      ]),
    ),
  );
  out.push('');
  out.push('What a timed step costs each side (WebGPU calls counted in the page, per step):');
  out.push('');
  out.push(
    table(
      ['model', 'side', 'ms/step', 'CPU issue ms', 'dispatches', 'submits', 'writeBuffer calls (KiB)', 'bind groups', 'buffers created', 'bare sync round trip ms'],
      rows.flatMap((r) =>
        (['ours', 'tfjs'] as const).map((side) => {
          const s = r[side];
          const c = s.perStep;
          return [r.model, side === 'ours' ? 'ours' : 'TF.js', f(s.medianStepMs, 1), f(s.medianIssueMs, 1), f(c.dispatches, 0), f(c.submits, 0), `${f(c.writeBuffers, 0)} (${f(c.writeBufferBytes / 1024, 1)})`, f(c.bindGroups, 0), f(c.buffersCreated, 0), f(s.syncMs, 1)];
        }),
      ),
    ),
  );
  const profiled = rows.filter((r) => r.profile);
  if (profiled.length) {
    out.push('');
    out.push('Where one more step\'s GPU time goes, per op (ours: each op timed alone with timestamp queries, so the profiled step runs slower than a plain one; TF.js: tf.profile):');
    out.push('');
    out.push(
      table(
        ['model', 'side', 'op', 'calls', 'GPU ms', 'share'],
        profiled.flatMap((r) => [...profileRows(r.model, 'ours', r.profile!.ours), ...profileRows(r.model, 'TF.js', r.profile!.tfjs)]),
      ),
    );
  }
  return out.join('\n');
}

interface TimelineDrawRow {
  view: string;
  intervals: number;
  medianMs: number;
  worstMs: number;
  budgetMs: number;
  withinBudget: boolean;
}

function timelineTable(res: SuiteResult): string {
  const rows = res.rows as TimelineDrawRow[];
  return table(
    ['view', 'intervals', 'median ms / frame', 'worst ms / frame', 'budget ms', 'within budget'],
    rows.map((r) => [r.view, String(r.intervals), f(r.medianMs), f(r.worstMs), String(r.budgetMs), r.withinBudget ? 'yes' : 'no']),
  );
}

function allReduceTable(res: SuiteResult): string {
  const rows = res.rows as (AllReduceBenchRow & { modelMs: number })[];
  return table(
    ['dp', 'vector', 'measured ms (median)', 'per link MB/s', 'α–β model ms', 'model − measured'],
    rows.map((r) => [String(r.dp), r.bytes >= 1 << 20 ? `${r.bytes / (1 << 20)} MiB` : `${r.bytes / 1024} KiB`, f(r.medianMs, 3), f(r.busMBps, 0), f(r.modelMs, 3), pct((r.modelMs - r.medianMs) / r.medianMs)]),
  );
}

/** The data-parallel grid: one row per mesh, then each dp > 1 row's stages against the α–β ring. */
function meshTable(res: SuiteResult): string {
  const rows = res.rows as (ScheduleBenchRow & { ringModelMs?: number[] })[];
  const kib = (b: number) => `${f(b / 1024, 0)} KiB`;
  const main = table(
    ['model', 'schedule', 'dp × pp', 'm per replica', 'options', 'step ms measured', 'step ms simulated', 'bubble', 'collectives share (sim.)', 'shared-device error', 'optimizer per worker', 'held at rest per worker (formula)', 'ring bytes per worker per step (formula)', 'samples/s'],
    rows.map((r) => {
      const m = r.mesh!;
      const opts = [m.overlap ? '' : 'no overlap', zeroLabel(m).trim()].filter(Boolean).join(', ') || '—';
      const vs = (a?: number, b?: number) => (a === undefined || b === undefined ? 'n/a' : `${kib(a)} (${kib(b)})`);
      return [r.model, r.schedule, `${m.dp} × ${r.p}`, String(r.m), opts, f(m.stepMs), f(m.stepSimulatedMs), pct(r.bubbleMeasured), `${pct(m.allReduceShare)} (${pct(m.allReduceShareSimulated)})`, r.prediction ? pct(r.prediction.sharedError) : 'n/a', kib(m.optimizerBytesPerWorker), vs(m.heldBytes, m.heldFormula), vs(m.ringBytes, m.ringBytesFormula), f(r.samplesPerSecond, 0)];
    }),
  );
  const stages = table(
    ['model', 'schedule', 'dp × pp', 'options', 'stage', 'gradients', 'collective ms (readback, ring, write-back)', 'ring ms measured', 'α–β model ms', 'model − ring'],
    rows.flatMap((r) =>
      (r.ringModelMs ?? []).map((model, s) => {
        const m = r.mesh!;
        const meas = m.perStage[s].ringMs;
        const opts = [m.overlap ? '' : 'no overlap', zeroLabel(m).trim()].filter(Boolean).join(', ') || '—';
        return [r.model, r.schedule, `${m.dp} × ${r.p}`, opts, String(s), kib(m.perStage[s].bytes), f(m.perStage[s].ms, 2), f(meas, 2), f(model, 2), pct((model - meas) / meas)];
      }),
    ),
  );
  return `${main}\n\nEach stage's all-reduce against the micro-benchmark's α–β ring:\n\n${stages}`;
}

function makemoreTable(res: SuiteResult): string {
  const r = res.rows[0] as MakemorePageRow | undefined;
  if (!r) return 'no run';
  const c = r.config;
  const head = `${c.layers} layers × ${c.heads} heads × ${c.width} wide, ${c.schedule} on ${c.ranks} ranks × ${c.microbatches} micro-batches, batch ${c.batchSize}, lr ${c.lr}, ${c.steps} steps. The page said: “${r.sizingLine}”`;
  const rows = r.validation.map((p) => `| ${p.step} | ${p.loss.toFixed(3)}${p.step > 0 && p.loss <= MAKEMORE_GOAL ? ' ✓' : ''} | ${r.seenAtMs[p.step] === undefined ? '' : `${(r.seenAtMs[p.step] / 1000).toFixed(1)} s`} |`);
  const end = r.finished
    ? `Held-out after the last step: **${r.finalHeldOut?.toFixed(3)}** nats/char (goal ≤ ${MAKEMORE_GOAL.toFixed(2)}), ${(r.wallMs / 1000).toFixed(0)} s from the Run click.`
    : `Stopped at the suite's limit after ${(r.wallMs / 1000).toFixed(0)} s, before the last step.`;
  return [head, '', '| after step | held-out nats/char | seen at |', '| --- | --- | --- |', ...rows, '', end].join('\n');
}

function syncTable(res: SuiteResult): string {
  const rows = res.rows as SyncBenchRow[];
  return table(
    ['work', 'its GPU time ms', 'wait', 'devices in the page', 'nudged from (backing off to 2 ms)', 'issue to wait end, median ms', 'p90 ms', 'median − GPU time ms', 'nudges per wait'],
    rows.map((r) => [r.work, `${f(r.workMs, 3)}${r.workSource === 'wall' ? ' (wall)' : ''}`, r.wait, String(r.devices), r.nudgeMs ? `${r.nudgeMs} ms` : 'not nudged', f(r.medianMs, 2), f(r.p90Ms, 2), f(r.medianMs - r.workMs, 2), f(r.nudgesPerWait, 1)]),
  );
}

/** Each worker's measured peak beside the formula, and its kinds at the peak. */
function memoryTable(res: SuiteResult): string {
  const rows = res.rows as ScheduleBenchRow[];
  const kib = (b: number) => f(b / 1024, 1);
  return table(
    ['model', 'schedule', 'mesh', 'worker', 'peak KiB', 'counted KiB', 'formula KiB', 'counted − formula', 'weights (+ gathered)', 'gradients', 'optimizer', 'stash', 'temporaries', 'staging', 'uniform ring', 'pooled'],
    rows.flatMap((r) =>
      (r.memory ?? []).map((w) => {
        const k = w.byKind;
        // counted: the peak less what the formula leaves out (staging, the uniform ring: held-bytes.ts comparable).
        const counted = w.comparable ?? w.peak;
        return [r.model, r.schedule, `${r.mesh ? `dp ${r.mesh.dp} × pp ${r.p}${r.mesh.zero ? `, ZeRO-${r.mesh.zero}` : ''}` : `pp ${r.p}`}${r.recompute ? ', full recomputation' : ''}`, String(w.worker), kib(w.peak), kib(counted), kib(w.formula), pct((counted - w.formula) / w.formula), kib(k.weights + k.gathered), kib(k.grads), kib(k.optimizer), kib(k.stash), kib(k.temp), kib(k.staging), kib(k.uniforms ?? 0), kib(w.pooled)];
      }),
    ),
  );
}

const RENDER: Record<string, (res: SuiteResult) => string> = {
  memory: memoryTable,
  sync: syncTable,
  makemore: makemoreTable,
  allreduce: allReduceTable,
  mesh: meshTable,
  tp: tpTable,
  schedules: (res) => schedulesTable(res.rows as ScheduleBenchRow[]),
  kernels: kernelsTable,
  training: trainingTable,
  timeline: timelineTable,
  gpt: (res) => `${gptTokensTable(res.rows as TrainingBenchRow[])}\n\n${trainingTable(res)}`,
  'gpt-schedules': (res) => {
    const rows = res.rows as ScheduleBenchRow[];
    return rows.some((r) => r.moe) ? `${schedulesTable(rows)}\n\nMoE rows: the step and the experts' all-to-alls.\n\n${moeTable(rows)}` : schedulesTable(rows);
  },
};

export function renderMarkdown(r: Report): string {
  const out: string[] = [];
  out.push(`# PipeLab benchmark results${r.quick ? ' (quick)' : ''}`);
  out.push('');
  const flags = [r.quick ? '--quick' : '', r.big ? '--big' : ''].filter(Boolean).join(' ');
  out.push(`Measured ${r.date} by \`npm run bench${flags ? ` -- ${flags}` : ''}\` in ${r.seconds} s.`);
  if (r.runs?.length) {
    out.push('');
    out.push(`Gathered from ${r.runs.length} runs on machines of one kind with the same browser and adapter: ${r.runs.map((x) => `${x.date} (${x.suites.join(', ')}; ${x.seconds} s)`).join('; ')}.`);
  }
  out.push('');
  out.push(`- Machine: ${r.machine.cpus} × ${r.machine.cpuModel}, ${r.machine.memoryGiB} GiB, ${r.machine.platform}, Node ${r.machine.node}`);
  out.push(`- Browser: headless Chromium ${r.browser}`);
  out.push(`- WebGPU adapter: ${[r.adapter.vendor, r.adapter.architecture, r.adapter.description].filter(Boolean).join(' / ')}${r.browserGpu ? ` (asked for: ${r.browserGpu === 'swiftshader' ? 'SwiftShader' : `GPU recipe '${r.browserGpu}'`})` : ''}`);
  if (r.probe) out.push(...probeMarkdown(r.probe));
  out.push(`- Packages: ${Object.entries(r.packages).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  out.push('');
  out.push('These machines are shared and noisy: read the ratios, not the lone times.');
  if (r.pending?.length) out.push('', `**Under way**: still to run: ${r.pending.join(', ')}.`);
  for (const [name, why] of Object.entries(r.failures ?? {})) out.push('', `**Suite ${name} failed**: ${why}`);
  for (const [name, res] of Object.entries(r.results)) {
    if (!res) continue;
    out.push('');
    out.push(`## ${name}`);
    out.push('');
    for (const n of res.notes ?? []) out.push(`- ${n}`);
    if (res.notes?.length) out.push('');
    out.push(RENDER[name] ? RENDER[name](res) : '```json\n' + JSON.stringify(res.rows, null, 2) + '\n```');
  }
  out.push('');
  return out.join('\n');
}
