/**
 * The only code that touches SQLite. Opens the store read-only, checks its schema, and streams one
 * consistent snapshot (a single read transaction) to a callback, one user at a time with its child
 * rows, never holding every row.
 *
 * Why a merge join in id order: four plain scans (users by rowid; socials, badges and bans ordered by
 * user_id) stepped side by side cost far less than one joined query walking the users in
 * username order (measured: the NOCASE index walk costs a table lookup per row, and per-user
 * subqueries a seek each). The creators list's username order is restored by the build, which sorts
 * only the active names.
 */
import { DEFAULT_BUSY_TIMEOUT_MS } from './busy-timeout.js';
import Database from 'better-sqlite3';
import { statSync } from 'node:fs';
import { describeCause, SnapshotError, storeError } from '../core/errors.js';
import {
  ALL_ROWS,
  DECORATIONS_SQL,
  registerSliceFunction,
  rowQueries,
  SLICE_IDS_DONE,
  sliceCondition,
  sliceIdsSql,
  type RowScope,
} from './queries.js';
import { changesSince, readClock, type ClockChanges, type ClockReading } from './clock.js';
import { checkSchema, READ_STATUSES } from './schema.js';
import { ALL_USERS, type Slice } from '../core/slice.js';
import { StoreShadow } from './shadow.js';
import { commitMark, storeStamp, type StoreStamp } from './stamp.js';

/** users columns in the order the query selects them (queries.ts). Never a private column. */
export type UserColumns = readonly [
  id: number,
  username: unknown,
  displayName: unknown,
  bio: unknown,
  customDomain: unknown,
  createdAt: unknown,
  views: unknown,
  status: unknown,
  decorationId: unknown,
];

/** One users row with everything the User object needs. */
export interface StoreRow {
  user: UserColumns;
  /** [name, file] of the decoration row decoration_id names, undefined when there is none. */
  decoration: readonly [name: unknown, file: unknown] | undefined;
  /** badge values of the user's badges rows (any, known or not). */
  badges: readonly unknown[];
  /** [platform, url] of the user's socials rows, ordered by position then id. */
  socials: readonly (readonly [platform: unknown, url: unknown])[];
  /** [message, reason, banned_at] of the user's bans row, undefined when there is none. */
  ban: readonly [message: unknown, reason: unknown, bannedAt: unknown] | undefined;
}

/** What a build's clock record keeps of a user (incremental/clock-record.ts): id, username, created_at, decoration_id. */
export type RecordedUser = readonly [id: number, username: unknown, createdAt: unknown, decorationId: unknown];

/** Index of each users column, so the renderer reads rows by name. */
export const Col = {
  id: 0,
  username: 1,
  displayName: 2,
  bio: 3,
  customDomain: 4,
  createdAt: 5,
  views: 6,
  status: 7,
  decorationId: 8,
} as const;

const NONE: readonly never[] = [];

export interface OpenStoreOptions {
  /** How long to wait for a writer's lock before giving up (exit 3); DEFAULT_BUSY_TIMEOUT_MS by default. */
  busyTimeoutMs?: number;
}

export class ProfileStore {
  readonly file: string;
  /** What it was opened with, for another connection to the same store (a pass's other threads). */
  readonly busyTimeoutMs: number;
  private readonly db: Database.Database;
  private shadowCopy: StoreShadow | undefined;
  private markBeforeSnapshot: string | undefined;

  private constructor(file: string, db: Database.Database, busyTimeoutMs: number) {
    this.file = file;
    this.db = db;
    this.busyTimeoutMs = busyTimeoutMs;
  }

  /** Opens read-only and checks the schema; throws a store error (exit 3) for anything unusable. */
  static open(file: string, options: OpenStoreOptions = {}): ProfileStore {
    let isFile: boolean;
    try {
      isFile = statSync(file).isFile();
    } catch (cause) {
      throw storeError(`profile store not found: ${file}`, 'pass --db <file> or set PROFILE_DB to an existing SQLite file', cause);
    }
    if (!isFile) throw storeError(`profile store is not a file: ${file}`, 'pass --db <file> pointing at the SQLite database file');
    let db: Database.Database | undefined;
    try {
      const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
      db = new Database(file, { readonly: true, fileMustExist: true, timeout: busyTimeoutMs });
      // A build scans each table once, in order: pages are never read twice, so a big page cache
      // only adds to the resident set (better-sqlite3's default is 16 MB).
      db.pragma('cache_size = -2048');
      registerSliceFunction(db);
      const store = new ProfileStore(file, db, busyTimeoutMs);
      checkSchema(db, file);
      return store;
    } catch (cause) {
      db?.close();
      throw translateSqliteError(cause, file);
    }
  }

  /**
   * This connection's copy of a snapshot (see shadow.ts), for a long-lived reader. Its methods must
   * run inside `inSnapshot`.
   */
  get shadow(): StoreShadow {
    return (this.shadowCopy ??= new StoreShadow(this.db));
  }

