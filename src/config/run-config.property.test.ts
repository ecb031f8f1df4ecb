/**
 * A property (issue 10): a random configuration, valid or hostile, is either
 * refused before any rank starts, with a `field = value: rule` message of a
 * readable length, or runs to completion on the CPU reference in-process.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { runPipeline } from '../runtime/coordinator.ts';
import { InProcessRankHost } from '../runtime/executor/in-process-host.ts';
import { defaultRunConfig, RUN_SCHEDULES, type RunConfig } from './run-config.ts';

/** Values that break one rule or another: wrong types, non-finite, huge, negative, fractional, empty. */
const hostile = fc.constantFrom<unknown>(null, NaN, Infinity, -Infinity, -1, 0, 1.5, 1e9, 2 ** 53, Number.MIN_VALUE, '3', '', 'x'.repeat(500), true, [], {}, [4]);

/** Small valid-looking values per field, so that what passes runs in milliseconds on the CPU. */
const small = {
  ranks: fc.integer({ min: 1, max: 4 }),
  virtual: fc.integer({ min: 1, max: 2 }),
  layers: fc.integer({ min: 1, max: 7 }),
  hidden: fc.integer({ min: 1, max: 12 }),
  microbatches: fc.constantFrom(1, 2, 4, 8),
  batchSize: fc.constantFrom(8, 16, 32),
  steps: fc.integer({ min: 1, max: 3 }),
  lr: fc.double({ min: 1e-7, max: 0.5, noNaN: true }),
  schedule: fc.constantFrom(...RUN_SCHEDULES),
  seed: fc.integer({ min: 0, max: 1000 }),
  evalEvery: fc.integer({ min: 0, max: 2 }),
};
type SmallKey = keyof typeof small;

const field = <T>(valid: fc.Arbitrary<T>) => fc.oneof({ arbitrary: valid, weight: 19 }, { arbitrary: hostile, weight: 1 });

const configArb = fc
  .record({
    ...(Object.fromEntries((Object.keys(small) as SmallKey[]).map((k) => [k, field(small[k] as fc.Arbitrary<unknown>)])) as Record<SmallKey, fc.Arbitrary<unknown>>),
    extra: fc.oneof({ arbitrary: fc.constant(null), weight: 9 }, { arbitrary: fc.constantFrom('foo', 'stages', 'hiden', '__proto__'), weight: 1 }),
    missing: fc.oneof({ arbitrary: fc.constant(null), weight: 9 }, { arbitrary: fc.constantFrom('lr', 'ranks', 'dataset'), weight: 1 }),
  })
  .map(({ extra, missing, ...over }) => {
    const cfg: Record<string, unknown> = { ...defaultRunConfig(), ...over };
    if (extra !== null) Object.defineProperty(cfg, extra, { value: 1, enumerable: true, writable: true, configurable: true });
    if (missing !== null) delete cfg[missing];
    return cfg;
  });

describe('random configurations are refused before any rank starts, or complete', () => {
  it('on the CPU reference in-process', async () => {
    let refused = 0;
    let completed = 0;
    await fc.assert(
      fc.asyncProperty(configArb, async (cfg) => {
        const started: number[] = [];
        const hostFactory = (r: number) => {
          started.push(r);
          return new InProcessRankHost(r, new CpuBackend());
        };
        let report;
        try {
          report = await runPipeline(cfg as unknown as RunConfig, { hostFactory, recvTimeoutMs: 5000, stepTimeoutMs: 10_000 });
        } catch (e) {
          const message = (e as Error).message;
          // Refused: before any rank, naming field, value and rule, at a readable length.
          expect(started, message).toEqual([]);
          expect(message).toMatch(/^[\w.[\]()]+ = .+: .+/s);
          expect(message.length).toBeLessThan(400);
          refused++;
          return;
        }
        const c = cfg as unknown as RunConfig;
        expect(report.losses).toHaveLength(c.steps);
        expect(report.losses.every(Number.isFinite)).toBe(true);
        expect(started).toHaveLength(c.ranks);
        completed++;
      }),
      { numRuns: 120, seed: 10 },
    );
    // Both sides of the property were exercised.
    expect(refused).toBeGreaterThan(10);
    expect(completed).toBeGreaterThan(10);
  }, 120_000);
});
