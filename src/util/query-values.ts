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
 * default is a clash with something the link gave, so the last given key is
 * reported with the rule it breaks (`… (with sim.microbatches at its default, 512)`) and reverted. `keyOf` maps an error's field to
 * its key (`sim.ranks` → `ranks`, `fault.kind` → `fault`). Returns false when
 * even the defaults fail.
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
    try {
      validate();
      return true;
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      const key = keyOf(e.field);
      if (given.has(key)) {
        errors.push(e);
        values[key] = defaultOf(key);
        given.delete(key);
        continue;
      }
      const last = [...given].pop();
      if (last === undefined) {
        errors.push(e);
        return false;
      }
      errors.push(new ConfigError(nameOf(last), values[last], `${e.rule} (with ${e.field} at its default, ${formatValue(e.value)})`));
      values[last] = defaultOf(last);
      given.delete(last);
    }
  }
  return false;
}
