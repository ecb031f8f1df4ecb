/** The nearest of some known names to a name typed, by edit distance (for "did you mean" in messages). */

/** Levenshtein distance (insert, delete, substitute; each costs 1), case-insensitive; strings are cut to 64 characters. */
export function editDistance(a: string, b: string): number {
  const s = a.slice(0, 64).toLowerCase();
  const t = b.slice(0, 64).toLowerCase();
  let prev = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const cur = [i];
    for (let j = 1; j <= t.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (s[i - 1] === t[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[t.length];
}

/** The known name nearest to `name` (the first of equals, in the order given). */
export function nearestName(name: string, known: readonly string[]): string {
  let best = known[0] ?? '';
  let bestD = Infinity;
  for (const k of known) {
    const d = editDistance(name, k);
    if (d < bestD) {
      best = k;
      bestD = d;
    }
  }
  return best;
}

/** The rule for a key nobody knows: `is not a known key; the nearest is "hidden"`. */
export function unknownKeyRule(name: string, known: readonly string[], what = 'key'): string {
  return `is not a known ${what}; the nearest is "${nearestName(name, known)}"`;
}
