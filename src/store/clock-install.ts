/**
 * `store track` and `store untrack`: the only writes this tool ever makes to a profile store, each in
 * one transaction on the store's primary (clock.ts says what the clock is).
 *
 * What is recorded, and the traps that decide how:
 * - users: an insert, a delete, and an update that changes a published column (an `UPDATE OF` list
 *   and a `WHEN` that compares old and new values exactly, so a login writing last_login_ip, or an
 *   ORM writing every column unchanged, records nothing);
 * - socials, badges, bans: any change, for the user a row belongs to before and after;
 * - decorations: by decoration; the reader expands an edit to its wearers;
 * - `INSERT OR REPLACE` and `UPDATE OR REPLACE` delete the rows they conflict with without firing
 *   delete triggers (unless the writer turned recursive_triggers on): for every unique constraint
 *   through which such a delete can reach another user (a username, a socials id), a BEFORE trigger
 *   records the users of the rows that conflict. Constraints that contain the row's own user (a
 *   badge's (user_id, badge)) need none: that user is recorded anyway.
 * Every record takes the next version (one past the highest recorded), so versions grow in commit
 * order whatever the rowids do (a deleted user's id may be reused: its row is upserted with a newer
 * version).
 */
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { DEFAULT_BUSY_TIMEOUT_MS } from './busy-timeout.js';
import { CLOCK_FORMAT, CLOCK_GLOB, CLOCK_TABLE, DECORATIONS_CHANGED, HIGHEST_VERSION, readClock, USERS_CHANGED } from './clock.js';
import { checkSchema } from './schema.js';
import { describeCause, SnapshotError, storeError } from '../core/errors.js';

/** The columns of each table the API can see (users' private columns are left out). */
const PUBLISHED_COLUMNS = {
  users: ['id', 'username', 'display_name', 'bio', 'custom_domain', 'created_at', 'views', 'status', 'decoration_id'],
  socials: ['id', 'user_id', 'platform', 'url', 'position'],
  badges: ['user_id', 'badge'],
  bans: ['user_id', 'message', 'reason', 'banned_at'],
  decorations: ['id', 'name', 'file'],
} as const;
type ClockedTable = keyof typeof PUBLISHED_COLUMNS;

/** The column naming what a row's change is recorded against, and the table recording it. */
const KEY: Record<ClockedTable, { column: string; into: string }> = {
  users: { column: 'id', into: USERS_CHANGED },
  socials: { column: 'user_id', into: USERS_CHANGED },
  badges: { column: 'user_id', into: USERS_CHANGED },
  bans: { column: 'user_id', into: USERS_CHANGED },
  decorations: { column: 'id', into: DECORATIONS_CHANGED },
};

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;
/**
 * The version a change gets: one past the highest recorded (two index seeks), with no write to a
 * shared counter row, which would add a page to every commit's WAL frames.
 */
const NEXT_VERSION = `${HIGHEST_VERSION} + 1`;

/**
 * Upserts the key `value` (an expression) into `into` at the clock's version, for the rows `where`
 * selects from `from` (aliased `r`). A user id that is not an integer joins no user and is skipped:
 * a platform's odd child row must never fail its write.
 */
function record(into: string, value: string, from = '', where = 'true'): string {
  const column = into === USERS_CHANGED ? 'user_id' : 'decoration_id';
  const integer = into === USERS_CHANGED ? ` AND typeof(${value}) = 'integer'` : '';
  return `INSERT INTO ${into} (${column}, version) SELECT ${value}, ${NEXT_VERSION}${from ? ` FROM ${from}` : ''} WHERE ${where}${integer}
    ON CONFLICT (${column}) DO UPDATE SET version = excluded.version;`;
}

function trigger(name: string, when: string, body: string[]): string {
  return `CREATE TRIGGER profile_snapshot_${name} ${when} BEGIN\n  ${body.join('\n  ')}\nEND`;
}

/** The insert, delete and update triggers of one table. */
function changeTriggers(table: ClockedTable): string[] {
  const { column, into } = KEY[table];
  const columns = PUBLISHED_COLUMNS[table];
  const differs = columns.map((c) => `OLD.${c} IS NOT NEW.${c} COLLATE BINARY`).join(' OR ');
  return [
    trigger(`${table}_insert`, `AFTER INSERT ON ${table}`, [record(into, `NEW.${column}`)]),
    trigger(`${table}_delete`, `AFTER DELETE ON ${table}`, [record(into, `OLD.${column}`)]),
    trigger(`${table}_update`, `AFTER UPDATE OF ${columns.join(', ')} ON ${table} WHEN ${differs}`, [
      record(into, `OLD.${column}`),
      record(into, `NEW.${column}`, '', `NEW.${column} IS NOT OLD.${column}`),
    ]),
  ];
}

/** A unique constraint of a table: its columns with the collation each compares with. */
interface UniqueKey {
  columns: { name: string; collation: string }[];
}

