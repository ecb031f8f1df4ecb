/**
 * The equality tests' measure. Both functions refuse to compare what does not line up (a tensor of another length,
 * a set of weights with a name missing or extra, no weights at all): a gather that returned only a tensor's first
 * piece, or nothing, must fail the comparison, not pass it on the values it did return.
 */

/** Relative error of `a` against the reference `b`: ‖a − b‖₂ / ‖b‖₂; throws when the lengths differ. */
export function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`relErr: ${a.length} values against the reference's ${b.length}`);
  let num = 0, den = 0;
  for (let i = 0; i < a.length; i++) {
    num += (a[i] - b[i]) ** 2;
    den += b[i] ** 2;
  }
  return Math.sqrt(num) / Math.max(Math.sqrt(den), 1e-30);
}

type Named = Readonly<Record<string, ArrayLike<number>>>;

/** Throws unless `got` holds exactly the reference's names (and the reference holds at least one), naming the difference. */
export function expectSameNames(got: Named | undefined, ref: Named, what = 'weights'): asserts got is Named {
  if (!got) throw new Error(`${what}: none to compare (the reference has ${Object.keys(ref).length} tensors)`);
  const want = Object.keys(ref);
  if (want.length === 0) throw new Error(`${what}: the reference holds no tensor: nothing would be compared`);
  const missing = want.filter((n) => !(n in got));
  const extra = Object.keys(got).filter((n) => !(n in ref));
  if (missing.length > 0 || extra.length > 0) {
    throw new Error(`${what}: ${missing.length > 0 ? `missing ${missing.join(', ')}` : ''}${missing.length > 0 && extra.length > 0 ? '; ' : ''}${extra.length > 0 ? `not in the reference ${extra.join(', ')}` : ''}`);
  }
}

/** relErr of every tensor of `got` against the reference's of the same name; throws on a name or length mismatch. */
export function relErrByName(got: Named | undefined, ref: Named, what = 'weights'): Record<string, number> {
  expectSameNames(got, ref, what);
  const out: Record<string, number> = {};
  for (const n of Object.keys(ref).sort()) {
    const a = got[n];
    if (a.length !== ref[n].length) throw new Error(`${what}: "${n}" has ${a.length} values, the reference ${ref[n].length}`);
    out[n] = relErr(a, ref[n]);
  }
  return out;
}

/** The largest of relErrByName. */
export function maxRelErr(got: Named | undefined, ref: Named, what = 'weights'): number {
  return Math.max(...Object.values(relErrByName(got, ref, what)));
}
