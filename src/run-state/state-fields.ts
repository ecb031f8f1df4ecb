/**
 * The run-state file's `__metadata__` (safetensors keeps string → string):
 * everything of a RunState besides its tensors, each field JSON text.
 * Numbers that JSON cannot hold (a diverged loss, the names data set's
 * unmeasured training accuracy) are written as the strings "NaN", "Infinity"
 * and "-Infinity". Reading checks every field and names the first bad one.
 */
import { defaultRunConfig, validateRunConfig, type RunConfig } from '../config/run-config.ts';
import { snapshotRunConfig } from '../config/config-snapshot.ts';
import { lrAt } from '../nn/train-config.ts';
import type { OptimizerName } from '../nn/optimizer.ts';
import type { EvalReport } from '../nn/train.ts';
import { ConfigError, formatValue } from '../util/errors.ts';
import { CheckpointError } from './checkpoint-error.ts';
import { stateConfig, type RunState } from './run-state.ts';

/** The metadata keys besides format, version and checksum, in the order they are written. */
export const STATE_FIELDS = ['producer', 'config', 'stepsDone', 'optimizer', 'lrNext', 'data', 'losses', 'evals'] as const;

const EVAL_KEYS = ['step', 'trainLoss', 'trainAccuracy', 'valLoss', 'valAccuracy'] as const;

/** A number as the file holds it: itself when finite, else "NaN", "Infinity" or "-Infinity". */
function numberOut(x: number): number | string {
  return Number.isFinite(x) ? x : String(x);
}

function numberIn(field: string, v: unknown): number {
  if (typeof v === 'number') return v;
  if (v === 'NaN') return NaN;
  if (v === 'Infinity') return Infinity;
  if (v === '-Infinity') return -Infinity;
  throw corrupt(field, v, 'must be a number (or "NaN", "Infinity", "-Infinity")');
}

function corrupt(field: string, value: unknown, rule: string): CheckpointError {
  return new CheckpointError('corrupt', `corrupted checkpoint: ${field} = ${formatValue(value)}: ${rule}`);
}

function wholeNumber(field: string, v: unknown, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw corrupt(field, v, `must be a whole number from ${min} to ${max}`);
  return v;
}

function record(field: string, v: unknown, keys: readonly string[]): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw corrupt(field, v, `must be an object {${keys.join(', ')}}`);
  const r = v as Record<string, unknown>;
  const extra = Object.keys(r).find((k) => !keys.includes(k));
  if (extra !== undefined) throw corrupt(`${field}.${extra}`, r[extra], `is not a key of ${field} (${keys.join(', ')})`);
  const missing = keys.find((k) => !Object.hasOwn(r, k));
  if (missing !== undefined) throw corrupt(`${field}.${missing}`, 'missing', 'must be given');
  return r;
}

/** The metadata of `state` (besides format, version and checksum). */
export function stateMetadata(state: RunState): Record<(typeof STATE_FIELDS)[number], string> {
  return {
    producer: state.producer,
    config: JSON.stringify(state.config),
    stepsDone: String(state.stepsDone),
    optimizer: JSON.stringify({ name: state.optimizer.name, steps: state.optimizer.steps }),
    lrNext: JSON.stringify(numberOut(state.lrNext)),
    data: JSON.stringify(state.data),
    losses: JSON.stringify(state.losses.map(numberOut)),
    evals: JSON.stringify(state.evals.map((e) => Object.fromEntries(EVAL_KEYS.map((k) => [k, numberOut(e[k])])))),
  };
}

/** The state's fields other than its tensors, read from `meta` and checked (a CheckpointError names the first bad one). */
export type StateFields = Omit<RunState, 'params' | 'optimizer'> & { optimizer: { name: OptimizerName; steps: number } };

