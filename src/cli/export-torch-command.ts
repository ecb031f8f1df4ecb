/**
 * `pipelab export-torch [run configuration flags] --out DIR`: writes the run as
 * a PyTorch program and the files it reads (src/export/torch-bundle.ts). The
 * flags are the run configuration's fields, named as in the page's URL
 * (`--schedule zb-h1 --ranks 4 --microbatches 8 --steps 20 --dataset names`);
 * absent ones take the page's defaults. A bad value is reported as the URL
 * reports it: field, value, rule.
 */
import { join } from 'node:path';
import { buildTorchBundle } from '../export/torch-bundle.ts';
import { readTorchProgram } from '../export/torch-program-disk.ts';
import { torchrunLine } from '../export/torchrun-command.ts';
import { configFromQuery, defaultRunConfig, URL_FIELDS } from '../config/run-config.ts';
import { fieldHelp } from '../config/field-docs.ts';
import { meshOfRun, workerCount } from '../schedule/mesh.ts';
import { boolFlag, helpFor, parseArgs, stringFlag, UsageError, type FlagSpec } from './args.ts';
import { EXIT_OK, type CliIo } from './io.ts';
import { EXAMPLE_TEXTS, exampleByHash, readTextArg } from './text-file.ts';
import { registerCorpus } from '../data/text-registry.ts';

const DEFAULTS = defaultRunConfig();
/** What the command line adds to a field's one description (src/config/field-docs.ts). */
const CLI_NOTE: Partial<Record<string, string>> = {
  dataset: 'also moby-dick: the book the page ships, as --text moby-dick',
  textHash: 'with --text, it must be that file\'s; alone, a shipped example\'s hash needs no file',
  ranks: 'torchrun starts dp × ranks × ep × tp processes: process g = ((replica · ranks + rank) · ep + ep rank) · tp + tp rank',
  ep: "train.py runs it as the page does: each ep process on its slice of every micro-batch's sequences, the router's probabilities all-gathered, the experts' rows exchanged by all_to_all_single (tp = 1, ZeRO 0, one model copy)",
  tp: "train.py splits each stage's GPT blocks (by heads) or hidden linears over tp processes, with Megatron's all-reduces (and the MLPs' all-gather) on their torch.distributed group",
  steps: 'the bundle holds the batch of every step',
  zero: "train.py shards as the page does; torch 1.13's gloo has no reduce_scatter, so ZeRO-2/3 all-reduce the gradients and each replica keeps its chunk: the same sums",
};

const FLAGS: FlagSpec[] = [
  ...URL_FIELDS.map((f): FlagSpec => ({ name: f, value: f.toUpperCase(), help: `${fieldHelp(f) ?? ''}${CLI_NOTE[f] ? ` (${CLI_NOTE[f]})` : ''}${DEFAULTS[f] === undefined ? '' : ` Default ${String(DEFAULTS[f])}.`}` })),
  { name: 'no-overlap', boolean: true, help: 'the same as --overlap false' },
  { name: 'text', value: 'FILE', help: 'a UTF-8 text file to train on, as the page\'s "Your text", or moby-dick for the book the page ships (a file of that name wins; implies --dataset text; the bundle carries it)' },
  { name: 'out', value: 'DIR', help: 'folder to write train.py, config.json, schedule.csv, *.safetensors and README.md into' },
  { name: 'help', boolean: true, help: 'show this help' },
];

export const EXPORT_TORCH_HELP = helpFor(
  'pipelab export-torch [--schedule 1f1b --ranks 4 --microbatches 8 --steps 20 --dp 2 --tp 2 --zero 0|1|2|3 --reshard step ...] --out DIR',
  'Write a run as a PyTorch program (train.py and its modules) with its model, stages, schedule, initial weights\n' +
    'and batches; `torchrun --redirects 1 --tee 1 --nproc_per_node=DP×TP×RANKS train.py` in DIR replays it with the same\n' +
    'losses (the two flags are for PyTorch 1.13 on Python 3.11, whose torchrun fails without them; newer torch takes them too)\n' +
    '(`train.py --profile` measures the cluster for `pipelab plan` instead). Configuration flags are\n' +
    "the page's URL fields; absent ones take the page's defaults.",
  FLAGS,
);

export function exportTorchCommand(argv: readonly string[], io: CliIo): number {
  const a = parseArgs(argv, FLAGS, 'export-torch');
  if (boolFlag(a, 'help')) {
    io.out(EXPORT_TORCH_HELP);
    return EXIT_OK;
  }
  if (a.positionals.length > 0) throw new UsageError('argument', a.positionals[0], '`pipelab export-torch` takes flags only');
  const out = stringFlag(a, 'out');
  if (out === undefined || out.trim() === '') throw new UsageError('--out', out ?? null, 'is required: the folder to write the bundle into');
  const query = new URLSearchParams();
  for (const f of URL_FIELDS) {
    const v = stringFlag(a, f);
    if (v !== undefined) query.set(f, v);
  }
  if (boolFlag(a, 'no-overlap')) {
    if (query.has('overlap')) throw new UsageError('--no-overlap', `--overlap ${query.get('overlap')}`, 'give one of --overlap and --no-overlap');
    query.set('overlap', 'false');
  }
  // `--dataset moby-dick`: a shipped example text named as a data set, the same as `--text moby-dick`.
  const exampleDataset = query.get('dataset');
  if (exampleDataset !== null && exampleDataset in EXAMPLE_TEXTS) {
    if (stringFlag(a, 'text') !== undefined) throw new UsageError('--dataset', exampleDataset, 'names an example text; give it or --text, not both');
    query.set('dataset', 'text');
  }
  const textPath = stringFlag(a, 'text') ?? (exampleDataset !== null && exampleDataset in EXAMPLE_TEXTS ? exampleDataset : undefined);
  if (textPath !== undefined) {
    const corpus = readTextArg(textPath);
    const named = query.get('textHash');
    if (named !== null && named !== corpus.hash) throw new UsageError('--text', textPath, `has content hash ${corpus.hash}, not the ${named} --textHash names`);
    registerCorpus(corpus);
    if (!query.has('dataset')) query.set('dataset', 'text');
    query.set('textHash', corpus.hash);
  } else {
    // A link's text named by hash alone: a shipped example needs no file (the page's preset "A GPT learns a book").
    const example = exampleByHash(query.get('textHash') ?? '');
    if (example) registerCorpus(example);
  }
  const { config, errors } = configFromQuery(query.toString());
  if (errors.length > 0) {
    const e = errors[0];
    throw new UsageError(`--${e.field}`, e.value, e.rule);
  }
  const files = buildTorchBundle(config, readTorchProgram());
  for (const f of files) io.writeFile(join(out, f.path), f.data);
  io.out(
    `wrote ${files.map((f) => f.path).join(', ')} to ${out}\n` +
      `run it: cd ${out} && ${torchrunLine(workerCount(meshOfRun(config)))}   (see README.md there)\n`,
  );
  return EXIT_OK;
}
