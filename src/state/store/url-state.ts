/**
 * The URL query holds the whole configuration: the run configuration (the
 * runtime's own keys), `view`, and the simulate-only `sim.*` keys. Reading it
 * reports every bad value (field, value, rule) and keeps the rest.
 */
import { configFromQuery, configToQuery, readableQuery, type RunConfig } from '../../config/run-config.ts';
import { ConfigError } from '../../util/errors.ts';
import { COMPARE_QUERY_KEYS, compareParamsFromQuery, compareParamsToQuery, type CompareParams } from './compare-params.ts';
import { SIM_QUERY_KEYS, defaultSimParams, simParamsFromQuery, simParamsToQuery, type SimParams } from './sim-params.ts';
import { problemOf, VIEWS, type FieldProblem, type View } from './store.ts';

export interface UrlState {
  config: RunConfig;
  sim: SimParams;
  compare: CompareParams;
  view: View;
  problems: FieldProblem[];
}

/** At most this many problems are listed for one link (the last line counts the rest). */
export const MAX_URL_PROBLEMS = 12;

/** The query keys of the page besides the run configuration's. */
export const PAGE_QUERY_KEYS: readonly string[] = ['view', ...SIM_QUERY_KEYS, ...COMPARE_QUERY_KEYS];

/** What `window.pipelab.urlConfig()` reports: the page's own reading, so both word every problem the same. */
export function urlConfigOf(search: string): { config: RunConfig; errors: string[] } {
  const s = readUrlState(search);
  return { config: s.config, errors: s.problems.map((p) => p.message) };
}

export function readUrlState(search: string): UrlState {
  const params = new URLSearchParams(search.startsWith('?') ? search.slice(1) : search);
  const problems: FieldProblem[] = [];
  const { config, errors } = configFromQuery(params.toString(), undefined, { otherKeys: PAGE_QUERY_KEYS });
  problems.push(...errors.map(problemOf));
  const sim = simParamsFromQuery(params);
  problems.push(...sim.errors.map(problemOf));
  const compare = compareParamsFromQuery(params);
  problems.push(...compare.errors.map(problemOf));
  let view: View = 'run';
  const v = params.get('view');
  if (v !== null) {
    if ((VIEWS as readonly string[]).includes(v)) view = v as View;
    else problems.push(problemOf(new ConfigError('view', v, `must be one of ${VIEWS.join(', ')}`)));
  }
  if (problems.length > MAX_URL_PROBLEMS) {
    const more = problems.length - (MAX_URL_PROBLEMS - 1);
    problems.splice(MAX_URL_PROBLEMS - 1, problems.length, { field: 'url', message: `… and ${more} more problems in the link` });
  }
  return { config, sim: sim.params, compare: compare.params, view, problems };
}

function sameSim(a: SimParams, b: SimParams): boolean {
  return (Object.keys(a) as (keyof SimParams)[]).every((k) => a[k] === b[k]);
}

/**
 * The query for a state: run keys always, view when not the run view, sim
 * and compare keys when they differ from their defaults or their view is on.
 */
export function urlQueryFor(config: RunConfig, sim: SimParams, view: View, compare?: CompareParams): string {
  const params = new URLSearchParams(configToQuery(config));
  if (view !== 'run') params.set('view', view);
  if (view === 'simulate' || !sameSim(sim, defaultSimParams())) simParamsToQuery(sim, params);
  if (compare) compareParamsToQuery(compare, params, view === 'compare');
  return readableQuery(params);
}
