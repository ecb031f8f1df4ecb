/** `n noun`, the noun singular for one and plural otherwise: count(1, 'rank') = '1 rank', count(2, 'copy', 'copies') = '2 copies'. */
export function count(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`;
}
