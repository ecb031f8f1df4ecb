/**
 * Reading typed values from a URL query, the same way for every group of keys
 * (the run configuration, `sim.*`, `compare.*`): numbers only in plain decimal
 * (`0x10`, `0b11`, `1_000` and blanks are refused, not read as 16, 3 or 0), and
 * a whole-record check that reverts bad values to their defaults while naming
 * the value the link gave, never a default.
 */
import { ConfigError, formatValue } from './errors.ts';

const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
const NON_FINITE: Readonly<Record<string, number>> = { Infinity: Infinity, '+Infinity': Infinity, '-Infinity': -Infinity, NaN: NaN };

/**
 * A number typed in a query. Infinity and NaN come back as numbers, so the
 * field's own rule names them (`lr = Infinity: must be a finite number`), the
 * same message a configuration object gets.
 */
export function parseQueryNumber(field: string, raw: string): number {
  const t = raw.trim();
  if (DECIMAL.test(t)) return Number(t);
  if (Object.hasOwn(NON_FINITE, t)) return NON_FINITE[t];
  throw new ConfigError(field, raw, 'must be a number in decimal notation, such as 12 or 0.01');
}

/**
 * Validates `values` until it passes. A failure on a key the link gave is
 * reported and that key reverts to its default; a failure on a key at its
 * default is a clash with something the link gave, so the given key it clashes
 * with is reported with the rule it breaks (`… (with sim.microbatches at its
 * default, 512)`) and reverted: the latest given key whose default alone clears
 * that failure, or the latest given key when none alone does. So a link's
 * `steps=40` survives a `schedule=zb-v` that lost its `virtual=2`: the schedule
 * is what clashes, not the steps. `keyOf` maps an error's field to its key
 * (`sim.ranks` → `ranks`, `fault.kind` → `fault`). Returns false when even the
 * defaults fail.
 */
export function revertUntilValid(
  values: Record<string, unknown>,
  given: Set<string>,
  defaultOf: (key: string) => unknown,
  validate: () => void,
  keyOf: (field: string) => string,
  nameOf: (key: string) => string,
  errors: ConfigError[],
): boolean {
  for (let tries = 0; tries <= given.size + 1; tries++) {
    const e = failureOf(validate);
    if (e === null) return true;
    const key = keyOf(e.field);
    if (given.has(key)) {
      errors.push(e);
      values[key] = defaultOf(key);
      given.delete(key);
      continue;
    }
    const latest = [...given].reverse();
    if (latest.length === 0) {
      errors.push(e);
      return false;
    }
    const culprit = latest.find((k) => clearsAlone(values, k, defaultOf(k), validate, e)) ?? latest[0];
    errors.push(new ConfigError(nameOf(culprit), values[culprit], `${e.rule} (with ${e.field} at its default, ${formatValue(e.value)})`));
    values[culprit] = defaultOf(culprit);
    given.delete(culprit);
  }
  return false;
}

/** The ConfigError `validate` throws, or null when it passes. */
function failureOf(validate: () => void): ConfigError | null {
  try {
    validate();
    return null;
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return e;
  }
}

/** Whether setting `key` to `value` alone makes `failure` go away (the values are left as they were). */
function clearsAlone(values: Record<string, unknown>, key: string, value: unknown, validate: () => void, failure: ConfigError): boolean {
  const kept = values[key];
  values[key] = value;
  try {
    const after = failureOf(validate);
    return after === null || after.field !== failure.field || after.rule !== failure.rule;
  } finally {
    values[key] = kept;
  }
}