function parsed(meta: Record<string, string>, key: string): unknown {
  if (!Object.hasOwn(meta, key)) throw corrupt(`__metadata__.${key}`, 'missing', 'must be given');
  try {
    return JSON.parse(meta[key]);
  } catch {
    throw corrupt(`__metadata__.${key}`, meta[key], 'is not JSON');
  }
}

function readConfig(raw: unknown): RunConfig {
  try {
    const config = snapshotRunConfig(raw);
    // Every key: a model's validation skips the fields of other models (the MLP's, the GPT's heads), but a state keeps them all.
    const missing = Object.keys(defaultRunConfig()).find((k) => !Object.hasOwn(config, k));
    if (missing !== undefined) throw new ConfigError(missing, 'missing', 'must be given (a checkpoint keeps the whole configuration)');
    if (config.fault !== undefined) throw new ConfigError('fault', config.fault, 'a checkpoint does not keep a test fault');
    validateRunConfig(config);
    return stateConfig(config);
  } catch (e) {
    if (e instanceof ConfigError) throw new CheckpointError('corrupt', `corrupted checkpoint: its configuration is not valid: config.${e.message}`);
    throw e;
  }
}

export function readStateFields(meta: Record<string, string>): StateFields {
  if (!Object.hasOwn(meta, 'producer')) throw corrupt('__metadata__.producer', 'missing', 'must be given');
  const producer = meta.producer;
  const config = readConfig(parsed(meta, 'config'));
  const stepsDone = wholeNumber('stepsDone', parsed(meta, 'stepsDone'), 0, config.steps);
  const o = record('optimizer', parsed(meta, 'optimizer'), ['name', 'steps']);
  if (o.name !== config.optimizer) throw corrupt('optimizer.name', o.name, `must be the configuration's optimizer, ${formatValue(config.optimizer)}`);
  const optimizer = { name: o.name as OptimizerName, steps: wholeNumber('optimizer.steps', o.steps, 0, Number.MAX_SAFE_INTEGER) };
  const lrNext = numberIn('lrNext', parsed(meta, 'lrNext'));
  const lrWant = lrAt(config, stepsDone);
  if (!(Math.abs(lrNext - lrWant) <= 1e-9 * lrWant)) throw corrupt('lrNext', lrNext, `must be the configuration's learning rate at step ${stepsDone}, ${lrWant}`);
  const d = record('data', parsed(meta, 'data'), ['seed', 'nextBatch']);
  if (d.seed !== config.seed) throw corrupt('data.seed', d.seed, `must be the configuration's seed, ${config.seed}`);
  if (d.nextBatch !== stepsDone) throw corrupt('data.nextBatch', d.nextBatch, `must be the steps done, ${stepsDone}`);
  const rawLosses = parsed(meta, 'losses');
  if (!Array.isArray(rawLosses) || rawLosses.length !== stepsDone) throw corrupt('losses', rawLosses, `must be a list of ${stepsDone} losses, one per step done`);
  const losses = rawLosses.map((x, i) => numberIn(`losses[${i}]`, x));
  const rawEvals = parsed(meta, 'evals');
  if (!Array.isArray(rawEvals) || rawEvals.length > stepsDone + 1) throw corrupt('evals', rawEvals, `must be a list of at most ${stepsDone + 1} evaluations`);
  const evals = rawEvals.map((e, i): EvalReport => {
    const r = record(`evals[${i}]`, e, EVAL_KEYS);
    return {
      step: wholeNumber(`evals[${i}].step`, r.step, 0, stepsDone),
      trainLoss: numberIn(`evals[${i}].trainLoss`, r.trainLoss),
      trainAccuracy: numberIn(`evals[${i}].trainAccuracy`, r.trainAccuracy),
      valLoss: numberIn(`evals[${i}].valLoss`, r.valLoss),
      valAccuracy: numberIn(`evals[${i}].valAccuracy`, r.valAccuracy),
    };
  });
  return { producer, config, stepsDone, optimizer, lrNext, data: { seed: config.seed, nextBatch: stepsDone }, losses, evals };
}
