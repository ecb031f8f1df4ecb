/**
 * A Compare preset's runs as its panel reads them (ZeroPanel, FitPanel): each shape's measurement (queued, running,
 * done with a report) with the preset's own figures, those done, whether the workers are free to measure (`why`
 * says why not) and the timelines' drawing mode.
 */
import { cannotMeasureReason, useDpPpRuns } from '../../state/compare/index.ts';
import type { RunReport } from '../../runtime/report/index.ts';
import { usePipeLab } from '../../state/store/index.ts';

export function usePresetRuns<S extends { key: string }, F>(shapes: readonly S[], figures: (r: RunReport) => F) {
  const runs = useDpPpRuns((s) => s.runs);
  const session = usePipeLab((s) => s.session);
  // Re-render when WebGPU's state is known (cannotMeasureReason reads it).
  usePipeLab((s) => s.webgpu);
  const mode = usePipeLab((s) => s.timelineMode);
  const setMode = usePipeLab((s) => s.setTimelineMode);
  const rows = shapes.map((shape) => {
    const m = runs[shape.key];
    const report = m?.status === 'done' ? m.report : null;
    return { shape, m, report, f: report ? figures(report) : null };
  });
  const done = rows.flatMap((r) => (r.f ? [{ key: r.shape.key, f: r.f }] : []));
  const comparing = session === 'comparing';
  const status = (r: (typeof rows)[number]): string => (r.m?.status === 'running' ? 'running…' : r.m?.status === 'queued' ? 'queued' : r.m?.status === 'error' ? 'failed' : '—');
  return { rows, done, allDone: done.length === shapes.length, comparing, why: comparing ? null : cannotMeasureReason(), status, mode, setMode };
}
