/**
 * A built dist/ folder served on 127.0.0.1 by Node's own http module, as a
 * static host would (optionally under a sub-path, as GitHub Pages or a CDN
 * bucket would): what the bench and the GPU probe open, and what the hosted
 * e2e test serves. No vite at run time, so the bench's one-file bundles
 * (scripts/bundle-browser-bench.mjs) run where only Node and Playwright are,
 * as on a lent GPU machine.
 */
import { createReadStream, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, sep } from 'node:path';

export interface Served {
  url: string;
  close(): Promise<void>;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.wasm': 'application/wasm',
  '.txt': 'text/plain; charset=utf-8',
  '.wgsl': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.bin': 'application/octet-stream',
};

/** The file a request path names inside `dir` (index.html for a folder), or null when it would leave `dir`. */
export function fileFor(dir: string, urlPath: string): string | null {
  let path: string;
  try {
    path = decodeURIComponent(urlPath.split('?')[0].split('#')[0]);
  } catch {
    return null;
  }
  const file = normalize(join(dir, path.endsWith('/') ? `${path}index.html` : path));
  const root = normalize(dir.endsWith(sep) ? dir : dir + sep);
  return file.startsWith(root) ? file : null;
}

/**
 * Serves `dir` on 127.0.0.1 (a free port), at the root or under `subPath`
 * (its URL then ends with it): GET and HEAD, 404 for what is not there.
 */
export async function serveDist(dir: string, subPath = ''): Promise<Served> {
  const prefix = subPath ? `/${subPath.replace(/^\/|\/$/g, '')}/` : '/';
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const file = url.startsWith(prefix) ? fileFor(dir, `/${url.slice(prefix.length)}`) : null;
    let size = -1;
    try {
      if (file) {
        const st = statSync(file);
        if (st.isFile()) size = st.size;
      }
    } catch {
      // not there
    }
    if (!file || size < 0 || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`${url}: not found`);
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'content-length': size, 'cache-control': 'no-cache' });
    if (req.method === 'HEAD') res.end();
    else createReadStream(file).pipe(res);
  });
  await new Promise<void>((res, rej) => {
    server.once('error', rej);
    server.listen(0, '127.0.0.1', () => res());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${prefix}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
