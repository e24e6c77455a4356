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
export interface Slice {
  index: number;
  count: number;
}

const FNV_OFFSET_BASIS = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const utf8 = new TextEncoder();

/** The slice of a username among `count`; an empty one is in slice 0 (as a NULL one is in SQL). */
export function sliceOf(username: string, count: number): number {
  if (count === 1 || username.length === 0) return 0;
  return fnv1a(username.toLowerCase()) % count;
}

/** Whether a username falls in `slice`. */
export function inSlice(username: string, slice: Slice): boolean {
  return sliceOf(username, slice.count) === slice.index;
}

/** 32-bit FNV-1a over the UTF-8 bytes of `text`, as an unsigned integer. */
function fnv1a(text: string): number {
  let hash = FNV_OFFSET_BASIS;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    // Publishable names are ASCII, one byte per character: only others need encoding.
    if (code >= 0x80) return fnv1aBytes(utf8.encode(text));
    hash = Math.imul(hash ^ code, FNV_PRIME);
  }
  return hash >>> 0;
}

function fnv1aBytes(bytes: Uint8Array): number {
  let hash = FNV_OFFSET_BASIS;
  for (const byte of bytes) hash = Math.imul(hash ^ byte, FNV_PRIME);
  return hash >>> 0;
}
