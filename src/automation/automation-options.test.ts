import { describe, expect, it } from 'vitest';
import { runOptionsOf } from './automation.ts';
import { PauseState } from '../runtime/executor/stream-pause.ts';

describe("window.pipelab.run's options are checked, naming option, value and rule", () => {
  it('accepts the documented options', () => {
    const signal = new AbortController().signal;
    const onStep = () => {};
    expect(runOptionsOf({ signal, onStep, readWeights: true, recvTimeoutMs: 500, stepTimeoutMs: 1000 })).toEqual({ signal, onStep, readWeights: true, recvTimeoutMs: 500, stepTimeoutMs: 1000 });
    const onStreamProgress = () => {};
    expect(runOptionsOf({ onStreamProgress })).toEqual({ onStreamProgress });
    const onStreamLoss = () => {};
    expect(runOptionsOf({ onStreamLoss, onStreamProgress })).toEqual({ onStreamLoss, onStreamProgress });
    const pause = new PauseState();
    expect(runOptionsOf({ pause })).toEqual({ pause });
    expect(runOptionsOf(undefined)).toEqual({});
  });
  it.each([
    [{ stepTimeoutMs: -1 }, 'options.stepTimeoutMs = -1: must be at least 1'],
    [{ recvTimeoutMs: Number.NaN }, 'options.recvTimeoutMs = NaN: must be a finite number'],
    [{ signal: 'stop' }, 'options.signal = "stop": must be an AbortSignal (new AbortController().signal)'],
    [{ readWeights: 1 }, 'options.readWeights = 1: must be true or false'],
    [{ resume: 'yes' }, 'options.resume = "yes": must be true or false'],
    [{ onStreamProgress: 'yes' }, 'options.onStreamProgress = "yes": must be a function'],
    [{ onStreamLoss: 1 }, 'options.onStreamLoss = 1: must be a function'],
    [{ pause: true }, 'options.pause = true: must be a switch from window.pipelab.pauseSwitch()'],
    [{ pause: { isPaused: false, watch: () => () => {} } }, 'options.pause = "an object": must be a switch from window.pipelab.pauseSwitch()'],
    [{ onstep: () => {} }, 'options.onstep = a function: is not a known run option; the nearest is "onStep"'],
    [5, 'options = 5: must be an object {signal?, onStep?, onStreamProgress?, onStreamLoss?, pause?, readWeights?, resume?, recvTimeoutMs?, stepTimeoutMs?}'],
  ])('%o', (opts, message) => {
    expect(() => runOptionsOf(opts)).toThrow(message);
  });
});
