/** Buttons that download what is on screen: trace, schedule CSV, report JSON, weights, the run for PyTorch. */
import type { ReactNode } from 'react';
import type { RunReport } from '../../runtime/report/index.ts';
import type { RunConfig } from '../../config/run-config.ts';
import type { Schedule, Timeline } from '../../schedule/index.ts';
import { meshOfRun, workerCount } from '../../schedule/mesh.ts';
import { csvFile, download, reportFile, safetensorsFile, slug, torchBundleFile, traceFile, type ExportFile } from './export-files.ts';

export interface ExportPanelProps {
  title: string;
  timeline: Timeline | null;
  schedule: Schedule | null;
  report?: RunReport | null;
  config?: RunConfig | null;
}

function Button({ label, hint, make, disabled }: { label: string; hint: ReactNode; make: () => ExportFile; disabled: boolean }) {
  return (
    <li>
      <button
        type="button"
        disabled={disabled}
        onClick={() => {
          try {
            download(make());
          } catch (e) {
            window.alert(`Export failed: ${e instanceof Error ? e.message : String(e)}`);
          }
        }}
      >
        {label}
      </button>
      <span className="muted small">{hint}</span>
    </li>
  );
}

export function ExportPanel({ title, timeline, schedule, report = null, config = null }: ExportPanelProps) {
  const base = `pipelab-${slug(title)}`;
  const weights = report?.weights;
  return (
    <section className="panel" aria-labelledby="export-title">
      <h2 id="export-title">Export</h2>
      <ul className="exports">
        <Button label="Chrome trace (JSON)" hint={timeline ? `${timeline.source} timeline; open in ui.perfetto.dev` : 'no timeline yet'} disabled={!timeline} make={() => traceFile(timeline as Timeline, title, base, timeline?.source === 'measured' && report?.timeline === timeline ? report.memory : undefined)} />
        <Button label="Schedule (PyTorch CSV)" hint="for torch.distributed.pipelining" disabled={!schedule} make={() => csvFile(schedule as Schedule, base)} />
        {config !== null && (
          <>
            <Button label="Run report (JSON)" hint={report ? 'numbers, losses, timelines' : 'after a run'} disabled={!report} make={() => reportFile(report as RunReport, base)} />
            <Button
              label="Weights (safetensors)"
              hint={weights ? 'loads in PyTorch and numpy' : 'after a run'}
              disabled={!weights || !report}
              make={() => safetensorsFile((report as RunReport).config, weights as Record<string, Float32Array | Float64Array>, base)}
            />
            <Button
              label="Export for PyTorch (zip)"
              hint={
                <>
                  train.py for torchrun <code className="flag">--nproc_per_node={workerCount(meshOfRun(config))}</code>: same model, schedule, weights and batches
                </>
              }
              disabled={false}
              make={() => torchBundleFile(config, base)}
            />
          </>
        )}
      </ul>
    </section>
  );
}
