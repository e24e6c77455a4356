/**
 * What is live in the bucket, as the planner compares a tree with it: read from the record
 * (../record/format.ts) or, when the record cannot be trusted, from a listing (reconcile.ts).
 */

/** The hash of an object whose content is not known (an unresolved intent, a mismatching listing). */
export const UNKNOWN = '?';

/** What is in the bucket: profile name or file path -> data hash (or UNKNOWN). */
export interface LiveSet {
  profiles: Map<string, string>;
  files: Map<string, string>;
  /** Keys (relative to the prefix) that are not part of any tree's layout: deleted by the next publish. */
  strays: Set<string>;
}

export const emptyLive = (): LiveSet => ({ profiles: new Map(), files: new Map(), strays: new Set() });
