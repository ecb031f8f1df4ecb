/**
 * One session at a time: Train, Compare and window.pipelab.run share the
 * workers, so while one holds them the others are refused with a message
 * naming the one that runs.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { cannotMeasureReason, stopMeasuring } from '../compare/compare.ts';
import { cannotRunReason, stopRun } from '../run/run-controller.ts';
import { automationSession, beginSession, endSession, usePipeLab, type SessionControl } from './store.ts';

function ready(): void {
  usePipeLab.setState({ webgpu: { state: 'available', adapter: 'test' }, configProblem: null, session: 'idle', control: null });
}

afterEach(ready);

describe('the session field', () => {
  it('is idle at first, and Run and Measure may start', () => {
    ready();
    expect(usePipeLab.getState().session).toBe('idle');
    expect(cannotRunReason()).toBeNull();
    expect(cannotMeasureReason()).toBeNull();
  });

  it('while Compare measures, Run is refused naming the comparison', () => {
    ready();
    const c: SessionControl = { kind: 'comparing', abort: new AbortController() };
    beginSession(c);
    expect(usePipeLab.getState().session).toBe('comparing');
    expect(cannotRunReason()).toMatch(/^Cannot train now: a comparison measuring schedules \(Compare\) is going/);
    expect(() => automationSession.begin()).toThrow(/cannot start a run started through window\.pipelab\.run: a comparison measuring schedules \(Compare\) is going/);
    stopMeasuring();
    expect(c.abort.signal.aborted).toBe(true);
    endSession(c);
    expect(usePipeLab.getState().session).toBe('idle');
    expect(cannotRunReason()).toBeNull();
  });

  it('while a training run goes, Measure and window.pipelab.run are refused naming it', () => {
    ready();
    const t: SessionControl = { kind: 'training', abort: new AbortController() };
    beginSession(t);
    expect(cannotRunReason()).toBe('A run is in progress.');
    expect(cannotMeasureReason()).toMatch(/^Cannot measure now: a training run \(Train\) is going/);
    expect(() => automationSession.begin()).toThrow(/a training run \(Train\) is going/);
    expect(() => beginSession({ kind: 'comparing', abort: new AbortController() })).toThrow(/cannot start a comparison/);
    stopMeasuring(); // not a comparison: leaves the run alone
    expect(t.abort.signal.aborted).toBe(false);
    endSession(t);
  });

  it('an automation run holds the page too, and ends its own session only', () => {
    ready();
    const end = automationSession.begin();
    expect(usePipeLab.getState().session).toBe('automation');
    expect(cannotRunReason()).toMatch(/window\.pipelab\.run is going/);
    expect(cannotMeasureReason()).toMatch(/window\.pipelab\.run is going/);
    stopRun(); // no training run: nothing to stop
    end();
    expect(usePipeLab.getState().session).toBe('idle');
    const other: SessionControl = { kind: 'comparing', abort: new AbortController() };
    beginSession(other);
    end(); // a stale end does not end a newer session
    expect(usePipeLab.getState().session).toBe('comparing');
    endSession(other);
  });
});
