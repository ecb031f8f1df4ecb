/**
 * Lays the results of bench runs made in separate calls (a lent GPU machine's $OUT is emptied before each call,
 * so each call writes its own results.json) over a results folder, as `npm run bench -- --suite a,b` does when it
 * writes into a folder that has one, and writes that folder's RESULTS.md again.
 *
 *   node --import tsx scripts/bench-merge.ts <folder> <results.json> [<results.json> ...]
 *
 * Each file's suites replace the folder's, in the order given; a file measured on another kind of machine,
 * browser, adapter or grid (merge-report.ts `mergeRefusal`) is refused, naming what differs, and nothing is written.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderMarkdown } from '../src/bench/driver/markdown.ts';
import { mergeRefusal, mergeReports, type MergeableReport } from '../src/bench/driver/merge-report.ts';

const [folder, ...files] = process.argv.slice(2);
if (!folder || files.length === 0) {
  console.error('usage: node --import tsx scripts/bench-merge.ts <folder> <results.json> [<results.json> ...]');
  process.exit(2);
}
const read = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as MergeableReport;
const target = join(folder, 'results.json');
let report: MergeableReport | null = existsSync(target) ? read(target) : null;
for (const file of files) {
  const next = read(file);
  const refused = report ? mergeRefusal(report, next) : null;
  if (refused) {
    console.error(`bench-merge: ${file} is not laid over ${target}: ${refused}`);
    process.exit(1);
  }
  report = report ? mergeReports(report, next) : next;
  console.log(`bench-merge: ${file}: ${Object.keys(next.results).join(', ')}`);
}
writeFileSync(target, `${JSON.stringify(report, null, 2)}\n`);
writeFileSync(join(folder, 'RESULTS.md'), renderMarkdown(report as Parameters<typeof renderMarkdown>[0]));
console.log(`bench-merge: wrote ${target} and RESULTS.md`);
