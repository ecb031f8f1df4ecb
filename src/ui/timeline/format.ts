/** Number formats shared by the tables and badges. */
export function pct(x: number | null | undefined, digits = 1): string {
  return x === null || x === undefined || !Number.isFinite(x) ? '—' : `${(x * 100).toFixed(digits)}%`;
}

/** A change of a fraction in percentage points, signed. */
export function pp(x: number | null | undefined, digits = 1): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—';
  const v = x * 100;
  return `${v >= 0 ? '+' : '−'}${Math.abs(v).toFixed(digits)} pp`;
}

export function ms(x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—';
  if (x >= 10_000) return `${(x / 1000).toFixed(1)} s`;
  if (x >= 100) return `${x.toFixed(0)} ms`;
  if (x >= 10) return `${x.toFixed(1)} ms`;
  return `${x.toFixed(2)} ms`;
}

export function num(x: number | null | undefined, digits = 2): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—';
  if (Math.abs(x) >= 1000) return Math.round(x).toLocaleString('en-US');
  return Number(x.toFixed(digits)).toString();
}

export function bytes(x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—';
  if (x >= 1 << 20) return `${(x / (1 << 20)).toFixed(2)} MiB`;
  if (x >= 1024) return `${(x / 1024).toFixed(1)} KiB`;
  return `${Math.round(x)} B`;
}

export function duration(msLeft: number | null): string {
  if (msLeft === null || !Number.isFinite(msLeft)) return '—';
  const s = Math.round(msLeft / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${String(s % 60).padStart(2, '0')} s`;
}

/** A figure and its unit kept on one line where a table wraps its cells (a phone). */
export function whole(x: string): string {
  return x.replace(/ /g, '\u00a0');
}
