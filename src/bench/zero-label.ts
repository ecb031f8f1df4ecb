/** How the benchmark's tables and log name a mesh row's sharding (pure: the Node driver's tables import it). */
/** `' ZeRO-3 per action'` etc. for a mesh row's sharding. */
export function zeroLabel(m: { zero: number; reshard?: string }): string {
  if (m.zero === 0) return '';
  return ` ZeRO-${m.zero}${m.zero === 3 && m.reshard === 'microbatch' ? ' per action' : ''}`;
}
