/**
 * The only code that touches SQLite. Opens the store read-only, checks its schema, and streams one
 * consistent snapshot (a single read transaction) as raw rows in a fixed column order, sorted the way
 * the creators list needs them, so the whole build is one pass and never holds every row.
 */
import Database from 'better-sqlite3';
import { statSync } from 'node:fs';
import { describeCause, SnapshotError, storeError } from '../errors.js';
import { checkSchema } from './schema.js';

/** One users row with everything the User object needs, joined. Never a private column. */
export type StoreRow = readonly [
  id: number,
  username: unknown,
  displayName: unknown,
  bio: unknown,
  customDomain: unknown,
  createdAt: unknown,
  views: unknown,
  status: unknown,
  decorationId: unknown,
  /** 1 when decoration_id matched a decorations row. */
  decorationFound: number,
  decorationName: unknown,
  decorationFile: unknown,
  /** JSON array of badge values, or null. */
  badgesJson: string | null,
  /** JSON array of [platform, url] pairs ordered by position then id, or null. */
  socialsJson: string | null,
  /** 1 when a bans row exists. */
  banFound: number,
  banMessage: unknown,
  banReason: unknown,
  banBannedAt: unknown,
];

/** Index of each column in a StoreRow, so the renderer reads rows by name. */
export const Col = {
  id: 0, username: 1, displayName: 2, bio: 3, customDomain: 4, createdAt: 5, views: 6, status: 7,
  decorationId: 8, decorationFound: 9, decorationName: 10, decorationFile: 11, badgesJson: 12,
  socialsJson: 13, banFound: 14, banMessage: 15, banReason: 16, banBannedAt: 17,
} as const;

/**
 * Statuses that never publish anything are filtered in SQL so their child rows are not even read.
 * Ordering by username COLLATE NOCASE walks the UNIQUE NOCASE index of the contract's schema (no sort)
 * and equals "lower case, ascending" for every publishable (ASCII) username; `id` breaks ties so that,
 * in a store without the NOCASE constraint, the lowest id of a case-insensitive duplicate comes first.
 * Socials are aggregated per user in one grouped pass (SQLite sorts once and indexes the result)
 * instead of a correlated subquery, which would scan the table per user when it has no user_id index.
 */
const SNAPSHOT_SQL = `
SELECT u.id, u.username, u.display_name, u.bio, u.custom_domain, u.created_at, u.views, u.status,
       u.decoration_id, d.id IS NOT NULL, d.name, d.file,
       (SELECT json_group_array(b.badge) FROM badges b WHERE b.user_id = u.id),
       s.list,
       bn.user_id IS NOT NULL, bn.message, bn.reason, bn.banned_at
FROM users u
LEFT JOIN decorations d ON d.id = u.decoration_id
LEFT JOIN bans bn ON bn.user_id = u.id
LEFT JOIN (
  SELECT user_id, json_group_array(json_array(platform, url) ORDER BY position, id) AS list
  FROM socials GROUP BY user_id
) s ON s.user_id = u.id
WHERE u.status IS NULL OR u.status NOT IN ('inactive', 'deleted')
ORDER BY u.username COLLATE NOCASE, u.id`;

export interface OpenStoreOptions {
  /** How long to wait for a writer's lock before giving up (exit 3). */
  busyTimeoutMs?: number;
}

export class ProfileStore {
  readonly file: string;
  private readonly db: Database.Database;

  private constructor(file: string, db: Database.Database) {
    this.file = file;
    this.db = db;
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
      db = new Database(file, { readonly: true, fileMustExist: true, timeout: options.busyTimeoutMs ?? 5000 });
      const store = new ProfileStore(file, db);
      checkSchema(db, file);
      return store;
    } catch (cause) {
      db?.close();
      throw translateSqliteError(cause, file);
    }
  }

  /**
   * Calls `consume` with an iterable of every candidate row, all from one read transaction, and
   * returns its result. Rows stream from SQLite; nothing is held beyond the current row.
   */
  readSnapshot<T>(consume: (rows: Iterable<StoreRow>) => T): T {
    const { db, file } = this;
    try {
      db.exec('BEGIN');
      try {
        const statement = db.prepare(SNAPSHOT_SQL).raw(true);
        const rows = statement.iterate() as IterableIterator<StoreRow>;
        const result = consume(mapErrors(rows, file));
        db.exec('COMMIT');
        return result;
      } finally {
        if (db.inTransaction) db.exec('ROLLBACK');
      }
    } catch (cause) {
      throw translateSqliteError(cause, file);
    }
  }

  close(): void {
    this.db.close();
  }
}

function* mapErrors(rows: IterableIterator<StoreRow>, file: string): Generator<StoreRow> {
  try {
    yield* rows;
  } catch (cause) {
    throw translateSqliteError(cause, file);
  }
}

/** SQLite failures become store errors (exit 3) with a fix; our own errors pass through. */
export function translateSqliteError(cause: unknown, file: string): unknown {
  if (cause instanceof SnapshotError) return cause;
  const code = (cause as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return cause;
  if (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_') || code === 'SQLITE_LOCKED') {
    return storeError(`profile store is locked by another process past the busy timeout: ${file}`,
      'retry when the writer has finished, or raise --busy-timeout', cause);
  }
  if (code === 'SQLITE_NOTADB') {
    return storeError(`not a SQLite database: ${file}`, 'pass --db <file> pointing at the profile store', cause);
  }
  if (code.startsWith('SQLITE_CORRUPT')) {
    return storeError(`profile store is corrupt: ${file}`, 'restore the store from a backup or a fresh copy', cause);
  }
  return storeError(`cannot read the profile store ${file}: ${describeCause(cause)}`,
    'check that the file is a readable SQLite database and not being replaced', cause);
}
