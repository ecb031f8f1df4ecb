/**
 * The one plain-JSON copy of a run configuration, taken before anything reads
 * it. Whatever is handed in (an object from the page, from `window.pipelab.run`,
 * from a test) is read exactly once, own key by own key: a getter runs once (if
 * it throws, the field is named), a value that is not JSON (a function, a
 * Symbol, a BigInt, undefined) is refused naming the field, and keys the
 * configuration does not have (`foo`, `stages`, `__proto__`) are refused naming
 * the nearest key it has. What comes out is a fresh object of plain data that
 * nothing outside can change, so the validation and the run see the same values.
 */
import { ConfigError } from '../util/errors.ts';
import { unknownKeyRule } from '../util/nearest.ts';
import { defaultRunConfig, MOE_FIELDS, type RunConfig } from './run-config.ts';

/** Bounds on the copy itself, so a hostile object cannot make the copy the slow part. */
export const SNAPSHOT_LIMITS = { depth: 4, keys: 256 } as const;

/** The keys a run configuration may hold: the default's, plus the optional ones. */
export function runConfigKeys(): string[] {
  return [...Object.keys(defaultRunConfig()), 'cut', 'textHash', 'ep', 'sequenceParallel', 'checkpointEvery', 'recovery', 'memoryBudget', 'offloadOptimizer', 'swap', 'fault', ...MOE_FIELDS];
}

function describeThrown(e: unknown): string {
  try {
    return e instanceof Error ? e.message : String(e);
  } catch {
    return 'an unreadable error';
  }
}

const NOT_JSON = 'must be plain JSON (a number, string, boolean, null, array or object)';

/** A plain-JSON copy of `value` (numbers stay numbers, NaN and Infinity included, so the rules can name them). */
export function plainJsonCopy(value: unknown, field: string, depth = 0): unknown {
  switch (typeof value) {
    case 'number':
    case 'string':
    case 'boolean':
      return value;
    case 'undefined':
      throw new ConfigError(field, undefined, `${NOT_JSON}, not undefined`);
    case 'function':
      throw new ConfigError(field, value, `${NOT_JSON}, not a function`);
    case 'symbol':
      throw new ConfigError(field, value, `${NOT_JSON}, not a Symbol`);
    case 'bigint':
      throw new ConfigError(field, value, `${NOT_JSON}, not a BigInt`);
  }
  if (value === null) return null;
  if (depth >= SNAPSHOT_LIMITS.depth) throw new ConfigError(field, 'an object', `is nested deeper than ${SNAPSHOT_LIMITS.depth} levels`);
  let keys: (string | symbol)[];
  let isArray: boolean;
  try {
    isArray = Array.isArray(value);
    keys = Reflect.ownKeys(value as object);
  } catch (e) {
    throw new ConfigError(field, 'an object', `could not be read (${describeThrown(e)})`);
  }
  if (keys.length > SNAPSHOT_LIMITS.keys + (isArray ? 1 : 0)) {
    throw new ConfigError(field, `an object with ${keys.length} keys`, `may hold at most ${SNAPSHOT_LIMITS.keys}`);
  }
  const out: Record<string, unknown> | unknown[] = isArray ? [] : Object.create(null);
  for (const key of keys) {
    if (typeof key === 'symbol') throw new ConfigError(`${field}[${String(key)}]`, 'a Symbol key', `${NOT_JSON}; keys must be strings`);
    if (isArray && key === 'length') continue;
    const name = isArray ? `${field}[${key}]` : field === '' ? key : `${field}.${key}`;
    let v: unknown;
    try {
      const d = Reflect.getOwnPropertyDescriptor(value as object, key);
      if (d === undefined) continue;
      if (!d.enumerable) continue;
      v = d.get ? d.get.call(value) : d.value;
    } catch (e) {
      throw new ConfigError(name, 'a getter', `could not be read (${describeThrown(e)})`);
    }
    const copy = plainJsonCopy(v, name, depth + 1);
    if (Array.isArray(out)) out[Number(key)] = copy;
    else Object.defineProperty(out, key, { value: copy, enumerable: true, writable: true, configurable: true });
  }
  if (Array.isArray(out)) return out;
  // A plain object again, so spreads and JSON work as usual; keys such as __proto__ stay own data keys.
  const plain: Record<string, unknown> = {};
  for (const k of Object.keys(out)) Object.defineProperty(plain, k, { value: out[k], enumerable: true, writable: true, configurable: true });
  return plain;
}

/**
 * The run configuration as plain data, read once; throws a ConfigError naming
 * the field for anything that is not plain JSON or not a configuration key.
 * Values are not checked here: validateRunConfig does that, on this copy.
 */
export function snapshotRunConfig(input: unknown): RunConfig {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new ConfigError('config', input === null ? null : Array.isArray(input) ? 'an array' : typeof input, 'must be an object of configuration keys');
  }
  const copy = plainJsonCopy(input, '') as Record<string, unknown>;
  const known = runConfigKeys();
  for (const key of Object.keys(copy)) {
    if (!known.includes(key)) throw new ConfigError(key, copy[key], unknownKeyRule(key, known, 'configuration key'));
  }
  const fault = copy.fault;
  if (fault !== undefined && (fault === null || typeof fault !== 'object' || Array.isArray(fault))) {
    throw new ConfigError('fault', fault, 'must be an object {kind, action, step?, replica?} or absent');
  }
  if (fault !== undefined) {
    const faultKeys = ['kind', 'action', 'step', 'replica'];
    for (const key of Object.keys(fault as object)) {
      if (!faultKeys.includes(key)) throw new ConfigError(`fault.${key}`, (fault as Record<string, unknown>)[key], unknownKeyRule(key, faultKeys, 'fault key'));
    }
  }
  return copy as unknown as RunConfig;
}
