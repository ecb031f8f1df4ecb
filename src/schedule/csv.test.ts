import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import { CsvError, fromCsv, parseCsv, splitCsv, toCsv } from './csv.ts';
import { generateSchedule, SCHEDULES, SCHEDULE_NAMES } from './registry.ts';
import { simulate } from './simulate.ts';
import { crossRankColumnViolations, paramsArb } from './test-support.ts';
import { validateSchedule } from './validate.ts';

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

describe('PyTorch CSV', () => {
  it('writes one row per rank, cells {stage}{op}{mb}, rows ended by \\r\\n (Python csv.writer); dense on request', () => {
    expect(toCsv(generateSchedule('1f1b', 2, 2), { align: false })).toBe('0F0,0F1,0B0,0B1\r\n1F0,1B0,1F1,1B1\r\n');
    expect(toCsv(generateSchedule('zb-h1', 1, 2), { align: false })).toBe('0F0,0I0,0W0,0F1,0I1,0W1\r\n');
  });

  it('writes the time-aligned form by default: every cross-rank input sits in an earlier column than its use', () => {
    expect(toCsv(generateSchedule('1f1b', 2, 2))).toBe('0F0,0F1,,0B0,,0B1\r\n,1F0,1B0,1F1,1B1\r\n');
    let files = 0;
    for (const name of SCHEDULE_NAMES) {
      for (const p of [1, 2, 3, 4, 6, 8]) {
        for (const m of [1, 2, 3, 4, 8, 12, 16]) {
          for (const v of [1, 2, 3]) {
            try {
              SCHEDULES[name].validateParams(p, m, v);
            } catch {
              continue; // a combination this schedule does not take
            }
            const s = generateSchedule(name, p, m, v);
            const text = toCsv(s);
            expect(crossRankColumnViolations(text, s.copies), `${name} p=${p} m=${m} v=${v}`).toEqual([]);
            files++;
          }
        }
      }
    }
    expect(files).toBeGreaterThan(150);
    // The checker can fail: the dense form of zb-h1 at p = 2 puts 1F0 in 0F0's column.
    expect(crossRankColumnViolations(toCsv(generateSchedule('zb-h1', 2, 4), { align: false }))).toContain(
      '1F0 (row 2, column 1) uses 0F0 from row 1, column 1',
    );
  });

  it('round-trips every generated schedule, compact and aligned', () => {
    fc.assert(
      fc.property(paramsArb(8, 16), fc.boolean(), ({ name, p, m, v }, align) => {
        const s = generateSchedule(name, p, m, v);
        const text = toCsv(s, { align });
        // The CSV has no field for model copies (DualPipe's): read back, each stage would miss the other copies' micro-batches.
        if (s.copies !== undefined) return void expect(() => fromCsv(text, name)).toThrow(/needs at least/);
        expect(fromCsv(text, name)).toEqual(s);
      }),
      { numRuns: 150 },
    );
  });

  it('aligns like PyTorch: empty cells so column j is time step j of the unit-time play', () => {
    const s = generateSchedule('1f1b', 2, 2);
    // Every op one step: rank 1 runs 1F0@1 1B0@2 1F1@3 1B1@4, so rank 0's backwards wait until 3 and 5.
    expect(toCsv(s, { align: true })).toBe('0F0,0F1,,0B0,,0B1\r\n,1F0,1B0,1F1,1B1\r\n');
    const cells = splitCsv(toCsv(generateSchedule('zb-v', 3, 5), { align: true }));
    // In an aligned layout no two dependent actions share a column: play each column as one step.
    const col = new Map<string, number>();
    cells.forEach((row) => row.forEach((c, j) => c && col.set(c, j)));
    for (const [a, j] of col) {
      const m = /^(\d+)([FBIW])(\d+)$/.exec(a) as RegExpExecArray;
      const st = Number(m[1]);
      if (m[2] === 'F' && st > 0) expect(col.get(`${st - 1}F${m[3]}`) as number).toBeLessThan(j);
      if (m[2] === 'W') expect(col.get(`${st}I${m[3]}`) as number).toBeLessThan(j);
    }
  });

  it('loads PyTorch’s ScheduleInterleaved1F1B layout (with its empty cells) as our Megatron interleaving', () => {
    // Made with Python's csv.writer the way PipelineScheduleMulti._dump_csv writes, from the order
    // torch's ScheduleInterleaved1F1B computes for pp_group_size=4, 2 stages per rank, 8 micro-batches.
    const text = fixture('torch-interleaved-1f1b-p4-v2-m8.csv');
    expect(text).toContain(',,');
    const s = fromCsv(text, 'interleaved-1f1b');
    expect(validateSchedule(s)).toEqual({ ok: true });
    expect(s).toEqual(generateSchedule('interleaved-1f1b', 4, 8, 2));
  });

  it('loads PyTorch’s ScheduleZBVZeroBubble layout as our zb-v', () => {
    const s = fromCsv(fixture('torch-zb-v-p4-m5.csv'), 'zb-v');
    expect(s.stageToRank).toEqual([0, 1, 2, 3, 3, 2, 1, 0]);
    expect(s).toEqual(generateSchedule('zb-v', 4, 5));
    expect(simulate(s).makespan).toBe(simulate(generateSchedule('zb-v', 4, 5)).makespan);
  });

  it('reads \\n line ends, quoted cells, spaces, a missing final line end, and empty rows', () => {
    const s = fromCsv('"0F0", 0B0\n1F0,1B0');
    expect(s.order.map((l) => l.length)).toEqual([2, 2]);
    expect(s.stageToRank).toEqual([0, 1]);
    expect(validateSchedule(s)).toEqual({ ok: true });
    // A blank row between rows is a rank with no actions, as csv.reader gives [] for it;
    // blank lines at the end are not ranks (a trailing blank line is no extra rank).
    const t = fromCsv('0F0,0B0\r\n\r\n1F0,1B0\r\n');
    expect(t.ranks).toBe(3);
    expect(t.order[1]).toEqual([]);
    expect(fromCsv('0F0,0B0\r\n\r\n\n').ranks).toBe(1);
  });

  it('reports where each action sits in the file', () => {
    const { cells } = parseCsv(',0F0,,0B0\r\n1F0,1B0\r\n');
    expect(cells[0]).toEqual([
      { row: 1, col: 2 },
      { row: 1, col: 4 },
    ]);
    expect(cells[1][1]).toEqual({ row: 2, col: 2 });
  });

  it('rejects malformed input with its row and column', () => {
    const at = (text: string) => {
      try {
        fromCsv(text);
      } catch (e) {
        expect(e).toBeInstanceOf(CsvError);
        const c = e as CsvError;
        return [c.row, c.col, c.message];
      }
      throw new Error('accepted');
    };
    expect(at('0F0,0B0\r\n1F0,1Q0\r\n')).toEqual([2, 2, 'csv row 2 column 2 = "1Q0": is not a compute action {stage}{F|B|I|W}{mb} such as 2F0']);
    expect(at('0F0,1SEND_F0\n')[1]).toBe(2);
    expect(at('0F0,0B0\n1F0,0F1\n').slice(0, 2)).toEqual([2, 2]);
    expect(at('0F0,0B0\n1F0,0F1\n')[2]).toContain('stage 0 is already on row 1');
    expect(at('0F0,"0B0\n').slice(0, 2)).toEqual([1, 2]);
    expect(() => fromCsv('0F0,0B0\n2F0,2B0\n')).toThrow(ConfigError);
    expect(() => fromCsv('0F0,0B0\n2F0,2B0\n')).toThrow('stage 1');
    expect(() => fromCsv('')).toThrow('holds no rows');
  });
});