/**
 * The table's unique constraints a REPLACE can delete another key's row through: those without its
 * key column, plus an INTEGER PRIMARY KEY other than the key (socials.id), which no index lists.
 */
function replaceableKeys(db: Database.Database, table: ClockedTable): UniqueKey[] {
  const { column } = KEY[table];
  const keys: UniqueKey[] = [];
  // A partial index is matched as if whole: a few more users recorded, never one missed.
  const indexes = db.prepare('SELECT name FROM pragma_index_list(?) WHERE "unique" = 1').all(table) as { name: string }[];
  for (const index of indexes) {
    const columns = (
      db.prepare('SELECT name, coll FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno').all(index.name) as {
        name: string | null;
        coll: string;
      }[]
    ).map((c) => ({ name: c.name ?? '', collation: c.coll }));
    // An expression in the index (name NULL) cannot be matched column by column: its conflicts are
    // left to the row's own triggers, which is why such an index makes `track` refuse (below).
    if (columns.some((c) => c.name === '')) throw unsupportedIndex(table, index.name);
    if (columns.some((c) => c.name.toLowerCase() === column)) continue;
    keys.push({ columns });
  }
  const pk = db.prepare('SELECT name, type FROM pragma_table_info(?) WHERE pk > 0').all(table) as { name: string; type: string }[];
  if (pk.length === 1 && pk[0]!.type.toUpperCase() === 'INTEGER' && pk[0]!.name.toLowerCase() !== column)
    keys.push({ columns: [{ name: pk[0]!.name, collation: 'BINARY' }] });
  return keys;
}

function unsupportedIndex(table: string, index: string): SnapshotError {
  return storeError(
    `cannot install the change clock: ${table} has a unique index on an expression (${index}), through which an INSERT OR REPLACE could delete rows the clock would not see`,
    'drop or rewrite that index over plain columns, or keep the store untracked (cycles then compare the whole store)',
  );
}

/** BEFORE triggers recording the users (or decorations) of the rows a REPLACE would delete. */
function replaceTriggers(db: Database.Database, table: ClockedTable): string[] {
  const { column, into } = KEY[table];
  return replaceableKeys(db, table).flatMap((key, i) => {
    const match = key.columns.map((c) => `r.${quote(c.name)} = NEW.${quote(c.name)} COLLATE ${c.collation}`).join(' AND ');
    const changed = key.columns.map((c) => `OLD.${quote(c.name)} IS NOT NEW.${quote(c.name)} COLLATE ${c.collation}`).join(' OR ');
    const from = `${table} r`;
    return [
      trigger(`${table}_replace_${i}_insert`, `BEFORE INSERT ON ${table}`, [record(into, `r.${column}`, from, match)]),
      trigger(
        `${table}_replace_${i}_update`,
        `BEFORE UPDATE OF ${key.columns.map((c) => quote(c.name)).join(', ')} ON ${table} WHEN ${changed}`,
        [record(into, `r.${column}`, from, `${match} AND r.${column} IS NOT OLD.${column}`)],
      ),
    ];
  });
}

/** The clock's tables, then its triggers, for this store (its unique constraints decide the guards). */
export function clockTriggers(db: Database.Database): string[] {
  const tables = Object.keys(PUBLISHED_COLUMNS) as ClockedTable[];
  return tables.flatMap((table) => [...changeTriggers(table), ...replaceTriggers(db, table)]);
}

function clockTables(epoch: string, triggers: number): string[] {
  return [
    `CREATE TABLE ${CLOCK_TABLE} (format INTEGER NOT NULL, epoch TEXT NOT NULL, triggers INTEGER NOT NULL)`,
    `INSERT INTO ${CLOCK_TABLE} VALUES (${CLOCK_FORMAT}, '${epoch}', ${triggers})`,
    `CREATE TABLE ${USERS_CHANGED} (user_id INTEGER PRIMARY KEY, version INTEGER NOT NULL)`,
    `CREATE INDEX ${USERS_CHANGED}_version ON ${USERS_CHANGED} (version)`,
    `CREATE TABLE ${DECORATIONS_CHANGED} (decoration_id PRIMARY KEY, version INTEGER NOT NULL)`,
    `CREATE INDEX ${DECORATIONS_CHANGED}_version ON ${DECORATIONS_CHANGED} (version)`,
  ];
}

/** Every statement `track` runs on this store, in order (what `--print-sql` shows). */
function installStatements(db: Database.Database, epoch: string): string[] {
  const triggers = clockTriggers(db);
  return [...clockTables(epoch, triggers.length), ...triggers];
}

export interface TrackReport {
  db: string;
  /** False when the same clock was already installed (nothing was written). */
  changed: boolean;
  epoch: string | undefined;
  triggers: number;
}

