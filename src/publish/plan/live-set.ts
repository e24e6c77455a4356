/**
 * What is live in the bucket, as the planner compares a tree with it: read from the record
 * (../record/format.ts) or, when the record cannot be trusted, from a listing (reconcile.ts).
 */

import { ProfileTable, type RowSource } from './profile-table.js';

/** The hash of an object whose content is not known (an unresolved intent, a mismatching listing). */
export const UNKNOWN = '?';

/** What is in the bucket: profile name (in name order) or file path -> data hash (or UNKNOWN). */
export interface LiveSet {
  /** A listing's table, or the state's rows as its gzip holds them (walked, never held inflated). */
  profiles: RowSource;
  files: Map<string, string>;
  /** Keys (relative to the prefix) that are not part of any tree's layout: deleted by the next publish. */
  strays: Set<string>;
}

export const emptyLive = (): LiveSet => ({ profiles: ProfileTable.EMPTY, files: new Map(), strays: new Set() });
