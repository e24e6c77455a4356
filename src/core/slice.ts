/**
 * A slice of the users: the unit a full pass is shared out in between threads (pass/threads.ts),
 * and the one a shard of the API would be. Every layer that picks users by slice (the store's
 * queries, the manifest's entries, the pass) asks `sliceOf`, and the store registers this very
 * function on its connections (store/queries.ts), so SQL and TypeScript can never disagree.
 *
 * The slice of a username among `count` is the 32-bit FNV-1a hash of the UTF-8 bytes of the
 * lower-cased username (`toLowerCase()`), modulo `count`:
 *
 *     hash = 0x811c9dc5; for each byte: hash = (hash XOR byte) * 0x01000193 mod 2^32
 *
 * For example, "Alice" is hashed as "alice", to 0x872213e7 (2267157479): slice 3 of 4.
 *
 * Users are sliced by their name, not their id: every spelling of a name (a case-insensitive
 * duplicate) then falls in the same slice, where rows still arrive in id order, so the lowest id
 * keeps the name as it does in a single pass, and no two slices ever write the same file. FNV-1a
 * spreads names evenly whatever their length or alphabet, so slices are of a size.
 */
import { usageError } from './errors.js';
import { fnv1a } from './hash.js';

export interface Slice {
  index: number;
  count: number;
}

/** Every user: slice 0 of 1 (what a build without a shard owns). */
export const ALL_USERS: Slice = Object.freeze({ index: 0, count: 1 });

/**
 * Slice `inner` of the users of slice `outer` (a thread's slice of a shard): the users whose hash
 * modulo `outer.count * inner.count` is `outer.index + outer.count * inner.index`. They are in
 * `outer` (the hash modulo outer.count is outer.index), and the inner slices of `outer` split its
 * users as evenly as slices split all users.
 */
export function sliceWithin(outer: Slice, inner: Slice): Slice {
  return { index: outer.index + outer.count * inner.index, count: outer.count * inner.count };
}

/** Most shards a store may be split into. */
export const MAX_SHARDS = 1024;

/** Whether `slice` names one: whole numbers, 0 <= index < count. */
export function isSlice({ index, count }: Slice): boolean {
  return Number.isSafeInteger(index) && Number.isSafeInteger(count) && index >= 0 && index < count;
}

/** `shard` when it is a slice of at most MAX_SHARDS; a usage error naming `source` otherwise. */
export function checkShard(shard: Slice, source: string): Slice {
  const { index, count } = shard;
  if (!isSlice(shard) || count > MAX_SHARDS) {
    throw usageError(
      `${source} ${JSON.stringify(`${index}/${count}`)} is not a shard`,
      `give i/n with n from 1 to ${MAX_SHARDS} and i from 0 to n - 1, such as 0/4`,
    );
  }
  return Object.freeze({ index, count });
}

/** `index/count`, as `--shard` takes it. */
export const formatSlice = ({ index, count }: Slice): string => `${index}/${count}`;

/** The slice of a username among `count`; an empty one is in slice 0 (as a NULL one is in SQL). */
export function sliceOf(username: string, count: number): number {
  if (count === 1 || username.length === 0) return 0;
  return fnv1a(username.toLowerCase()) % count;
}

/** Whether a username falls in `slice`. */
export function inSlice(username: string, slice: Slice): boolean {
  return sliceOf(username, slice.count) === slice.index;
}

/**
 * The shard `text` names, as `--shard` and PROFILE_SHARD take it: `i/n`, such as `0/4`. A usage
 * error naming `source` otherwise (`3/2`, `0/0`, `x/4`).
 */
export function parseShard(text: string, source: string): Slice {
  const match = /^\s*(\d{1,7})\s*\/\s*(\d{1,7})\s*$/.exec(text);
  if (match === null) {
    throw usageError(
      `${source} ${JSON.stringify(text)} is not a shard`,
      `give i/n with n from 1 to ${MAX_SHARDS} and i from 0 to n - 1, such as 0/4`,
    );
  }
  return checkShard({ index: Number(match[1]), count: Number(match[2]) }, source);
}
