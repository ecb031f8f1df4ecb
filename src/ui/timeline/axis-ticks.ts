/** Round tick values (1, 2, 5 × 10^k) for a time axis, and their labels. */
export function niceStep(span: number, maxTicks: number): number {
  const raw = span / Math.max(1, maxTicks);
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const f = raw / p;
  const m = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  return m * p;
}

export function ticks(a: number, b: number, maxTicks: number): number[] {
  const step = niceStep(b - a, maxTicks);
  const out: number[] = [];
  const first = Math.ceil(a / step) * step;
  for (let t = first, i = 0; t <= b + step * 1e-9 && i < 1000; i++, t = first + i * step) out.push(Math.abs(t) < step * 1e-9 ? 0 : t);
  return out;
}

/** A tick label with just enough decimals for the step. */
export function formatTick(t: number, step: number, unit: string): string {
  const decimals = Math.max(0, Math.min(6, -Math.floor(Math.log10(step) + 1e-9)));
  return `${t.toFixed(decimals)}${unit === 'ms' ? ' ms' : ''}`;
}
