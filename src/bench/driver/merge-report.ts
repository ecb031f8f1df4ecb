/**
 * `npm run bench -- --suite a,b` re-runs some suites: their results replace those suites' in the results.json
 * already in the output folder, and the others' stay, when that file was measured on the same machine, browser,
 * adapter and grid (quick, big); the report then lists the runs it gathers (markdown.ts `runs`). Otherwise this
 * run's results alone are written, and the caller says what was dropped.
 */
export interface MergeableReport {
  date: string;
  seconds: number;
  quick: boolean;
  big?: boolean;
  machine: { cpus: number; cpuModel: string };
  browser: string;
  adapter: Record<string, string>;
  runs?: { date: string; seconds: number; suites: string[] }[];
  failures?: Record<string, string>;
  results: Partial<Record<string, unknown>>;
}

/** Why `prev` cannot take `next`'s suites (null: it can). */
export function mergeRefusal(prev: MergeableReport, next: MergeableReport): string | null {
  const same = (what: string, a: unknown, b: unknown) => (JSON.stringify(a) === JSON.stringify(b) ? null : `its ${what} differs (${JSON.stringify(a)} there, ${JSON.stringify(b)} now)`);
  return (
    same('machine', [prev.machine.cpus, prev.machine.cpuModel], [next.machine.cpus, next.machine.cpuModel]) ??
    same('browser', prev.browser, next.browser) ??
    same('adapter', [prev.adapter.vendor, prev.adapter.architecture], [next.adapter.vendor, next.adapter.architecture]) ??
    same('grid (--quick, --big)', [prev.quick, prev.big ?? false], [next.quick, next.big ?? false])
  );
}

/** `next` (this run's suites) laid over `prev`: prev's other suites kept, in prev's order, then this run's new ones; the runs listed. */
export function mergeReports<T extends MergeableReport>(prev: MergeableReport, next: T): T {
  const ran = Object.keys(next.results);
  const results: Partial<Record<string, unknown>> = {};
  for (const [k, v] of Object.entries(prev.results)) results[k] = ran.includes(k) ? next.results[k] : v;
  for (const k of ran) if (!(k in results)) results[k] = next.results[k];
  const earlier = (prev.runs ?? [{ date: prev.date, seconds: prev.seconds, suites: Object.keys(prev.results) }])
    .map((r) => ({ ...r, suites: r.suites.filter((s) => !ran.includes(s)) }))
    .filter((r) => r.suites.length > 0);
  const failures = { ...Object.fromEntries(Object.entries(prev.failures ?? {}).filter(([k]) => !ran.includes(k) && !(k in (next.failures ?? {})))), ...(next.failures ?? {}) };
  return { ...next, failures, results, runs: [...earlier, { date: next.date, seconds: next.seconds, suites: ran }] };
}