/** Installs the clock, or leaves an identical one alone; a stale one (a trigger gone, an index added) is installed again. */
export function trackStore(file: string, options: { busyTimeoutMs?: number } = {}): TrackReport {
  return withStore(file, { ...options, write: true }, (db) => {
    const current = readClock(db);
    const wanted = clockTriggers(db);
    if (current.state === 'unusable' && current.foreign) throw foreignClock(file, current.why);
    if (current.state === 'present' && sameTriggers(db, wanted)) {
      return { db: file, changed: false, epoch: current.position.epoch, triggers: wanted.length };
    }
    dropClock(db);
    const epoch = randomUUID();
    for (const statement of [...clockTables(epoch, wanted.length), ...wanted]) db.exec(statement);
    return { db: file, changed: true, epoch, triggers: wanted.length };
  });
}

/** Removes every object of the clock; a store without one is left alone. */
export function untrackStore(file: string, options: { busyTimeoutMs?: number } = {}): TrackReport {
  return withStore(file, { ...options, write: true }, (db) => {
    const current = readClock(db);
    if (current.state === 'unusable' && current.foreign) throw foreignClock(file, current.why);
    const changed = current.state !== 'absent';
    dropClock(db);
    return { db: file, changed, epoch: undefined, triggers: 0 };
  });
}

function sameTriggers(db: Database.Database, wanted: string[]): boolean {
  const installed = db
    .prepare(`SELECT sql FROM sqlite_schema WHERE type = 'trigger' AND name GLOB '${CLOCK_GLOB}'`)
    .pluck()
    .all() as string[];
  return installed.length === wanted.length && wanted.every((sql) => installed.includes(sql));
}

function dropClock(db: Database.Database): void {
  const objects = db
    .prepare(`SELECT type, name FROM sqlite_schema WHERE name GLOB '${CLOCK_GLOB}' AND type IN ('trigger', 'table')`)
    .raw()
    .all() as [string, string][];
  // Triggers first: a table's drop would take its indexes, and a trigger naming a dropped table fails.
  for (const [type, name] of objects.sort(([a], [b]) => (a === b ? 0 : a === 'trigger' ? -1 : 1)))
    db.exec(`DROP ${type === 'trigger' ? 'TRIGGER' : 'TABLE'} IF EXISTS ${quote(name)}`);
}

function foreignClock(file: string, why: string): SnapshotError {
  return new SnapshotError('clockFormat', `${file} holds a change clock this version cannot use (${why}); nothing was changed`, {
    hint: 'run `store track` or `store untrack` with the profile-snapshot version that installed it',
  });
}

/**
 * Opens the store (for writing, or read-only to show what `track` would run), checks it is a
 * profile store, and runs `work`: a writer in one IMMEDIATE transaction.
 */
function withStore<T>(file: string, options: { busyTimeoutMs?: number; write: boolean }, work: (db: Database.Database) => T): T {
  try {
    if (!statSync(file).isFile()) throw new Error('not a file');
  } catch (cause) {
    throw storeError(`profile store not found: ${file}`, 'pass --db <file> naming the store where it is written (its primary)', cause);
  }
  let db: Database.Database | undefined;
  try {
    const timeout = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
    db = new Database(file, { fileMustExist: true, readonly: !options.write, timeout });
    checkSchema(db, file);
    if (!options.write) return work(db);
    db.exec('BEGIN IMMEDIATE');
    const result = work(db);
    db.exec('COMMIT');
    return result;
  } catch (cause) {
    if (db?.inTransaction) db.exec('ROLLBACK');
    throw writeError(cause, file);
  } finally {
    db?.close();
  }
}

/** Every statement `track` would run on this store, as one SQL text (`--print-sql`); nothing is written. */
export function installSql(file: string): string {
  return withStore(file, { write: false }, (db) =>
    installStatements(db, '<epoch>')
      .map((statement) => `${statement};`)
      .join('\n\n'),
  );
}

function writeError(cause: unknown, file: string): unknown {
  if (cause instanceof SnapshotError) return cause;
  const code = String((cause as { code?: unknown } | null)?.code ?? '');
  if (/^SQLITE_(READONLY|CANTOPEN|PERM|AUTH)/.test(code) || (cause as { code?: unknown })?.code === 'EROFS') {
    return new SnapshotError('storeReadOnly', `cannot write the profile store ${file} to change its clock; nothing was changed`, {
      hint: 'run it where the store is written (its primary, not a read-only replica or mount), as a user who may write the file and its folder',
      cause,
    });
  }
  if (code === 'SQLITE_NOTADB') return storeError(`not a SQLite database: ${file}`, 'pass --db <file> naming the profile store', cause);
  if (code.startsWith('SQLITE_BUSY') || code === 'SQLITE_LOCKED')
    return storeError(`profile store is locked by another writer past the busy timeout: ${file}`, 'retry, or raise --busy-timeout', cause);
  if (code.startsWith('SQLITE_')) return storeError(`cannot change the clock of ${file}: ${describeCause(cause)}`, undefined, cause);
  return cause;
}
