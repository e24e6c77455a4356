/**
 * The queries a pass reads its rows with, built from a scope: which users it reads. Each query is
 * one table's scan in user-id order (read.ts merges them), narrowed by the scope's WHERE conditions.
 */
import type Database from 'better-sqlite3';
import { ALL_USERS, formatSlice, isSlice, sliceOf, type Slice } from '../core/slice.js';
import { READ_STATUSES } from './schema.js';

/**
 * Which users a pass reads: every candidate of a slice (all users: slice 0 of 1), or those of a
 * slice that StoreShadow.select named.
 */
export type RowScope = { readonly kind: 'slice'; readonly slice: Slice } | { readonly kind: 'selected'; readonly slice: Slice };

export const ALL_ROWS: RowScope = { kind: 'slice', slice: ALL_USERS };
export const sliceRows = (slice: Slice): RowScope => ({ kind: 'slice', slice });
export const selectedRows = (slice: Slice = ALL_USERS): RowScope => ({ kind: 'selected', slice });

/** One query per table, each in user-id order. */
export interface RowQueries {
  users: string;
  socials: string;
  badges: string;
  bans: string;
}

export const DECORATIONS_SQL = 'SELECT id, name, file FROM decorations';

/** The SQL name of core/slice.ts's `sliceOf`, registered on each connection (`registerSliceFunction`). */
const SLICE_FUNCTION = 'profile_slice';

/**
 * Registers `sliceOf` on a connection as `profile_slice(username, count)`: the same function, so a
 * query's slice and the manifest's never disagree. A NULL or non-text username (never publishable)
 * is in slice 0.
 */
export function registerSliceFunction(db: Database.Database): void {
  db.function(SLICE_FUNCTION, { deterministic: true, varargs: false }, (username: unknown, count: unknown) =>
    typeof username === 'string' ? sliceOf(username, Number(count)) : 0,
  );
}

/** The users and child rows of `scope`: conditions composed into each table's WHERE clause. */
export function rowQueries(scope: RowScope): RowQueries {
  return {
    // Statuses that never publish anything are filtered in SQL, so they cost nothing more.
    users: select(
      'id, username, display_name, bio, custom_domain, created_at, views, status, decoration_id',
      'users',
      [READ_STATUSES, scopeCondition(scope, 'users')],
      'id',
    ),
    // Walks the store's (user_id, position, id) index when it has one; otherwise SQLite sorts once.
    socials: select('user_id, platform, url', 'socials', [scopeCondition(scope, 'socials')], 'user_id, position, id'),
    badges: select('user_id, badge', 'badges', [scopeCondition(scope, 'badges')], 'user_id'),
    bans: select('user_id, message, reason, banned_at', 'bans', [scopeCondition(scope, 'bans')], 'user_id'),
  };
}

/**
 * A scope as a condition on one table's rows (undefined: every row). A slice's rows are looked up by
 * the ids `sliceIdsSql` collected, in every table: no table is read whole, and the hash runs once
 * per user. Selected users are filtered by the selection in every table, and by the slice in the
 * users table alone.
 */
function scopeCondition(scope: RowScope, table: keyof RowQueries): string | undefined {
  const userId = table === 'users' ? 'id' : 'user_id';
  const slice = scope.slice.count === 1 ? undefined : sliceCondition(scope.slice);
  if (scope.kind === 'selected')
    return slice === undefined || table !== 'users' ? `${userId} ${SELECTED_IDS}` : `${userId} ${SELECTED_IDS} AND ${slice}`;
  return slice === undefined ? undefined : `${userId} ${SLICE_IDS}`;
}

const SELECTED_IDS = 'IN (SELECT id FROM temp.pass_ids)';
const SLICE_IDS = 'IN (SELECT id FROM temp.slice_ids)';

/**
 * What a read of `scope` runs first on its connection, inside its snapshot: for a slice of the users,
 * fills temp.slice_ids with the ids of the slice's users (of any status: the users query filters
 * those). The hash needs the name alone, so SQLite walks the username index rather than the table.
 * Undefined when the scope needs nothing; SLICE_IDS_DONE lets the ids go once the rows are read.
 */
export function sliceIdsSql(scope: RowScope): string | undefined {
  if (scope.kind !== 'slice' || scope.slice.count === 1) return undefined;
  return `CREATE TEMP TABLE IF NOT EXISTS slice_ids (id INTEGER PRIMARY KEY);
    DELETE FROM temp.slice_ids;
    INSERT INTO temp.slice_ids SELECT id FROM users WHERE ${sliceCondition(scope.slice)};`;
}

/** Drops what `sliceIdsSql` made: a watcher's connection lives on, and its temp storage with it. */
export const SLICE_IDS_DONE = 'DROP TABLE IF EXISTS temp.slice_ids';

/** The SQL condition that a users row is in `slice` (by its username, `column`: the row's, as the query names it). */
export function sliceCondition(slice: Slice, column = 'username'): string {
  if (!isSlice(slice)) throw new Error(`bug: not a slice: ${formatSlice(slice)}`);
  return `${SLICE_FUNCTION}(${column}, ${slice.count}) = ${slice.index}`;
}

function select(columns: string, table: string, conditions: readonly (string | undefined)[], orderBy: string): string {
  const where = conditions.filter((condition) => condition !== undefined);
  return `SELECT ${columns} FROM ${table}${where.length === 0 ? '' : ` WHERE ${where.join(' AND ')}`} ORDER BY ${orderBy}`;
}
