/**
 * Test helper: wraps a Backend and checks tensor ownership. Every op's tensor
 * arguments must be live (not disposed), disposing twice throws, and `live`
 * counts what is allocated and not yet disposed, so a test can check that a
 * forward + backward leaves nothing behind.
 */
import type { Backend, Tensor } from '../backend.ts';

function isTensor(v: unknown): v is Tensor {
  return typeof v === 'object' && v !== null && 'shape' in v && 'dtype' in v && 'size' in v;
}

export interface Tracked {
  be: Backend;
  live: Set<Tensor>;
}

export function trackingBackend(inner: Backend): Tracked {
  const live = new Set<Tensor>();
  const register = (v: unknown): void => {
    if (isTensor(v)) live.add(v);
    else if (typeof v === 'object' && v !== null && !(v instanceof Promise)) for (const x of Object.values(v)) if (isTensor(x)) live.add(x);
  };
  const be = new Proxy(inner, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        args.forEach((a, i) => {
          if (isTensor(a) && !live.has(a)) throw new Error(`${String(prop)}: argument ${i} is a disposed or foreign tensor`);
        });
        if (prop === 'dispose') {
          live.delete(args[0] as Tensor);
          return undefined;
        }
        const out = (v as (...a: unknown[]) => unknown).apply(target, args);
        register(out);
        return out;
      };
    },
  });
  return { be, live };
}
