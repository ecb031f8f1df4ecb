/**
 * The URL query holds the whole configuration: the run configuration (the
 * runtime's own keys), `view`, and the simulate-only `sim.*` keys. Reading it
 * reports every bad value (field, value, rule) and keeps the rest.
 */
import { configFromQuery, configToQuery, defaultRunConfig, URL_FIELDS, type RunConfig } from '../runtime/run-config.ts';
import { ConfigError } from '../util/errors.ts';
import { compareParamsFromQuery, compareParamsToQuery, type CompareParams } from './compare-params.ts';
import { defaultSimParams, simParamsFromQuery, simParamsToQuery, type SimParams } from './sim-params.ts';
import { problemOf, VIEWS, type FieldProblem, type View } from './store.ts';

export interface UrlState {
  config: RunConfig;
  sim: SimParams;
  compare: CompareParams;
  view: View;
  problems: FieldProblem[];
}

export function readUrlState(search: string): UrlState {
  const params = new URLSearchParams(search.startsWith('?') ? search.slice(1) : search);
  const problems: FieldProblem[] = [];
  // Name what was typed ("ranks = "abc"") rather than what it parses to (NaN), then leave it out.
  const base = defaultRunConfig() as unknown as Record<string, unknown>;
  const runParams = new URLSearchParams(params);
  for (const f of URL_FIELDS) {
    const raw = runParams.get(f);
    if (raw === null || typeof base[f] !== 'number') continue;
    if (raw.trim() === '' || !Number.isFinite(Number(raw))) {
      problems.push(problemOf(new ConfigError(f, raw, 'must be a number')));
      runParams.delete(f);
    }
  }
  const { config, errors } = configFromQuery(runParams.toString());
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
  return params.toString();
}
