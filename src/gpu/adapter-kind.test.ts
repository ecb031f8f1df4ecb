/** Hardware GPU or software WebGPU, from fake adapter infos of the kinds browsers report. */
import { describe, expect, it } from 'vitest';
import { classifyAdapter } from './adapter-kind.ts';

describe('classifyAdapter', () => {
  it.each([
    ['SwiftShader in Chromium (these machines)', { vendor: 'google', architecture: 'swiftshader', device: '', description: '' }],
    ['SwiftShader named only in the description', { vendor: '', architecture: '', description: 'SwiftShader Device (Subzero)' }],
    ['Mesa llvmpipe', { vendor: 'mesa', architecture: '', description: 'llvmpipe (LLVM 15.0.6, 256 bits)' }],
    ['Mesa lavapipe', { vendor: 'mesa', architecture: 'lavapipe' }],
    ['WARP on Windows', { vendor: 'microsoft', architecture: '', description: 'Microsoft Basic Render Driver' }],
    ['a fallback adapter that names a GPU vendor', { vendor: 'intel', architecture: 'gen-12lp', isFallbackAdapter: true }],
    ['an adapter that says nothing', { vendor: '', architecture: '', device: '', description: '' }],
    ['no info at all', null],
  ])('software: %s', (_, info) => {
    expect(classifyAdapter(info).hardware).toBe(false);
  });

  it.each([
    ['NVIDIA (Chrome on Linux/Windows)', { vendor: 'nvidia', architecture: 'hopper' }],
    ['Apple silicon', { vendor: 'apple', architecture: 'metal-3' }],
    ['AMD', { vendor: 'amd', architecture: 'rdna-3' }],
    ['Intel integrated', { vendor: 'intel', architecture: 'gen-12lp' }],
    ['Qualcomm', { vendor: 'qualcomm', architecture: 'adreno-7xx' }],
  ])('hardware: %s', (_, info) => {
    const k = classifyAdapter(info);
    expect(k.hardware).toBe(true);
    expect(k.why).toBe(`it is a GPU (${info.vendor} ${info.architecture})`);
  });

  it('a fallback flag on the adapter (older browsers) counts too', () => {
    expect(classifyAdapter({ vendor: 'nvidia', architecture: 'ampere' }, true).hardware).toBe(false);
  });

  it('says why, naming the adapter', () => {
    expect(classifyAdapter({ vendor: 'google', architecture: 'swiftshader' }).why).toBe('it is SwiftShader, a software renderer on the CPU (google swiftshader)');
    // Chromium 156 flags SwiftShader as a fallback adapter too: the renderer's name is what the line says.
    expect(classifyAdapter({ vendor: 'google', architecture: 'swiftshader', isFallbackAdapter: true }).why).toBe('it is SwiftShader, a software renderer on the CPU (google swiftshader)');
    expect(classifyAdapter({ vendor: 'intel', architecture: 'gen-12lp', isFallbackAdapter: true }).why).toBe('the browser gave a fallback adapter (intel gen-12lp), which renders in software');
  });
});
