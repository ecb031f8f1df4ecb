import { describe, expect, it } from 'vitest';
import { describeGpuFailure, rankWhere } from './gpu-failure.ts';
import { checkAdapterBufferLimits } from '../../config/run-limits.ts';
import { defaultRunConfig } from '../../config/run-config.ts';

describe('GPU failures are named with rank and stage', () => {
  it('the lost-instance OperationError becomes a lost device, naming rank and stages', () => {
    const e = new DOMException('A valid external Instance reference no longer exists.', 'OperationError');
    expect(describeGpuFailure(e, rankWhere(3, [0, 1, 2, 3, 0, 1, 2, 3]))).toBe(
      'rank 3, stages 3, 7: the WebGPU device was lost: the browser ended its GPU instance (this happens when the GPU process runs out of memory or crashes)',
    );
  });
  it('keeps an action prefix a rank already gave', () => {
    const e = new Error('rank 1, stage 1, action 1F0, step 0: OperationError: A valid external Instance reference no longer exists.');
    expect(describeGpuFailure(e, 'rank 1, stage 1')).toMatch(/^rank 1, stage 1, action 1F0, step 0: the WebGPU device was lost: /);
  });
  it('out of memory is said as such', () => {
    expect(describeGpuFailure(new Error('Out of memory'), rankWhere(0, [0, 1]))).toBe('rank 0, stage 0: out of GPU memory: Out of memory');
  });
  it('other errors keep their words, with the rank in front', () => {
    expect(describeGpuFailure(new TypeError('x is undefined'), 'rank 2, stage 2')).toBe('rank 2, stage 2: TypeError: x is undefined');
  });
  it("buffers past the adapter's limits fail at init naming rank, stage, buffer and limit", () => {
    const cfg = { ...defaultRunConfig(), hidden: 1024, batchSize: 4096, microbatches: 1 };
    // One micro-batch: 4096 rows × 1024 columns × 4 bytes = 16 MiB, against an adapter that offers 8 MiB.
    expect(() => checkAdapterBufferLimits(cfg, 1, [1], { maxStorageBufferBindingSize: 8 * 2 ** 20, maxBufferSize: 2 ** 30 })).toThrow(
      /^rank 1, stage 1: the buffer block1\.\w+ activations of one micro-batch \(4096 rows\) needs 16\.0 MiB, more than this adapter's maxStorageBufferBindingSize of 8\.0 MiB$/,
    );
    expect(() => checkAdapterBufferLimits(cfg, 1, [1], { maxStorageBufferBindingSize: 2 ** 30, maxBufferSize: 2 ** 30 })).not.toThrow();
  });
});

describe('messages that already name their rank', () => {
  it('pass through unchanged, without the error kind in front', () => {
    class ActionError extends Error {
      override name = 'ActionError';
    }
    const m = 'rank 2, stage 2, action 2F2, step 0: rank 2 waited 4.0 s for the activation of micro-batch 2 from rank 1 (stage 1) for 2F2 and it never came';
    expect(describeGpuFailure(new ActionError(m), 'rank 2, stage 2, step 0')).toBe(m);
  });
});
