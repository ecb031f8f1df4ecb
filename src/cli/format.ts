/** Text and JSON renderings of schedules for the terminal. */
import { formatAction, type Schedule } from '../schedule/index.ts';
import { count } from '../util/count.ts';

export { count };

/** JSON with one line per rank's action list, so a schedule stays readable in a terminal or diff. */
export function scheduleToJson(s: Schedule): string {
  const head = [
    `  "name": ${JSON.stringify(s.name)}`,
    `  "stages": ${s.stages}`,
    `  "ranks": ${s.ranks}`,
    `  "microbatches": ${s.microbatches}`,
    `  "stageToRank": ${JSON.stringify(s.stageToRank)}`,
    ...(s.copies !== undefined ? [`  "copies": ${s.copies}`] : []),
  ];
  const rows = s.order.map((list) => `    ${JSON.stringify(list.map((a) => ({ stage: a.stage, op: a.op, mb: a.mb })))}`);
  return `{\n${head.join(',\n')},\n  "order": [\n${rows.join(',\n')}\n  ]\n}\n`;
}

export function stagesOf(s: Schedule, rank: number): number[] {
  const out: number[] = [];
  s.stageToRank.forEach((r, st) => {
    if (r === rank) out.push(st);
  });
  return out;
}

export function scheduleToText(s: Schedule): string {
  const actions = s.order.reduce((n, l) => n + l.length, 0);
  const v = s.stages / s.ranks;
  const lines = [
    `${s.name}: ${count(s.ranks, 'rank')} × ${Number.isInteger(v) ? v : v.toFixed(2)} stage${v === 1 ? '' : 's'} per rank = ${count(s.stages, 'stage')}, ${count(s.microbatches, 'micro-batch', 'micro-batches')}, ${count(actions, 'action')}`,
  ];
  const copies = s.copies ?? 1;
  if (copies > 1) {
    const k = s.stages / copies;
    const n = s.microbatches / copies;
    const each = Array.from({ length: copies }, (_, c) => `copy ${c}: stages ${c * k}…${(c + 1) * k - 1}, micro-batches ${c * n}…${(c + 1) * n - 1}`);
    lines.push(`${copies} model copies of ${k} stages (stage c·${k} + j holds the model's stage j; gradients summed over the copies at the flush): ${each.join('; ')}`);
  }
  const width = String(s.ranks - 1).length;
  for (let r = 0; r < s.ranks; r++) {
    const st = stagesOf(s, r);
    lines.push(`rank ${String(r).padStart(width)} (stage${st.length === 1 ? '' : 's'} ${st.join(',')}): ${s.order[r].map(formatAction).join(' ')}`);
  }
  return lines.join('\n') + '\n';
}

/** Fixed-width table. */
export function table(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, c) => Math.max(...cells.map((r) => (r[c] ?? '').length)));
  return cells.map((r) => r.map((x, c) => x.padEnd(widths[c])).join('  ').trimEnd()).join('\n') + '\n';
}

/**
 * A number as a person reads it: `digits` significant digits (4 by default), never fewer than its whole part
 * (19638.62958 → 19639, 23.87976 → 23.88, 0.0123456 → 0.01235), no trailing zeros, integers as they are.
 */
export function fmt(x: number, digits = 4): string {
  if (!Number.isFinite(x) || Number.isInteger(x)) return String(x);
  const magnitude = Math.floor(Math.log10(Math.abs(x)));
  if (magnitude < -6) return String(Number(x.toPrecision(digits)));
  return String(Number(x.toFixed(Math.min(20, Math.max(0, digits - 1 - magnitude)))));
}

