import { describe, expect, it } from 'vitest';
import { CpuBackend } from './cpu-backend.ts';
import { byKind, liveTotal, MEMORY_KINDS, MemoryLedger } from './memory-ledger.ts';
import { createParam } from './param.ts';
import { createOptimizer } from './optimizer.ts';

describe('MemoryLedger', () => {
  it('counts live bytes by kind, pooled apart, and the high-water mark since its reset', () => {
    let now = 0;
    const m = new MemoryLedger(() => now);
    const a = {}, b = {}, c = {};
    m.add(a, 100, 'weights');
    now = 1;
    m.scope('stash', () => m.add(b, 40));
    expect(m.kindOf(b)).toBe('stash');
    expect(m.scopeKind).toBe('temp');
    m.add(c, 10);
    expect(byKind(m.sample().live)).toMatchObject({ weights: 100, stash: 40, temp: 10 });
    expect(m.peak().t).toBe(1);
    expect(liveTotal(m.peak())).toBe(150);
    m.remove(b);
    m.setPooled(64);
    m.retag(c, 'grads');
    expect(byKind(m.sample().live)).toMatchObject({ weights: 100, stash: 0, grads: 10, temp: 0 });
    expect(m.sample().pooled).toBe(64);
    expect(liveTotal(m.peak())).toBe(150);
    m.resetPeak();
    expect(liveTotal(m.peak())).toBe(110);
    expect(m.remove(b)).toBe(false);
    expect(() => m.add(a, 1)).toThrow(/added twice/);
    expect(m.sample().live).toHaveLength(MEMORY_KINDS.length);
  });
});

describe('the CPU backend counts its tensors, 4 bytes a value', () => {
  it('allocations, disposals, tags and freed storage', () => {
    const be = new CpuBackend();
    const x = be.zeros([3, 5]);
    const y = be.matmul(x, be.zeros([5, 2]));
    expect(be.memory.liveBytes).toBe(4 * (15 + 10 + 6));
    be.tag(y, 'stash');
    expect(be.memory.bytesOf('stash')).toBe(24);
    be.dispose(y);
    be.dispose(y);
    expect(be.memory.bytesOf('stash')).toBe(0);
    be.freeStorage(x);
    be.freeStorage(x);
    expect(be.memory.liveBytes).toBe(40);
    expect(be.hasStorage(x)).toBe(false);
    // A tensor used while its storage is freed is an error that names it, not zeros.
    expect(() => be.matmul(x, be.zeros([5, 2]))).toThrow(/storage freed.*missed gather/);
    be.allocStorage(x, 'gathered');
    expect(be.memory.bytesOf('gathered')).toBe(60);
    expect(() => be.allocStorage(x, 'gathered')).toThrow(/already has storage/);
  });

  it('a parameter is weights and a gradient, an optimizer its state: AdamW 16 bytes a value', () => {
    const be = new CpuBackend();
    const p = createParam(be, 'w', [4, 8], { kind: 'normal', std: 0.1 }, 1, true);
    createOptimizer(be, [p], { optimizer: 'adamw', lr: 1e-3, momentum: 0, weightDecay: 0 });
    expect(byKind(be.memory.sample().live)).toMatchObject({ weights: 128, grads: 128, optimizer: 256, temp: 0 });
  });
});

describe("a pool's bucket rounding is counted apart as slack", () => {
  it('a buffer bigger than its request adds the difference to the slack while it lives', () => {
    const ledger = new MemoryLedger(() => 0);
    const a = {}, b = {};
    ledger.add(a, 256, 'weights', 64);
    ledger.add(b, 5120, 'temp', 4100);
    expect(ledger.sample()).toEqual({ t: 0, live: MEMORY_KINDS.map((k) => (k === 'weights' ? 256 : k === 'temp' ? 5120 : 0)), pooled: 0, slack: 192 + 1020 });
    expect(ledger.peak().slack).toBe(1212);
    ledger.remove(b);
    expect(ledger.sample().slack).toBe(192);
    // Staging's slack goes with it: outside the formula, as its bytes are.
    ledger.retag(a, 'staging');
    expect('slack' in ledger.sample()).toBe(false);
    ledger.retag(a, 'stash');
    expect(ledger.sample().slack).toBe(192);
    ledger.remove(a);
    expect('slack' in ledger.sample()).toBe(false);
  });
});

describe('buffers let go before their commands are submitted are counted as pending until they leave', () => {
  it('markPending adds a live buffer to the pending bytes once; remove takes it out of both', () => {
    const ledger = new MemoryLedger(() => 0);
    const a = {}, b = {};
    ledger.add(a, 512, 'stash');
    ledger.add(b, 256, 'temp');
    ledger.markPending(a);
    ledger.markPending(a);
    expect(ledger.sample()).toMatchObject({ pending: 512 });
    expect(ledger.liveBytes).toBe(768);
    ledger.remove(a);
    expect('pending' in ledger.sample()).toBe(false);
    expect(ledger.liveBytes).toBe(256);
  });
});
