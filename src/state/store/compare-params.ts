/**
 * What a comparison compares: which schedules, how many stages per rank the
 * interleaved ones get, and how many steps each is measured for. They travel
 * in the URL under `compare.*` keys.
 */
import { RUN_SCHEDULE_NAMES, type RunScheduleName } from '../../schedule/index.ts';
import { ConfigError, requireInt, requireOneOf } from '../../util/errors.ts';
import { parseQueryNumber } from '../../util/query-values.ts';

export interface CompareParams {
  schedules: RunScheduleName[];
  /** Stages per rank for the schedules that take any number (interleaved, looped). */
  virtual: number;
  /** Steps each schedule is measured for. */
  steps: number;
  /** A preset shown above the schedules: 'dp-pp', the same 8 workers as 1×8, 2×4, 4×2 and 8×1 (dp-pp-preset.ts); 'zero', ZeRO 0 → 3 at dp = 4 (zero-preset.ts); 'wins', the what-wins sweep over m (what-wins.ts); 'fit', Make it fit (fit-preset.ts); 'ep', Experts across workers (ep-preset.ts). */
  preset?: ComparePreset;
}

export const COMPARE_PRESETS = ['dp-pp', 'zero', 'wins', 'fit', 'ep'] as const;
export type ComparePreset = (typeof COMPARE_PRESETS)[number];

export function defaultCompareParams(): CompareParams {
  return { schedules: ['gpipe', '1f1b', 'interleaved-1f1b', 'zb-h1'], virtual: 2, steps: 3 };
}

export const COMPARE_LIMITS = { virtual: 8, steps: 100 } as const;

function same(a: CompareParams, b: CompareParams): boolean {
  return a.virtual === b.virtual && a.steps === b.steps && a.schedules.join(',') === b.schedules.join(',') && a.preset === b.preset;
}

export function compareParamsToQuery(p: CompareParams, params: URLSearchParams, always: boolean): void {
  if (!always && same(p, defaultCompareParams())) return;
  params.set('compare.schedules', p.schedules.join(','));
  params.set('compare.virtual', String(p.virtual));
  params.set('compare.steps', String(p.steps));
  if (p.preset) params.set('compare.preset', p.preset);
}

/** Reads `compare.*` keys; each bad value is reported and its default kept. */
/** The `compare.*` keys a URL may hold. */
export const COMPARE_QUERY_KEYS: readonly string[] = ['compare.schedules', 'compare.virtual', 'compare.steps', 'compare.preset'];

export function compareParamsFromQuery(params: URLSearchParams): { params: CompareParams; errors: ConfigError[] } {
  const out = defaultCompareParams();
  const errors: ConfigError[] = [];
  const list = params.get('compare.schedules');
  if (list !== null) {
    const names = list.split(',').map((s) => s.trim()).filter((s) => s !== '');
    const bad = names.filter((n) => !(RUN_SCHEDULE_NAMES as readonly string[]).includes(n));
    if (bad.length > 0) errors.push(new ConfigError('compare.schedules', list, `${bad.map((b) => JSON.stringify(b)).join(', ')} not among ${RUN_SCHEDULE_NAMES.join(', ')}`));
    else out.schedules = RUN_SCHEDULE_NAMES.filter((n) => names.includes(n));
  }
  const preset = params.get('compare.preset');
  if (preset !== null) {
    try {
      out.preset = requireOneOf('compare.preset', preset, COMPARE_PRESETS);
    } catch (e) {
      if (e instanceof ConfigError) errors.push(e);
      else throw e;
    }
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
