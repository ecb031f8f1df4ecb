/**
 * torch.distributed.pipelining's compute-only CSV, read and written.
 *
 * The format, as PyTorch's `_dump_csv` writes it and `_load_csv` reads it
 * (PipelineScheduleMulti; `_PipelineScheduleRuntime._load_csv` with
 * format="compute_only" reads the same and then adds the communication):
 *  - Python's csv module, default "excel" dialect: comma separated, `"`
 *    quoting only where needed, rows ended by "\r\n";
 *  - no header; row r (0-based) is rank r's action list, in order;
 *  - each cell is `str(_Action)`, i.e. `{stage}{op}{mb}` such as `2F0` or `1I3`;
 *  - an empty cell is a `None` action, an idle time step: PyTorch's own
 *    generators pad with them so that column j is time step j on every rank,
 *    and `_load_csv` (via `_Action.from_str("")`) turns them back into None;
 *  - the stage-to-rank map is not written: `_load_csv` infers it from which
 *    row holds each stage, and the stage and micro-batch counts are the
 *    schedule's (here: the largest index seen, plus one);
 *  - it has no field for model copies (types.ts `copies`, DualPipe's): such a
 *    schedule is written as its per-rank orders, but reading it back is
 *    refused (read as one copy, every stage misses the other copies'
 *    micro-batches); our JSON carries the copies.
 * We write the time-aligned form by default, padded with empty cells like
 * PyTorch does, each column being one step of the unit-time simulation (every
 * op one step, free links): lock-step executors such as
 * PipelineScheduleMulti._step_microbatches run column t of every rank
 * together, so every input from another rank must sit in an earlier column
 * than its use (a dense file would have them compute on receive buffers not
 * yet filled). `align: false` writes the dense form (no empty cells).
 * On reading, empty cells are skipped, whitespace around a cell is ignored
 * (PyTorch strips it), \n and \r\n line ends are both accepted, and any cell
 * that is not a compute action (e.g. PyTorch's `1SEND_F0`) is rejected with its
 * row and column.
 */
import { ConfigError } from '../util/errors.ts';
import { formatAction, parseAction } from './action-text.ts';
import { play } from './engine.ts';
import type { Action, Schedule } from './types.ts';
import { assertValidSchedule } from './validate.ts';

/**
 * Bounds on what a CSV may hold, so a hostile file gets a short message fast:
 * a cell is one action (`{stage}{op}{mb}`), at most `cellChars` characters;
 * at most `rows` ranks; at most `chars` characters in all.
 */
export const CSV_LIMITS = { chars: 16 * 1024 * 1024, cellChars: 32, rows: 4096 } as const;

/** A rejected CSV cell; row and column are 1-based, as a spreadsheet shows them. */
export class CsvError extends ConfigError {
  constructor(
    readonly row: number,
    readonly col: number,
    value: unknown,
    rule: string,
  ) {
    super(`csv row ${row} column ${col}`, value, rule);
    this.name = 'CsvError';
  }
}

export interface CsvWriteOptions {
  /** Pad with empty cells so that column j is time step j of the unit-time play (PyTorch's layout). Default true; false writes the dense form. */
  align?: boolean;
}

const EOL = '\r\n';

export function toCsv(s: Schedule, opts: CsvWriteOptions = {}): string {
  if (opts.align === false) return s.order.map((list) => list.map(formatAction).join(',') + EOL).join('');
  assertValidSchedule(s);
  const { start } = play(s, { duration: () => 1, linkDelay: () => 0 });
  return s.order
    .map((list, r) => {
      const cells: string[] = [];
      list.forEach((a, i) => {
        const step = start[r][i];
        while (cells.length < step) cells.push('');
        cells.push(formatAction(a));
      });
      return cells.join(',') + EOL;
    })
    .join('');
}

/**
 * Splits CSV text into rows of cells (Python csv.reader, excel dialect). The
 * text after the last line end is a row only if non-empty; blank lines at the
 * end are not rows (a trailing blank line is no extra rank). Throws CsvError
 * past CSV_LIMITS, without reading the rest.
 */
