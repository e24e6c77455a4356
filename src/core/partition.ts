/**
 * A share of the users for one thread of a full pass (see pass/threads.ts). Users are shared out by
 * their name, not their id: every spelling of a name (a case-insensitive duplicate) then falls in
 * the same share, where rows still arrive in id order, so the lowest id keeps the name as it does in
 * a single pass, and no two threads ever write the same file.
 *
 * The store computes the same function in SQL (store/read.ts); the two agree on every publishable
 * username (ASCII, spec/profile-store.md), and rows with any other username are skipped with a
 * warning wherever they land.
 */
export interface Partition {
  index: number;
  count: number;
}

/** The share of a canonical (lower-case, publishable) profile name. */
export function partitionOf(name: string, count: number): number {
  if (count === 1 || name.length === 0) return 0;
  return (name.length + name.charCodeAt(0) + name.charCodeAt(name.length - 1)) % count;
}

/**
 * The same over a username column in SQL: every row lands in exactly one share (an empty or NULL
 * username in share 0). SQLite's lower() folds ASCII only, which is all a publishable name holds.
 */
export function partitionSql(column: string, part: Partition): string {
  const sum = `length(${column}) + unicode(lower(${column})) + unicode(lower(substr(${column}, -1)))`;
  return `coalesce((${sum}) % ${part.count}, 0) = ${part.index}`;
}
