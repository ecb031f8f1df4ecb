import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileFor, serveDist, type Served } from './static-server.ts';

describe('the bench serves dist/ with Node alone', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pipelab-serve-'));
  let served: Served;
  beforeAll(async () => {
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>app</title>');
    writeFileSync(join(dir, 'bench.html'), '<!doctype html><title>bench</title>');
    writeFileSync(join(dir, 'assets', 'worker-x1.js'), 'self.onmessage = () => {};');
    writeFileSync(join(dir, 'assets', 'k.wasm'), new Uint8Array([0, 97, 115, 109]));
    served = await serveDist(dir);
  });
  afterAll(() => served.close());

  it('pages, scripts (as JavaScript, which module workers need) and binaries, with their types', async () => {
    const index = await fetch(served.url);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toContain('text/html');
    expect(await index.text()).toContain('<title>app</title>');
    const bench = await fetch(`${served.url}bench.html?x=1#y`);
    expect(await bench.text()).toContain('<title>bench</title>');
    const js = await fetch(`${served.url}assets/worker-x1.js`);
    expect(js.headers.get('content-type')).toContain('text/javascript');
    const wasm = await fetch(`${served.url}assets/k.wasm`);
    expect(wasm.headers.get('content-type')).toBe('application/wasm');
    expect(new Uint8Array(await wasm.arrayBuffer())).toEqual(new Uint8Array([0, 97, 115, 109]));
  });

  it('under a sub-path, as a static host serves a site: only what is under it', async () => {
    const sub = await serveDist(dir, 'some/deep/sub-path');
    try {
      expect(sub.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/some\/deep\/sub-path\/$/);
      expect(await (await fetch(sub.url)).text()).toContain('<title>app</title>');
      expect((await fetch(`${sub.url}assets/worker-x1.js`)).status).toBe(200);
      expect((await fetch(new URL('/index.html', sub.url))).status).toBe(404);
    } finally {
      await sub.close();
    }
  });

  it('404 for what is not there, a folder without index.html, and nothing outside the folder', async () => {
    expect((await fetch(`${served.url}missing.js`)).status).toBe(404);
    expect((await fetch(`${served.url}assets/`)).status).toBe(404);
    expect(fileFor(dir, '/../etc/passwd')).toBeNull();
    expect(fileFor(dir, '/%2e%2e/%2e%2e/etc/passwd')).toBeNull();
    expect(fileFor(dir, '/%E0%A4%A')).toBeNull();
    expect(fileFor(dir, '/assets/a.js')).toBe(join(dir, 'assets', 'a.js'));
    expect(fileFor(dir, '/')).toBe(join(dir, 'index.html'));
  });
});
