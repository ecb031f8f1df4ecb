/** Short names of the schedules for menus and tables. */
import type { RunScheduleName } from '../../config/run-config.ts';

export const SCHEDULE_LABELS: Readonly<Record<RunScheduleName, string>> = {
  gpipe: 'GPipe',
  '1f1b': '1F1B',
  'interleaved-1f1b': 'Interleaved 1F1B',
  'zb-h1': 'ZB-H1 (zero bubble)',
  'interleaved-zb': 'Interleaved zero bubble (I/W split)',
  'zb-v': 'ZB-V (zero bubble, V)',
  'looped-bfs': 'Looped BFS',
  'dualpipe-v': 'DualPipe-V (V, F beside B)',
  hanayo: 'Hanayo (W waves)',
  dualpipe: 'DualPipe (2 model copies, both ends)',
  auto: 'Auto (fits a memory cap)',
  pipedream: 'PipeDream (async)',
  'pipedream-2bw': 'PipeDream-2BW (async, 2 weight versions)',
};

/** The schedule menus' entries: the short name, and what else it is known as (PipeDream-Flush is 1F1B). */
export const SCHEDULE_MENU_LABELS: Readonly<Record<RunScheduleName, string>> = {
  ...SCHEDULE_LABELS,
  '1f1b': '1F1B (PipeDream-Flush)',
};

export function scheduleLabel(name: string): string {
  return (SCHEDULE_LABELS as Record<string, string>)[name] ?? name;
}
