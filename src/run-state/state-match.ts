/**
 * Whether a sound checkpoint belongs to the run expected (the configuration in
 * the URL, the run being recovered): the first parameter that differs (another
 * model), else the first configuration field that differs (another
 * configuration), named with both values. Fields in `ignore` may differ (a
 * recovery re-cut onto fewer ranks changes the mesh, not the training).
 */
import { URL_FIELDS, type RunConfig } from '../config/run-config.ts';
import { formatValue } from '../util/errors.ts';
import { CheckpointError } from './checkpoint-error.ts';
import { stateConfig } from './run-state.ts';

export interface StateExpectation {
  /** The configuration the checkpoint must be of. */
  config: RunConfig;
  /** Configuration fields that may differ. */
  ignore?: readonly (keyof RunConfig)[];
}

function shapeText(s: readonly number[] | undefined): string {
  return s ? `[${s.join(', ')}]` : 'absent';
}

/** The first field (URL order, then any other) whose value differs between a and b, skipping `ignore`. */
function firstDifference(a: RunConfig, b: RunConfig, ignore: readonly string[]): string | undefined {
  const keys = [...URL_FIELDS, ...[...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => !(URL_FIELDS as readonly string[]).includes(k)).sort()];
  const ra = a as unknown as Record<string, unknown>;
  const rb = b as unknown as Record<string, unknown>;
  return keys.find((k) => !ignore.includes(k) && JSON.stringify(ra[k]) !== JSON.stringify(rb[k]));
}

/**
 * Throws a CheckpointError ('mismatch') unless the checkpoint's configuration
 * and parameters (`have`: name → shape) are the expected ones (`want`: the
 * expected model's).
 */
export function checkExpected(config: RunConfig, have: ReadonlyMap<string, readonly number[]>, want: ReadonlyMap<string, readonly number[]>, expect: StateExpectation): void {
  const expected = stateConfig(expect.config);
  const field = firstDifference(config, expected, expect.ignore ?? []);
  const fieldText = field === undefined ? '' : `config.${field} = ${formatValue((config as unknown as Record<string, unknown>)[field])} in the checkpoint, ${formatValue((expected as unknown as Record<string, unknown>)[field])} expected`;
  const names = [...want.keys(), ...[...have.keys()].filter((n) => !want.has(n))];
  const param = names.find((n) => shapeText(have.get(n)) !== shapeText(want.get(n)));
  if (param !== undefined) {
    const a = have.get(param), b = want.get(param);
    const what = !a ? `(${shapeText(b)} in the expected model) is not in the checkpoint` : !b ? `(${shapeText(a)} in the checkpoint) is not a parameter of the expected model` : `is ${shapeText(a)} in the checkpoint, ${shapeText(b)} in the expected model`;
    throw new CheckpointError('mismatch', `a checkpoint of another model: parameter ${param} ${what}${fieldText ? ` (${fieldText})` : ''}`);
  }
  if (field !== undefined) throw new CheckpointError('mismatch', `a checkpoint of another configuration: ${fieldText}`);
}
