/**
 * Hostile configurations handed to the coordinator (issue 10's reproductions):
 * each is refused before any rank starts, with a message naming the field, the
 * value (cut to a readable length) and the rule.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { runPipeline } from './coordinator.ts';
import { snapshotRunConfig } from '../config/config-snapshot.ts';
import { InProcessRankHost } from './executor/in-process-host.ts';
import { defaultRunConfig, validateRunConfig, type RunConfig } from '../config/run-config.ts';
import { RUN_LIMITS } from '../config/run-limits.ts';
import { editDistance, nearestName } from '../util/nearest.ts';

async function refusedBeforeStart(input: unknown): Promise<string> {
  const started: number[] = [];
  const hostFactory = (r: number) => {
    started.push(r);
    return new InProcessRankHost(r, new CpuBackend());
  };
  let message = '';
  try {
    await runPipeline(input as RunConfig, { hostFactory });
  } catch (e) {
    message = (e as Error).message;
  }
  expect(started).toEqual([]);
  expect(message).not.toBe('');
  return message;
}

const base = (): Record<string, unknown> => ({ ...defaultRunConfig() });

describe('values that are not plain JSON are refused naming the field', () => {
  it('fault: null', async () => {
    expect(await refusedBeforeStart({ ...base(), fault: null })).toBe('fault = null: must be an object {kind, action, step?, replica?} or absent');
  });
  it('a function', async () => {
    expect(await refusedBeforeStart({ ...base(), lr: () => 0.01 })).toMatch(/^lr = a function: must be plain JSON .*not a function$/);
  });
  it('a Symbol value and a Symbol key', async () => {
    expect(await refusedBeforeStart({ ...base(), schedule: Symbol('1f1b') })).toMatch(/^schedule = Symbol\(1f1b\): must be plain JSON/);
    expect(await refusedBeforeStart({ ...base(), [Symbol('x')]: 1 })).toMatch(/^\[Symbol\(x\)\] = "a Symbol key": .*keys must be strings$/);
  });
  it('a getter that throws', async () => {
    const cfg = base();
    Object.defineProperty(cfg, 'ranks', { enumerable: true, get: () => { throw new Error('boom'); } });
    expect(await refusedBeforeStart(cfg)).toBe('ranks = "a getter": could not be read (boom)');
  });
  it('a getter that changes between reads is read once', () => {
    let reads = 0;
    const cfg = base();
    Object.defineProperty(cfg, 'ranks', { enumerable: true, get: () => (reads++ === 0 ? 2 : 1_000_000_000) });
    const snap = snapshotRunConfig(cfg);
    expect(reads).toBe(1);
    validateRunConfig(snap);
    expect(snap.ranks).toBe(2);
    expect(snap.ranks).toBe(2);
  });
  it('a non-object configuration', async () => {
    expect(await refusedBeforeStart(null)).toBe('config = null: must be an object of configuration keys');
    expect(await refusedBeforeStart([1])).toBe('config = "an array": must be an object of configuration keys');
  });
});

describe('unknown keys are refused naming the key and the nearest known one', () => {
  it.each([
    ['foo', 1, /^foo = 1: is not a known configuration key; the nearest is "/],
    ['stages', 4, /^stages = 4: is not a known configuration key; the nearest is "steps"$/],
    ['hiden', 64, /^hiden = 64: is not a known configuration key; the nearest is "hidden"$/],
  ])('%s', async (key, value, message) => {
    expect(await refusedBeforeStart({ ...base(), [key]: value })).toMatch(message);
  });
  it('__proto__ as an own key (as JSON.parse makes it)', async () => {
    const cfg = JSON.parse(`{"__proto__": {"ranks": 2}, ${JSON.stringify(base()).slice(1)}`);
    expect(await refusedBeforeStart(cfg)).toMatch(/^__proto__ = \{"ranks":2\}: is not a known configuration key; the nearest is "/);
  });
  it('an unknown fault key', async () => {
    expect(await refusedBeforeStart({ ...base(), fault: { kind: 'throw', action: '1F0', stpe: 1 } })).toMatch(/^fault\.stpe = 1: is not a known fault key; the nearest is "step"$/);
  });
  it('edit distance against a hand count', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(nearestName('microbatch', ['batchSize', 'microbatches'])).toBe('microbatches');
  });
});

describe('one number rule for the learning rate', () => {
  it('lr = Number.MIN_VALUE is refused up front', async () => {
    expect(await refusedBeforeStart({ ...base(), lr: Number.MIN_VALUE })).toMatch(/^lr = 5e-324: must be at least 0\.000001/);
  });
  it('the smallest accepted rate trains through a cosine schedule to the end', async () => {
    const cfg = { ...defaultRunConfig(), hidden: 6, batchSize: 16, microbatches: 4, steps: 3, evalEvery: 0, lr: 1e-6, lrSchedule: 'cosine' as const };
    const report = await runPipeline(cfg, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()) });
    expect(report.losses).toHaveLength(3);
  });
  it('Infinity is named as such', async () => {
    expect(await refusedBeforeStart({ ...base(), lr: Infinity })).toBe('lr = Infinity: must be a finite number');
  });
});

describe('limits on the work a run may ask for', () => {
  it('PipeDream with steps × m too large (it used to freeze the page)', async () => {
    expect(await refusedBeforeStart({ ...base(), schedule: 'pipedream', steps: 1e6, microbatches: 64 })).toMatch(
      /^steps = 1000000: PipeDream runs steps × microbatches as one stream: ranks · steps · microbatches · 2 = 512000000 actions; a run may ask for at most 65536$/,
    );
  });
  it('batchSize 65536 with 65536 micro-batches (it used to time out)', async () => {
    expect(await refusedBeforeStart({ ...base(), batchSize: 65536, microbatches: 65536 })).toBe(
      `microbatches = 65536: must be at most ${RUN_LIMITS.microbatches} for a run (each micro-batch is a message between workers)`,
    );
  });
  it('actions per step', async () => {
    const m = await refusedBeforeStart({ ...base(), schedule: 'zb-h1', ranks: 16, layers: 16, batchSize: 1024, microbatches: 1024 });
    // 16 stages · 1024 micro-batches · 3 ops (F, I, W).
    expect(m).toBe('microbatches = 1024: ranks · virtual · microbatches · ops = 49152 actions per step; a step may have at most 32768');
  });
  it('hidden 4096, layers 64, ranks 16 (it used to lose the device after 80 s)', async () => {
    // Per block: 4096² + 4096 weights; 4 blocks per rank; AdamW keeps 4 copies: ≈ 1 GiB on the first ranks.
    const m = await refusedBeforeStart({ ...base(), hidden: 4096, layers: 64, ranks: 16 });
    expect(m).toMatch(/^hidden = 4096: a rank would hold about (\d+\.\d+) GiB/);
    const gib = Number(/about (\d+\.\d+) GiB/.exec(m)![1]);
    const perBlock = (4096 * 4096 + 4096) * 4 * 4;
    expect(gib).toBeGreaterThanOrEqual((4 * perBlock) / 2 ** 30 - 0.1);
  });
  it('a buffer over 128 MiB names the stage and the buffer', async () => {
    // One micro-batch of 65536 rows × 4096 columns × 4 bytes = 1 GiB.
    const m = await refusedBeforeStart({ ...base(), hidden: 4096, layers: 3, batchSize: 65536, microbatches: 1 });
    expect(m).toMatch(/^batchSize = 65536: stage 0's buffer .* activations of one micro-batch \(65536 rows\) would take 1\.00 GiB; a GPU buffer may take at most 128\.0 MiB/);
  });
  it('memory that is mostly activations names batchSize', async () => {
    // GPipe: every micro-batch's activations held at once (1F1B would hold ranks of them, and pass).
    const m = await refusedBeforeStart({ ...base(), schedule: 'gpipe', hidden: 4096, layers: 3, batchSize: 16384, microbatches: 128 });
    expect(m).toMatch(/^batchSize = 16384: all ranks together would hold about [\d.]+ GiB \(weights, gradients and optimizer state [\d.]+ MiB, activations [\d.]+ GiB\); a run may hold at most 2\.00 GiB/);
    // The weights: two 4096² hidden Linears plus the 2→4096 one and the 4096→3 head (3 spiral classes), each kept 4 times (AdamW), float32.
    const weights = 4 * 4 * (2 * (4096 * 4096 + 4096) + (2 * 4096 + 4096) + (4096 * 3 + 3));
    expect(m).toContain(`optimizer state ${(weights / 2 ** 20).toFixed(1)} MiB`);
  });
  it('the default configuration passes', () => {
    expect(() => validateRunConfig(defaultRunConfig())).not.toThrow();
  });
});

describe('echoed values are cut to a readable length', () => {
  it('a 10-million-character schedule', async () => {
    const m = await refusedBeforeStart({ ...base(), schedule: 'x'.repeat(10_000_000) });
    expect(m.length).toBeLessThan(300);
    expect(m).toMatch(/^schedule = "x{60}…" \(10000000 characters\): must be one of /);
  });
});
