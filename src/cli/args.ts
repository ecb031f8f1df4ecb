/**
 * A small flag parser: `--name value`, `--name=value`, boolean `--name`, and
 * positionals. Every rejection is a ConfigError naming the flag, the value and
 * what is accepted.
 */
import { ConfigError } from '../util/errors.ts';

export interface FlagSpec {
  /** Flag name without the dashes. */
  name: string;
  /** Boolean flags take no value. */
  boolean?: boolean;
  /** Placeholder for help, e.g. `N` or `FILE`. */
  value?: string;
  help: string;
}

export interface ParsedArgs {
  flags: Map<string, string | true>;
  positionals: string[];
}

export class UsageError extends ConfigError {}

export function parseArgs(argv: readonly string[], specs: readonly FlagSpec[], command: string): ParsedArgs {
  const byName = new Map(specs.map((s) => [s.name, s]));
  const flags = new Map<string, string | true>();
  const positionals: string[] = [];
  const accepted = specs.map((s) => `--${s.name}`).join(', ');
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h') {
      flags.set('help', true);
      continue;
    }
    if (!arg.startsWith('--') || arg === '--') {
      if (arg.startsWith('-') && arg !== '-') {
        throw new UsageError('flag', arg, `is not a flag of \`pipelab ${command}\`; it accepts ${accepted}`);
      }
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
    const spec = byName.get(name);
    if (!spec) throw new UsageError('flag', `--${name}`, `is not a flag of \`pipelab ${command}\`; it accepts ${accepted}`);
    if (flags.has(name)) throw new UsageError(`--${name}`, eq >= 0 ? arg.slice(eq + 1) : argv[i + 1], 'is given twice');
    if (spec.boolean) {
      if (eq >= 0) throw new UsageError(`--${name}`, arg.slice(eq + 1), 'takes no value');
      flags.set(name, true);
      continue;
    }
    let value: string | undefined;
    if (eq >= 0) value = arg.slice(eq + 1);
    else {
      value = argv[i + 1];
      if (value === undefined || (value.startsWith('--') && value.length > 2)) {
        throw new UsageError(`--${name}`, value ?? null, `needs a value (${spec.value ?? 'VALUE'})`);
      }
      i++;
    }
    flags.set(name, value);
  }
  return { flags, positionals };
}

/** A flag's value, or a UsageError saying it is required and what it is. */
export function required<T>(x: T | undefined, flag: string, what: string): T {
  if (x === undefined) throw new UsageError(`--${flag}`, null, `is required: ${what}`);
  return x;
}

export function stringFlag(a: ParsedArgs, name: string): string | undefined {
  const v = a.flags.get(name);
  return typeof v === 'string' ? v : undefined;
}

export function boolFlag(a: ParsedArgs, name: string): boolean {
  return a.flags.get(name) === true;
}

/** An integer flag in [min, max]; undefined when absent. */
export function intFlag(a: ParsedArgs, name: string, min: number, max: number): number | undefined {
  const raw = stringFlag(a, name);
  if (raw === undefined) return undefined;
  if (!/^\s*\d+\s*$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new UsageError(`--${name}`, raw, `must be an integer between ${min} and ${max}`);
  }
  return Number(raw);
}

/** A number flag ≥ min (Infinity allowed when `infinite`); undefined when absent. */
export function numberFlag(a: ParsedArgs, name: string, min: number, infinite = false): number | undefined {
  const raw = stringFlag(a, name);
  if (raw === undefined) return undefined;
  const x = /^\s*(inf|infinity)\s*$/i.test(raw) && infinite ? Infinity : raw.trim() === '' ? NaN : Number(raw);
  if (Number.isNaN(x) || x < min || (!infinite && !Number.isFinite(x))) {
    throw new UsageError(`--${name}`, raw, `must be a number at least ${min}${infinite ? ' (or inf)' : ''}`);
  }
  return x;
}

export function oneOfFlag<T extends string>(a: ParsedArgs, name: string, allowed: readonly T[]): T | undefined {
  const raw = stringFlag(a, name);
  if (raw === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(raw)) throw new UsageError(`--${name}`, raw, `must be one of ${allowed.join(', ')}`);
  return raw as T;
}

export function helpFor(usage: string, summary: string, specs: readonly FlagSpec[]): string {
  const lines = [`usage: ${usage}`, '', summary, '', 'flags:'];
  const left = specs.map((s) => `  --${s.name}${s.boolean ? '' : ` ${s.value ?? 'VALUE'}`}`);
  const width = Math.max(...left.map((l) => l.length)) + 2;
  specs.forEach((s, i) => lines.push(left[i].padEnd(width) + s.help));
  return lines.join('\n') + '\n';
}