export function splitCsv(text: string): string[][] {
  if (text.length > CSV_LIMITS.chars) {
    throw new ConfigError('csv', `${text.length} characters`, `is too long; a schedule CSV may hold at most ${CSV_LIMITS.chars} characters`);
  }
  const rows: string[][] = [];
  let blankRows = 0;
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  let i = 0;
  let rowNo = 1;
  let cellStart = true;
  const endRow = () => {
    row.push(cell);
    if (row.length === 1 && row[0] === '') {
      blankRows++;
    } else {
      if (rows.length + blankRows + 1 > CSV_LIMITS.rows) {
        throw new CsvError(rowNo, 1, row[0], `is past row ${CSV_LIMITS.rows}; a schedule CSV holds one row per rank and at most ${CSV_LIMITS.rows} rows`);
      }
      for (; blankRows > 0; blankRows--) rows.push([]);
      rows.push(row);
    }
    row = [];
    cell = '';
    cellStart = true;
    rowNo++;
  };
  while (i < text.length) {
    const ch = text[i];
    if (cell.length > CSV_LIMITS.cellChars) {
      throw new CsvError(rowNo, row.length + 1, cell, `is longer than ${CSV_LIMITS.cellChars} characters; a cell holds one action such as 2F0`);
    }
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          cell += '"';
          i += 2;
          continue;
        }
        quoted = false;
      } else {
        cell += ch;
      }
      i++;
      continue;
    }
    if (ch === '"' && cellStart) {
      quoted = true;
      cellStart = false;
      i++;
    } else if (ch === ',') {
      row.push(cell);
      cell = '';
      cellStart = true;
      i++;
    } else if (ch === '\r' || ch === '\n') {
      endRow();
      i += ch === '\r' && text[i + 1] === '\n' ? 2 : 1;
    } else {
      cell += ch;
      cellStart = false;
      i++;
    }
  }
  if (cell.length > CSV_LIMITS.cellChars) {
    throw new CsvError(rowNo, row.length + 1, cell, `is longer than ${CSV_LIMITS.cellChars} characters; a cell holds one action such as 2F0`);
  }
  if (quoted) throw new CsvError(rowNo, row.length + 1, cell, 'has an opening quote that is never closed');
  if (cell !== '' || row.length > 0) endRow();
  return rows;
}

export interface ParsedCsv {
  schedule: Schedule;
  /** cells[r][i]: 1-based row and column of order[r][i] in the file. */
  cells: { row: number; col: number }[][];
}

/** Parses PyTorch's compute-only CSV; throws CsvError naming the row and column of a malformed cell. */
export function parseCsv(text: string, name = 'csv'): ParsedCsv {
  const rows = splitCsv(text);
  if (rows.length === 0) throw new ConfigError('csv', text, 'holds no rows; expected one row of actions per rank');
  const order: Action[][] = [];
  const cells: { row: number; col: number }[][] = [];
  const stageHome = new Map<number, { rank: number; col: number }>();
  let stages = 0;
  let microbatches = 0;
  rows.forEach((row, r) => {
    const list: Action[] = [];
    const where: { row: number; col: number }[] = [];
    row.forEach((text, c) => {
      if (text.trim() === '') return;
      const a = parseAction(text);
      if (!a) throw new CsvError(r + 1, c + 1, text, 'is not a compute action {stage}{F|B|I|W}{mb} such as 2F0');
      const home = stageHome.get(a.stage);
      if (home && home.rank !== r) {
        throw new CsvError(r + 1, c + 1, text, `stage ${a.stage} is already on row ${home.rank + 1} (column ${home.col}); a stage lives on one rank`);
      }
      if (!home) stageHome.set(a.stage, { rank: r, col: c + 1 });
      stages = Math.max(stages, a.stage + 1);
      microbatches = Math.max(microbatches, a.mb + 1);
      list.push(a);
      where.push({ row: r + 1, col: c + 1 });
    });
    order.push(list);
    cells.push(where);
  });
  if (stages === 0) throw new ConfigError('csv', text, 'holds no actions');
  const stageToRank: number[] = [];
  for (let st = 0; st < stages; st++) {
    const home = stageHome.get(st);
    if (!home) throw new ConfigError('csv', `stage ${st}`, `appears in no row, but stage ${stages - 1} does; stages must be numbered 0..${stages - 1}`);
    stageToRank.push(home.rank);
  }
  microbatches = checkMicrobatches(order, cells, stages);
  return { schedule: { name, stages, ranks: rows.length, microbatches, stageToRank, order }, cells };
}

/**
 * The micro-batch count is the forwards' (the largest forward micro-batch, plus
 * one): a backward past it names its own cell rather than a missing forward,
 * and a count the file cannot hold (each stage needs an F and a B for each
 * micro-batch) names the cell that asks for it, before anything is allocated.
 */
function checkMicrobatches(order: Action[][], cells: { row: number; col: number }[][], stages: number): number {
  let actions = 0;
  let fMax = -1;
  let fAt: { r: number; i: number } | null = null;
  order.forEach((list, r) => {
    actions += list.length;
    list.forEach((a, i) => {
      if (a.op === 'F' && a.mb > fMax) {
        fMax = a.mb;
        fAt = { r, i };
      }
    });
  });
  const m = fMax + 1;
  if (fAt !== null && 2 * stages * m > actions) {
    const { r, i } = fAt as { r: number; i: number };
    const at = cells[r][i];
    throw new CsvError(at.row, at.col, formatAction(order[r][i]), `micro-batch ${fMax} needs at least 2 · ${stages} stages · ${m} micro-batches = ${2 * stages * m} actions, but the file holds ${actions}`);
  }
  for (let r = 0; r < order.length; r++) {
    for (let i = 0; i < order[r].length; i++) {
      const a = order[r][i];
      if (a.mb >= m) {
        const at = cells[r][i];
        const cover = m === 0 ? 'no forward is in the file' : `the forwards cover micro-batches 0 to ${m - 1}`;
        throw new CsvError(at.row, at.col, formatAction(a), `rank ${r}: micro-batch ${a.mb} has no forward on any stage (${cover})`);
      }
    }
  }
  return m;
}

export function fromCsv(text: string, name = 'csv'): Schedule {
  return parseCsv(text, name).schedule;
}
