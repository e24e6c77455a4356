/** `count` of `items` drawn at random, each at most once (all of them, shuffled, when there are no more). */
export function randomSample<T>(items: readonly T[], count: number): T[] {
  const pool = [...items];
  const drawn = Math.min(count, pool.length);
  // The first steps of a Fisher-Yates shuffle: every subset equally likely, unlike a sort by random keys.
  for (let i = 0; i < drawn; i++) {
    const j = i + Math.floor(Math.random() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  return pool.slice(0, drawn);
}
