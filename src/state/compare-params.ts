/**
 * What a comparison compares: which schedules, how many stages per rank the
 * interleaved ones get, and how many steps each is measured for. They travel
 * in the URL under `compare.*` keys.
 */
import { SCHEDULE_NAMES, type ScheduleName } from '../schedule/index.ts';
import { ConfigError, requireInt } from '../util/errors.ts';
import { parseQueryNumber } from '../util/query-values.ts';

export interface CompareParams {
  schedules: ScheduleName[];
  /** Stages per rank for the schedules that take any number (interleaved, looped). */
  virtual: number;
  /** Steps each schedule is measured for. */
  steps: number;
}

export function defaultCompareParams(): CompareParams {
  return { schedules: ['gpipe', '1f1b', 'interleaved-1f1b', 'zb-h1'], virtual: 2, steps: 3 };
}

export const COMPARE_LIMITS = { virtual: 8, steps: 100 } as const;

function same(a: CompareParams, b: CompareParams): boolean {
  return a.virtual === b.virtual && a.steps === b.steps && a.schedules.join(',') === b.schedules.join(',');
}

export function compareParamsToQuery(p: CompareParams, params: URLSearchParams, always: boolean): void {
  if (!always && same(p, defaultCompareParams())) return;
  params.set('compare.schedules', p.schedules.join(','));
  params.set('compare.virtual', String(p.virtual));
  params.set('compare.steps', String(p.steps));
}

/** Reads `compare.*` keys; each bad value is reported and its default kept. */
/** The `compare.*` keys a URL may hold. */
export const COMPARE_QUERY_KEYS: readonly string[] = ['compare.schedules', 'compare.virtual', 'compare.steps'];

export function compareParamsFromQuery(params: URLSearchParams): { params: CompareParams; errors: ConfigError[] } {
  const out = defaultCompareParams();
  const errors: ConfigError[] = [];
  const list = params.get('compare.schedules');
  if (list !== null) {
    const names = list.split(',').map((s) => s.trim()).filter((s) => s !== '');
    const bad = names.filter((n) => !(SCHEDULE_NAMES as readonly string[]).includes(n));
    if (bad.length > 0) errors.push(new ConfigError('compare.schedules', list, `${bad.map((b) => JSON.stringify(b)).join(', ')} not among ${SCHEDULE_NAMES.join(', ')}`));
    else out.schedules = SCHEDULE_NAMES.filter((n) => names.includes(n));
  }
  for (const key of ['virtual', 'steps'] as const) {
    const raw = params.get(`compare.${key}`);
    if (raw === null) continue;
    try {
      const n = parseQueryNumber(`compare.${key}`, raw);
      out[key] = requireInt(`compare.${key}`, n, 1, COMPARE_LIMITS[key]);
    } catch (e) {
      if (e instanceof ConfigError) errors.push(e);
      else throw e;
    }
  }
  return { params: out, errors };
}
