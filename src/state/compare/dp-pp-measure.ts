/**
 * The Compare presets' runs (dp × pp, ZeRO 0 → 3): each shape trained for a few steps on the
 * workers, one after the other, in the page's 'comparing' session (compare.ts
 * measureEach), and what each reported.
 */
import { create } from 'zustand';
import type { RunReport } from '../../runtime/report/index.ts';
import { measureEach, stopSession } from './compare.ts';
import type { RunConfig } from '../../config/run-config.ts';

export interface DpPpMeasurement {
  status: 'queued' | 'running' | 'done' | 'error';
  report: RunReport | null;
  error: string | null;
}

export const useDpPpRuns = create<{ runs: Record<string, DpPpMeasurement> }>(() => ({ runs: {} }));

function record(key: string, m: DpPpMeasurement): void {
  useDpPpRuns.setState((s) => ({ runs: { ...s.runs, [key]: m } }));
}

/** Trains every shape (its configuration as given: its steps, no evaluation), one after the other. */
export async function measureDpPp(shapes: readonly { key: string; config: RunConfig }[]): Promise<void> {
  const before = useDpPpRuns.getState().runs;
  let started = false;
  await measureEach('comparing', shapes.map((s) => ({ key: s.key, config: s.config })), (key, ev) => {
    if (!started) {
      started = true;
      useDpPpRuns.setState({ runs: {} });
    }
    if (ev.status === 'done') record(key, { status: 'done', report: ev.report, error: null });
    else if (ev.status === 'error') record(key, { status: 'error', report: null, error: ev.error });
    else record(key, { status: ev.status, report: null, error: null });
  });
  if (!started) useDpPpRuns.setState({ runs: before });
}

export function stopDpPp(): void {
  stopSession('comparing');
}
