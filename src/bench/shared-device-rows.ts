/**
 * Issue 12's prediction in the schedules bench: once a grid is measured, each
 * row gets the shared-device prediction (solo op times calibrated from the
 * row's own means, played on one device with k lanes: src/plan/prediction-check.ts)
 * beside today's (the same means on independent devices), each with its error
 * against the measured makespan. k is one number per grid, fitted on the rows
 * with m = p (all rows when there are none); the other rows are held out.
 * This is what scripts/shared-device-report.ts computes offline from
 * bench/results.json, done by `npm run bench` itself.
 */
import { fitLanes, LANE_CANDIDATES, predictRun, type RecordedRun } from '../plan/prediction-check.ts';

export interface SharedDevicePrediction {
  /** The fitted lanes of the shared device. */
  lanes: number;
  /** Whether this row took part in fitting the lanes (m = p), or is held out. */
  fit: boolean;
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

/** The grid's rows, each with `prediction` set; grouped by model, a lane count fitted per model. */
export function withSharedDevicePrediction<R extends RecordedRun & { model?: string }>(rows: readonly R[]): (R & { prediction: SharedDevicePrediction })[] {
  const models = [...new Set(rows.map((r) => r.model ?? ''))];
  const lanesOf = new Map<string, number>();
  for (const m of models) {
    const group = rows.filter((r) => (r.model ?? '') === m);
    const fitRows = group.filter((r) => r.m === r.p);
    lanesOf.set(m, fitLanes(fitRows.length ? fitRows : group, LANE_CANDIDATES));
  }
  return rows.map((r) => {
    const lanes = lanesOf.get(r.model ?? '')!;
    const p = predictRun(r, lanes);
    return {
      ...r,
      prediction: { lanes, fit: r.m === r.p, todayMs: p.todayMs, todayError: p.todayError, sharedMs: p.sharedMs, sharedError: p.sharedError, independentMs: p.independentMs },
    };
  });
}

/** Worst |error| of today's and of the shared-device prediction over `rows` (rows without a prediction are skipped). */
export function worstPredictionErrors(rows: readonly { prediction?: SharedDevicePrediction }[]): { today: number; shared: number } {
  const ps = rows.flatMap((r) => (r.prediction ? [r.prediction] : []));
  return {
    today: Math.max(0, ...ps.map((p) => Math.abs(p.todayError))),
    shared: Math.max(0, ...ps.map((p) => Math.abs(p.sharedError))),
  };
}
