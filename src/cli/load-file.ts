/** Reading a schedule from a file: PyTorch's CSV, or our JSON. */
import { ConfigError } from '../util/errors.ts';
import { CSV_LIMITS, parseCsv, type Schedule } from '../schedule/index.ts';
import type { CliIo } from './io.ts';
import { UsageError } from './args.ts';

export interface LoadedFile {
  schedule: Schedule;
  /** 1-based CSV row and column of order[r][i], when read from CSV. */
  cells: { row: number; col: number }[][] | null;
}

export function readScheduleFile(io: CliIo, path: string): LoadedFile {
  let text: string;
  try {
    text = io.readFile(path);
  } catch (e) {
    throw new UsageError('FILE', path, `cannot be read (${(e as Error).message})`);
  }
  if (text.length > CSV_LIMITS.chars) {
    throw new UsageError('FILE', path, `holds ${text.length} characters; a schedule file may hold at most ${CSV_LIMITS.chars}`);
  }
  const name = path.replace(/^.*[\\/]/, '').replace(/\.[^.]*$/, '') || 'file';
  if (/\.json$/i.test(path)) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      throw new ConfigError(path, 'JSON', `is not valid JSON (${(e as Error).message})`);
    }
    const schedule = value as Schedule;
    if (typeof value === 'object' && value !== null && typeof (value as { name?: unknown }).name !== 'string') {
      schedule.name = name;
    }
    return { schedule, cells: null };
  }
  const parsed = parseCsv(text, name);
  return { schedule: parsed.schedule, cells: parsed.cells };
}