  /**
   * Runs `work` in one read transaction: every read inside it (rows, the shadow's comparisons) sees
   * the same snapshot even while the platform writes in WAL mode. The transaction is rolled back when
   * `work` throws, which also undoes whatever it changed in the shadow. The store's commit mark is
   * taken as it begins (`snapshotMark`), before its snapshot, unless `mark` is false (a connection
   * whose snapshot another one vouches for: every mark holds descriptors open for good, stamp.ts).
   */
  inSnapshot<T>(work: () => T, options: { mark?: boolean } = {}): T {
    const { db, file } = this;
    try {
      // SQLite takes a read transaction's snapshot at its first read, after the mark in any case.
      this.markBeforeSnapshot = options.mark === false ? undefined : this.commitMark();
      db.exec('BEGIN');
    } catch (cause) {
      throw translateSqliteError(cause, file);
    }
    try {
      const result = work();
      db.exec('COMMIT');
      return result;
    } catch (cause) {
      throw translateSqliteError(cause, file);
    } finally {
      if (db.inTransaction) db.exec('ROLLBACK');
    }
  }

  /**
   * The store's commit mark (stamp.ts: commitMark) taken just before the snapshot `inSnapshot` is
   * reading: another connection whose snapshot began while the mark still reads the same sees the
   * same snapshot. Undefined outside `inSnapshot`, or when the mark could not be read.
   */
  snapshotMark(): string | undefined {
    return this.db.inTransaction ? this.markBeforeSnapshot : undefined;
  }

  /** Whether the store has at least this many users (a bounded count, read in the caller's snapshot). */
  hasUsers(atLeast: number): boolean {
    try {
      const sql = `SELECT count(*) FROM (SELECT 1 FROM users LIMIT ${Math.max(0, Math.floor(atLeast))})`;
      return (this.db.prepare(sql).pluck().get() as number) >= atLeast;
    } catch (cause) {
      throw translateSqliteError(cause, this.file);
    }
  }

  /** The store's change clock in the caller's snapshot (clock.ts). */
  clock(): ClockReading {
    try {
      return readClock(this.db);
    } catch (cause) {
      throw translateSqliteError(cause, this.file);
    }
  }

  /** The users and decorations the change clock shows changed after `version`, in the caller's snapshot. */
  clockChanges(version: number): ClockChanges {
    try {
      return changesSince(this.db, version);
    } catch (cause) {
      throw translateSqliteError(cause, this.file);
    }
  }

  /** Sets the users the next restricted read returns (`forEachRow` with a `selected` scope). */
  selectUsers(ids: Iterable<number>): void {
    const { db } = this;
    db.exec('CREATE TABLE IF NOT EXISTS temp.pass_ids (id INTEGER PRIMARY KEY); DELETE FROM temp.pass_ids');
    const insert = db.prepare('INSERT OR IGNORE INTO temp.pass_ids (id) VALUES (?)');
    for (const id of ids) insert.run(id);
  }

  /**
   * What a build's clock record keeps of the candidate users of `slice`: all of them, or (`selected`)
   * those `selectUsers` named. In the caller's snapshot.
   */
  recordedUsers(slice: Slice = ALL_USERS, selected = false): RecordedUser[] {
    const conditions = [
      READ_STATUSES,
      ...(slice.count > 1 ? [sliceCondition(slice)] : []),
      ...(selected ? ['id IN (SELECT id FROM temp.pass_ids)'] : []),
    ];
    try {
      return this.db
        .prepare(`SELECT id, username, created_at, decoration_id FROM users WHERE ${conditions.join(' AND ')}`)
        .raw()
        .all() as RecordedUser[];
    } catch (cause) {
      throw translateSqliteError(cause, this.file);
    }
  }

  /** Bytes that change with every commit (see stamp.ts: commitMark); undefined when unreadable. */
  commitMark(): string | undefined {
    try {
      return commitMark(this.file);
    } catch {
      return undefined;
    }
  }

  /** Checks the schema again (a long-lived connection outlives many schema changes). */
  recheckSchema(): void {
    try {
      checkSchema(this.db, this.file);
    } catch (cause) {
      throw translateSqliteError(cause, this.file);
    }
  }

