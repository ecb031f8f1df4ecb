/**
 * Every Playwright spec takes `test` and `expect` from e2e/page-errors.ts, whose `page` fails the test on an
 * uncaught error in the page; none takes them from '@playwright/test' directly, and none logs page errors instead.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const E2E = join(dirname(fileURLToPath(import.meta.url)), '..', 'e2e');
const specs = readdirSync(E2E).filter((f) => f.endsWith('.spec.ts'));

describe('e2e specs fail on page errors', () => {
  it('finds the specs', () => expect(specs.length).toBeGreaterThan(20));

  it.each(specs)('%s', (f) => {
    const text = readFileSync(join(E2E, f), 'utf8');
    expect(text).toMatch(/^import \{[^}]*\btest\b[^}]*\} from '\.\/page-errors\.ts';$/m);
    // From '@playwright/test' only types.
    for (const m of text.matchAll(/^import (type )?\{([^}]*)\} from '@playwright\/test';$/gm)) {
      if (m[1]) continue;
      for (const name of m[2].split(',').map((s) => s.trim()).filter(Boolean)) expect(name, `${f} imports ${name} from @playwright/test`).toMatch(/^type /);
    }
    expect(text).not.toMatch(/on\('pageerror',[^)]*\)\s*=>\s*console\.log/);
  });
});
