/**
 * Errors a person can act on: every rejected input names the field, the value
 * and the rule it broke. The UI and the CLI print `message` as it is.
 */
export class ConfigError extends Error {
  constructor(
    readonly field: string,
    readonly value: unknown,
    readonly rule: string,
  ) {
    super(`${field} = ${formatValue(value)}: ${rule}`);
    this.name = 'ConfigError';
  }
}

/** Echoed values longer than this are cut, so a message stays readable whatever was typed. */
export const ECHO_LIMIT = 60;

/** Cuts `text` to ECHO_LIMIT characters, saying how long it was: `"aaaa…" … (10000000 characters)`. */
export function cutForEcho(text: string, limit = ECHO_LIMIT): string {
  if (text.length <= limit) return text;
  return `${text.slice(0, limit)}… (${text.length} characters)`;
}

function formatWhole(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(formatWhole).join(', ')}]`;
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  if (typeof v === 'function') return 'a function';
  if (typeof v === 'symbol') return String(v);
  if (typeof v === 'bigint') return `${v}n`;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** A value as a message echoes it: JSON-like, cut to a readable length. */
export function formatValue(v: unknown): string {
  if (typeof v === 'string' && v.length > ECHO_LIMIT) return `${JSON.stringify(v.slice(0, ECHO_LIMIT)).slice(0, -1)}…" (${v.length} characters)`;
  if (Array.isArray(v) && v.length > ECHO_LIMIT) return cutForEcho(`[${v.slice(0, ECHO_LIMIT).map(formatWhole).join(', ')}`, ECHO_LIMIT) + ` … (${v.length} items)`;
  return cutForEcho(formatWhole(v));
}

/** Throws a ConfigError unless `value` is an integer within [min, max]. */
export function requireInt(field: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw new ConfigError(field, value, `must be an integer`);
  }
  if (value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `between ${min} and ${max}`;
    throw new ConfigError(field, value, `must be an integer ${range}`);
  }
  return value;
}

/** Throws a ConfigError unless `value` is a finite number within (or at) the bounds. */
export function requireFinite(field: string, value: unknown, opts: { min?: number; max?: number; exclusiveMin?: boolean } = {}): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new ConfigError(field, value, 'must be a finite number');
  }
  const { min, max, exclusiveMin } = opts;
  if (min !== undefined && (exclusiveMin ? value <= min : value < min)) {
    throw new ConfigError(field, value, `must be ${exclusiveMin ? 'greater than' : 'at least'} ${min}`);
  }
  if (max !== undefined && value > max) throw new ConfigError(field, value, `must be at most ${max}`);
  return value;
}

/** Throws a ConfigError unless `value` is one of `allowed`. */
export function requireOneOf<T extends string>(field: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(field, value, `must be one of ${allowed.join(', ')}`);
  }
  return value as T;
}
