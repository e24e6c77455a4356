/**
 * The change clock (docs/store.md, "The change clock"): what it is in the store, and
 * how a reader follows it. Installing and removing it is clock-install.ts's; this module only reads.
 *
 * In the store it is one row of `profile_snapshot_clock` (format, epoch and the number of triggers
 * installed) and two tables of the version at which each user, and each decoration, last changed in
 * a way the API can see. Triggers upsert those rows inside the platform's own transactions, each at
 * one past the highest version recorded, so versions grow in commit order: a read transaction whose
 * highest version is V sees every change up to V and none after.
 */
import type Database from 'better-sqlite3';

/** The layout this code reads and installs; another value in a store is refused, never guessed at. */
export const CLOCK_FORMAT = 1;

export const CLOCK_TABLE = 'profile_snapshot_clock';
export const USERS_CHANGED = 'profile_snapshot_users_changed';
export const DECORATIONS_CHANGED = 'profile_snapshot_decorations_changed';
/** Every object of the clock is named so (docs/store.md reserves the prefix). */
export const CLOCK_GLOB = 'profile_snapshot_*';

/**
 * The highest version recorded, in either table (0 before any change): the clock's time now, and
 * one less than the version the triggers give the next change. Rows are only ever upserted to a
 * newer version, never removed, so it never goes down.
 */
export const HIGHEST_VERSION = `max(coalesce((SELECT max(version) FROM ${USERS_CHANGED}), 0), coalesce((SELECT max(version) FROM ${DECORATIONS_CHANGED}), 0))`;

/** Where a reader stands on one installation's clock. */
export interface ClockPosition {
  epoch: string;
  version: number;
}

/** What a read transaction finds of the clock. */
export type ClockReading =
  | { state: 'present'; position: ClockPosition }
  | { state: 'absent' }
  /**
   * Not followed: tables of another format (`foreign`: another version's, which `track` must not
   * replace), or an installation of this format missing a part (which `track` installs again).
   */
  | { state: 'unusable'; why: string; foreign: boolean };

/** What changed after a position, up to the reading's version. */
export interface ClockChanges {
  /** Ids of users whose users row or child rows changed. */
  users: number[];
  /** Ids of decorations whose row changed (their wearers changed with them). */
  decorations: unknown[];
}

/** The clock as this read transaction sees it. Cheap: the schema table and one row. */
export function readClock(db: Database.Database): ClockReading {
  const objects = db.prepare(`SELECT type, name FROM sqlite_schema WHERE name GLOB '${CLOCK_GLOB}'`).raw().all() as [string, string][];
  if (objects.length === 0) return { state: 'absent' };
  const tables = new Set(objects.filter(([type]) => type === 'table').map(([, name]) => name));
  if (![CLOCK_TABLE, USERS_CHANGED, DECORATIONS_CHANGED].every((name) => tables.has(name)))
    return { state: 'unusable', why: 'some of its tables are missing', foreign: false };
  let row: { format: unknown; epoch: unknown; version: unknown; triggers: unknown } | undefined;
  try {
    row = db.prepare(`SELECT format, epoch, ${HIGHEST_VERSION} AS version, triggers FROM ${CLOCK_TABLE}`).get() as typeof row;
  } catch {
    return { state: 'unusable', why: `${CLOCK_TABLE} has columns of another format`, foreign: true };
  }
  if (row === undefined) return { state: 'unusable', why: `${CLOCK_TABLE} has no row`, foreign: false };
  if (row.format !== CLOCK_FORMAT)
    return { state: 'unusable', why: `its format is ${String(row.format)}, this tool reads ${CLOCK_FORMAT}`, foreign: true };
  const triggers = objects.filter(([type]) => type === 'trigger').length;
  if (triggers !== row.triggers)
    return { state: 'unusable', why: `it has ${triggers} of its ${String(row.triggers)} triggers`, foreign: false };
  if (typeof row.epoch !== 'string' || !Number.isSafeInteger(row.version))
    return { state: 'unusable', why: 'its row is malformed', foreign: false };
  return { state: 'present', position: { epoch: row.epoch, version: row.version as number } };
}

/** The users and decorations whose version passed `since` (through the versions' indexes). */
export function changesSince(db: Database.Database, since: number): ClockChanges {
  const users = db.prepare(`SELECT user_id FROM ${USERS_CHANGED} WHERE version > ?`).pluck().all(since) as number[];
  const decorations = db.prepare(`SELECT decoration_id FROM ${DECORATIONS_CHANGED} WHERE version > ?`).pluck().all(since);
  return { users, decorations };
}

/**
 * Why a reader at `last` cannot follow the clock it reads now, or undefined when it can: each of
 * these means changes may have happened that the clock does not show past `last`.
 */
export function cannotFollow(last: ClockPosition | undefined, now: ClockReading): string | undefined {
  if (now.state === 'absent') return last === undefined ? 'the store has no change clock' : 'the change clock was removed';
  if (now.state === 'unusable') return `the change clock cannot be read: ${now.why}`;
  if (last === undefined) return 'the change clock is new to this reader';
  if (now.position.epoch !== last.epoch) return 'the change clock was installed again';
  if (now.position.version < last.version) return 'the change clock went back (a restored store?)';
  return undefined;
}
