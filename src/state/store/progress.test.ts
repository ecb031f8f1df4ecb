import { describe, expect, it } from 'vitest';
import { ProgressMeter } from './progress.ts';
import { StepGate } from './step-gate.ts';

describe('progress meter', () => {
  it('gives steps per second and time left from the step times', () => {
    const m = new ProgressMeter();
    expect(m.estimate(0, 10).stepsPerSecond).toBeNull();
    for (let i = 0; i < 5; i++) m.mark(1000 + i * 250);
    const e = m.estimate(5, 10);
    expect(e.stepsPerSecond).toBeCloseTo(4, 9);
    expect(e.etaMs).toBeCloseTo(1250, 6);
    m.reset();
    expect(m.estimate(5, 10).etaMs).toBeNull();
  });

  it('times a stream by its steps told done, not by its losses all landing at its end', () => {
    const m = new ProgressMeter();
    // Steps 1–4 told done 500 ms apart while the stream runs; then the four losses land at once.
    for (let k = 1; k <= 4; k++) m.mark(500 * k, k);
    for (let k = 1; k <= 4; k++) m.mark(2001, k);
    expect(m.estimate(4, 4).stepsPerSecond).toBeCloseTo(2, 9);
    // A mark that skips steps counts them all.
    m.mark(3000, 6);
    expect(m.estimate(6, 10).stepsPerSecond).toBeCloseTo(5 / 2.5, 9);
  });
});

describe('step gate', () => {
  it('passes when running, holds when paused, lets one step through per credit', async () => {
    const g = new StepGate();
    await g.wait();
    g.pause();
    let passed = 0;
    const p = g.wait().then(() => passed++);
    await Promise.resolve();
    expect(passed).toBe(0);
    g.stepOnce();
    await p;
    expect(passed).toBe(1);
    expect(g.isPaused).toBe(true);
    const q = g.wait().then(() => passed++);
    g.resume();
    await q;
    expect(passed).toBe(2);
  });

  it('an abort releases a paused wait', async () => {
    const g = new StepGate(true);
    const ac = new AbortController();
    const p = g.wait(ac.signal);
    ac.abort();
    await p;
  });
});
