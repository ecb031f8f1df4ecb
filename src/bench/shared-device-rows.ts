/**
 * Issue 12's prediction in the schedules bench: once a grid is measured, each
 * row gets the shared-device prediction (solo op times calibrated from the
 * row's own means, played on one device with k lanes: src/plan/prediction-check.ts)
 * beside today's (the same means on independent devices), each with its error
 * against the measured makespan. k is one number per model and rank count: the
 * lanes of the profiling pass of that model on that many ranks
 * (src/plan/measure.ts, measured before the grid), so every row is held out; for reference, also k fitted on the grid's own rows
 * with m = p (all rows when there are none) and the error it gives.
 * This is what scripts/shared-device-report.ts computes offline from
 * bench/results.json, done by `npm run bench` itself.
 */
import { fitLanes, LANE_CANDIDATES, predictRun, type RecordedRun } from '../plan/prediction-check.ts';

export interface SharedDevicePrediction {
  /** The lanes of the shared device the prediction used. */
  lanes: number;
  /** Where they come from: the model's profiling pass, or fitted on the grid's m = p rows (when no profile was given). */
  lanesFrom: 'profile' | 'fitted';
  /** Whether this row took part in fitting the lanes used (m = p, lanes fitted), or is held out. */
  fit: boolean;
  /** For reference: lanes fitted on the grid's m = p rows, and the shared-device error with them. */
  fittedLanes: number;
  fittedError: number;
  /** Today's prediction: the mean op times on independent devices. */
  todayMs: number;
  /** (today − measured) / measured. */
  todayError: number;
  /** "This machine": calibrated solo times on one device with `lanes` lanes. */
  sharedMs: number;
  /** (shared − measured) / measured. */
  sharedError: number;
  /** "p independent GPUs": the calibrated solo times, a device per rank. */
  independentMs: number;
}

/** The key of a profile's lanes: the model and the workers it was measured with (a data-parallel row's: dp × p). */
export function lanesKey(model: string, ranks: number): string {
  return `${model}|${ranks}`;
}

/**
 * The grid's rows, each with `prediction` set: the lanes of the profile of the
 * row's model on its ranks (`profileLanes`, by lanesKey) or, when there is none,
 * fitted per model.
 */
export function withSharedDevicePrediction<R extends RecordedRun & { model?: string }>(rows: readonly R[], profileLanes: ReadonlyMap<string, number> = new Map()): (R & { prediction: SharedDevicePrediction })[] {
  const models = [...new Set(rows.map((r) => r.model ?? ''))];
  const fittedOf = new Map<string, number>();
  for (const m of models) {
    const group = rows.filter((r) => (r.model ?? '') === m);
    const fitRows = group.filter((r) => r.m === r.p);
    fittedOf.set(m, fitLanes(fitRows.length ? fitRows : group, LANE_CANDIDATES));
  }
  return rows.map((r) => {
    const model = r.model ?? '';
    const fittedLanes = fittedOf.get(model)!;
    const fromProfile = profileLanes.get(lanesKey(model, r.p * (r.mesh?.dp ?? 1)));
    const lanes = fromProfile ?? fittedLanes;
    const p = predictRun(r, lanes);
    const fitted = fromProfile === undefined ? p : predictRun(r, fittedLanes);
    return {
      ...r,
      prediction: {
        lanes,
        lanesFrom: fromProfile === undefined ? 'fitted' : 'profile',
        fit: fromProfile === undefined && r.m === r.p,
        fittedLanes,
        fittedError: fitted.sharedError,
        todayMs: p.todayMs,
        todayError: p.todayError,
        sharedMs: p.sharedMs,
        sharedError: p.sharedError,
        independentMs: p.independentMs,
      },
    };
  });
}

/** Worst |error| of today's, the shared-device prediction and its fitted-lanes reference over `rows` (rows without a prediction are skipped). */
export function worstPredictionErrors(rows: readonly { prediction?: SharedDevicePrediction }[]): { today: number; shared: number; fitted: number } {
  const ps = rows.flatMap((r) => (r.prediction ? [r.prediction] : []));
  const worst = (f: (p: SharedDevicePrediction) => number) => Math.max(0, ...ps.map((p) => Math.abs(f(p))));
  return { today: worst((p) => p.todayError), shared: worst((p) => p.sharedError), fitted: worst((p) => p.fittedError) };
}