  /**
   * Calls `each` for every candidate user in `scope`, in id order, all from one read transaction (the
   * caller's `inSnapshot`, or one of its own), so every row and child row belongs to the same
   * snapshot. Returns the number of users read.
   */
  forEachRow(each: (row: StoreRow) => void, scope: RowScope = ALL_ROWS): number {
    const { db } = this;
    if (!db.inTransaction) return this.inSnapshot(() => this.forEachRow(each, scope));
    const sql = rowQueries(scope);
    try {
      const first = sliceIdsSql(scope);
      if (first !== undefined) db.exec(first);
      const decorations = new Map<unknown, readonly [unknown, unknown]>();
      for (const [id, name, file_] of db.prepare(DECORATIONS_SQL).raw().iterate() as IterableIterator<[unknown, unknown, unknown]>) {
        decorations.set(id, [name, file_]);
      }
      // Every open iterator keeps the connection busy (it cannot even be closed): each one is ended
      // in `finally`, also when an earlier one failed on its first step (a sort that found SQLite's
      // temporary folder full, say).
      const open: Iterator<unknown>[] = [];
      const iterate = <Row>(query: string) => {
        const rows = db.prepare(query).raw().iterate() as IterableIterator<Row>;
        open.push(rows);
        return rows;
      };
      let count = 0;
      try {
        const socials = new ChildRows(iterate<[unknown, unknown, unknown]>(sql.socials));
        const badges = new ChildRows(iterate<[unknown, unknown]>(sql.badges));
        const bans = new ChildRows(iterate<[unknown, unknown, unknown, unknown]>(sql.bans));
        for (const user of iterate<UserColumns>(sql.users)) {
          const id = user[0];
          const userSocials = socials.take(id, pickSocial);
          const userBadges = badges.take(id, pickBadge);
          const userBan = bans.take(id, pickBan)[0];
          const decorationId = user[8];
          each({
            user,
            decoration: decorationId === null ? undefined : decorations.get(decorationId),
            badges: userBadges,
            socials: userSocials,
            ban: userBan,
          });
          count++;
        }
      } finally {
        for (const rows of open) rows.return?.();
        if (first !== undefined) db.exec(SLICE_IDS_DONE);
      }
      return count;
    } catch (cause) {
      throw translateSqliteError(cause, this.file);
    }
  }

  /**
   * A stamp that changes with every commit to the store, and whether it is settled enough to vouch
   * for an unchanged store (see stamp.ts). Take it before `forEachRow`, so the rows read are never older.
   */
  stamp(settleMs?: number): StoreStamp {
    try {
      return storeStamp(this.file, { settleMs });
    } catch (cause) {
      throw storeError(
        `cannot inspect the profile store's files: ${this.file}`,
        'check that the store and its -wal file are readable',
        cause,
      );
    }
  }

  close(): void {
    this.db.close();
  }
}

/**
 * A child table's rows in user-id order, consumed beside the users in one merge join: rows of users
 * filtered out (or of no user at all) are skipped on the way.
 */
class ChildRows<Row extends readonly unknown[]> {
  private current: IteratorResult<Row>;

  constructor(private readonly rows: Iterator<Row>) {
    this.current = rows.next();
  }

  /** The rows of user `id`, each through `pick`; the shared empty array when it has none. */
  take<T>(id: number, pick: (row: Row) => T): T[] | readonly never[] {
    let current = this.current;
    while (!current.done && (current.value[0] as number) < id) current = this.rows.next();
    if (current.done || current.value[0] !== id) {
      this.current = current;
      return NONE;
    }
    const taken: T[] = [];
    do {
      taken.push(pick(current.value));
      current = this.rows.next();
    } while (!current.done && current.value[0] === id);
    this.current = current;
    return taken;
  }
}

const pickSocial = (row: readonly [unknown, unknown, unknown]): [unknown, unknown] => [row[1], row[2]];
const pickBadge = (row: readonly [unknown, unknown]): unknown => row[1];
const pickBan = (row: readonly [unknown, unknown, unknown, unknown]): readonly [unknown, unknown, unknown] => [row[1], row[2], row[3]];

/** SQLite failures become store errors (exit 3) with a fix; our own errors pass through. */
function translateSqliteError(cause: unknown, file: string): unknown {
  if (cause instanceof SnapshotError) return cause;
  const code = (cause as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return cause;
  if (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_') || code === 'SQLITE_LOCKED') {
    return storeError(
      `profile store is locked by another process past the busy timeout: ${file}`,
      'retry when the writer has finished, or raise --busy-timeout',
      cause,
    );
  }
  if (code === 'SQLITE_NOTADB') {
    return storeError(`not a SQLite database: ${file}`, 'pass --db <file> pointing at the profile store', cause);
  }
  if (code === 'SQLITE_FULL') {
    // The store is opened read-only: only SQLite's temporary files (sorts, the watcher's copy) grow.
    return storeError(
      `SQLite's temporary folder is full while reading the profile store ${file}`,
      'free space there, or point SQLITE_TMPDIR at a folder with room (SQLite uses /var/tmp or /tmp otherwise)',
      cause,
    );
  }
  if (code.startsWith('SQLITE_CORRUPT')) {
    return storeError(`profile store is corrupt: ${file}`, 'restore the store from a backup or a fresh copy', cause);
  }
  return storeError(
    `cannot read the profile store ${file}: ${describeCause(cause)}`,
    'check that the file is a readable SQLite database and not being replaced',
    cause,
  );
}
