import { describe, expect, it } from 'vitest';
import { ADAPTER_RETRY_DELAYS_MS, requestAdapterRetrying } from './request-adapter.ts';
import { acquireDevice } from './device.ts';

/** A GPU whose requestAdapter answers null `nulls` times, then an adapter; counts the asks. */
function flakyGpu(nulls: number) {
  const adapter = { features: new Set(), limits: {}, info: { vendor: 'nvidia' } } as unknown as GPUAdapter;
  const asked: number[] = [];
  const t0 = Date.now();
  const gpu = {
    requestAdapter: async () => {
      asked.push(Date.now() - t0);
      return asked.length > nulls ? adapter : null;
    },
  } as unknown as GPU;
  return { gpu, adapter, asked };
}

describe('requestAdapter asked again after a null', () => {
  it('an adapter at the first ask: asked once, no wait', async () => {
    const { gpu, adapter, asked } = flakyGpu(0);
    expect(await requestAdapterRetrying(gpu)).toEqual({ adapter, attempts: 1 });
    expect(asked).toHaveLength(1);
  });

  it('null twice, then the adapter (a GPU process still coming up): the third ask gets it, after the first two waits', async () => {
    const { gpu, adapter, asked } = flakyGpu(2);
    const r = await requestAdapterRetrying(gpu, undefined, [20, 40, 80]);
    expect(r).toEqual({ adapter, attempts: 3 });
    expect(asked[1] - asked[0]).toBeGreaterThanOrEqual(19);
    expect(asked[2] - asked[1]).toBeGreaterThanOrEqual(39);
  });

  it('no adapter ever: null after 1 + the delays asks, the wait bounded', async () => {
    const { gpu, asked } = flakyGpu(Infinity);
    expect(await requestAdapterRetrying(gpu, undefined, [5, 5, 5])).toEqual({ adapter: null, attempts: 4 });
    expect(asked).toHaveLength(4);
    expect(ADAPTER_RETRY_DELAYS_MS.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(2000);
  });

  it('acquireDevice takes the late adapter rather than calling WebGPU unavailable', async () => {
    const late = flakyGpu(1);
    const device = { lost: new Promise(() => {}), limits: {}, features: new Set() } as unknown as GPUDevice;
    const limits = { maxStorageBufferBindingSize: 1, maxBufferSize: 1, maxStorageBuffersPerShaderStage: 8, maxComputeWorkgroupStorageSize: 1, maxComputeInvocationsPerWorkgroup: 1 };
    Object.assign(late.adapter, { requestDevice: async () => device, limits });
    const got = await acquireDevice(late.gpu, { adapterRetryDelaysMs: [10] });
    expect(got.device).toBe(device);
    expect(late.asked).toHaveLength(2);
    await expect(acquireDevice(flakyGpu(Infinity).gpu, { adapterRetryDelaysMs: [1, 1] })).rejects.toThrow('offered no adapter');
  });
});
