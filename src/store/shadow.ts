/**
 * A long-lived reader's copy of the store snapshot its last pass published, kept in the connection's
 * temp schema (a file SQLite deletes on close; only the public columns a build reads, never a private
 * one). With it, finding what changed is SQLite's work alone: each large table is walked once beside
 * its copy, in C, and only the ids of changed users come back to JavaScript. Otherwise a pass reads
 * every row through better-sqlite3, and marshalling rows into JavaScript is most of what that costs.
 *
 * A shard's watcher copies its shard alone (`capture(slice)`): its changes are then found by looking
 * the copy's rows up by id, and the users entering the shard by hashing the names of the username
 * index: a shard's cycle reads its own rows and every name, never the whole store's rows.
 *
 * Every method runs inside the caller's read transaction (ProfileStore.inSnapshot), so the copy, the
 * comparison and the rows read agree on one snapshot; the copy's own changes are rolled back with
 * that transaction when a pass fails.
 *
 * On a store with a change clock the copy is lean (`capture(slice, { lean: true })`): the clock names
 * the users that changed, so the copy keeps only what it cannot say, as a build's clock record does
 * (incremental/clock-record.ts): each user's name, account age and decoration, and no child row.
 * Such a copy cannot be compared with the store (`changes` is undefined): when the clock cannot be
 * followed, the pass reads every row once and takes the copy afresh.
 *
 * Comparisons are exact for what a build reads: `IS NOT ... COLLATE BINARY` sees NULLs, letter case
 * (users.username is NOCASE in the store) and storage classes; the copy's columns have no declared
 * type, so values are copied as stored.
 */
import type Database from 'better-sqlite3';
import { describeCause } from '../core/errors.js';
import { DAY_MS } from '../core/time.js';
import { ALL_USERS, type Slice } from '../core/slice.js';
import type { ClockChanges } from './clock.js';
import { sliceCondition } from './queries.js';
import { READ_STATUSES } from './schema.js';

const USER_COLUMNS = ['username', 'display_name', 'bio', 'custom_domain', 'created_at', 'views', 'status', 'decoration_id'] as const;
/** What a lean copy keeps of a user: what the change clock cannot say (besides created_ms and age_phase). */
const LEAN_USER_COLUMNS = ['username', 'decoration_id'] as const;
const SOCIAL_COLUMNS = ['user_id', 'platform', 'url', 'position'] as const;
/**
 * The copy's socials table. user_id has the store's integer affinity: compared with an untyped
 * column, an id would be converted first, and SQLite could not look rows up by user in its index.
 */
const SHADOW_SOCIALS = `id INTEGER PRIMARY KEY, user_id INTEGER, ${SOCIAL_COLUMNS.filter((c) => c !== 'user_id').join(', ')}`;
/** Small tables, compared and copied whole. */
const SMALL_TABLES = {
  badges: 'user_id, badge',
  bans: 'user_id, message, reason, banned_at',
  decorations: 'id, name, file',
} as const;

/**
 * Slack around the day boundaries computed in SQL. SQLite and the renderer parse created_at alike to
 * the millisecond for every value the renderer accepts (any other row has a warning and is always
 * read again), and a second either side only makes the set of rows to read a little larger.
 */
const AGE_MARGIN_MS = 1000;
/**
 * Copies the store's users rows into the copy (`columns` of them), created_at also in ms since the
 * epoch as SQL computes it (NULL for anything SQLite cannot parse). Ends in its WHERE clause, for a
 * caller to narrow.
 */
const copyUsers = (columns: readonly string[]) =>
  `INSERT INTO temp.shadow_users SELECT id, ${columns.join(', ')}, CAST(unixepoch(created_at, 'subsec') * 1000 AS INTEGER)
  FROM main.users WHERE ${READ_STATUSES}`;

/**
 * The SQL parameters of the age window (since, at] for AGE_TURNS and NEXT_AGE_TURN; undefined when it
 * runs backwards or is too wide to be worth it (every age may have moved).
 */
function ageWindow(sinceMs: number, atMs: number): Record<string, number> | undefined {
  if (atMs < sinceMs || atMs - sinceMs >= DAY_MS - 2 * AGE_MARGIN_MS) return undefined;
  // At the same snapshot time no age can move (the common case with SOURCE_DATE_EPOCH).
  const width = atMs === sinceMs ? 0 : Math.ceil(atMs - sinceMs) + 2 * AGE_MARGIN_MS;
  return { at: Math.floor(atMs), day: DAY_MS, margin: AGE_MARGIN_MS, width };
}
/**
 * Whether copy row `o`'s account age may turn over in the window: it does when a boundary
 * created + k days lies in (since, at], that is when (at - created) mod a day is less than at - since.
 */
const AGE_TURNS = 'o.created_ms IS NULL OR ((:at - o.created_ms + :margin) % :day + :day) % :day < :width';
/** The first moment after `at` when copy row `o`'s account age turns over. */
const NEXT_AGE_TURN = ':at + :day - ((:at - o.created_ms) % :day + :day) % :day';

/**
 * Where in a day copy row `o`'s account age turns over (created_ms modulo a day, in [0, day)):
 * indexed, so a quiet cycle finds the few ages turning without a walk of the whole copy
 * (`agesTurning` asks for ranges of it; AGE_TURNS and NEXT_AGE_TURN say the same in one walk).
 */
const AGE_PHASE = `age_phase AS (((created_ms % ${DAY_MS}) + ${DAY_MS}) % ${DAY_MS})`;

/**
 * The age phases (AGE_PHASE) AGE_TURNS holds for, as inclusive ranges: (at + margin - phase) modulo
 * a day is below the width exactly for the `width` phases up to (at + margin) modulo a day.
 */
function turningPhases(ages: Record<string, number>): [number, number][] {
  const { at, day, margin, width } = ages as { at: number; day: number; margin: number; width: number };
  if (width === 0) return [];
  const last = (((at + margin) % day) + day) % day;
  const first = last - width + 1;
  return first >= 0
    ? [[first, last]]
    : [
        [0, last],
        [first + day, day - 1],
      ];
}

/** StoreChanges.stableUntilMs from the earliest NEXT_AGE_TURN (a little early: see AGE_MARGIN_MS). */
const stableUntil = (nextTurn: number | null) => (nextTurn === null ? Infinity : nextTurn - AGE_MARGIN_MS);

/** READ_STATUSES for the store's users table, aliased `m` beside its copy `o`. */
const READ_STATUSES_M = READ_STATUSES.replaceAll('status', 'm.status');

/**
 * A condition on a user_id column: a user a slice's copy holds. Looked up in the copy's ids alone
 * (temp.shadow_ids): a lookup in the copy's users table reads a page of whole rows for each id.
 */
const COPIED_USERS = 'IN (SELECT id FROM temp.shadow_ids)';
/** Fills temp.shadow_ids from the copy's users (a WHERE clause may follow). */
const COPY_IDS = 'INSERT INTO temp.shadow_ids SELECT id FROM temp.shadow_users';
/** A condition on a user id: a user the pass just read (`select`). */
const READ_USERS = 'IN (SELECT id FROM temp.pass_ids)';
/** A condition on a row id: one of the ids in the JSON array bound to the statement. */
const NAMED_IDS = 'IN (SELECT value FROM json_each(?))';

const differs = (columns: readonly string[]) => columns.map((c) => `m.${c} IS NOT o.${c} COLLATE BINARY`).join(' OR ');

/** What changed since the copy was taken: the users whose published documents may differ. */
export interface StoreChanges {
  /** Ids of users with a changed, added or removed users row or child row, or an age turning over. */
  users: Set<number>;
  /**
   * No unchanged user's account age moves before this time (a little early, never late): how long
   * the profiles a pass carries over stand while the store stays as it is.
   */
  stableUntilMs: number;
}

export class StoreShadow {
  /**
   * Rows in the copy's users and socials tables (equal to the store's after `capture` or `update`);
   * a slice's copy keeps those it was captured with, and only as the mark that there is a copy.
   */
  private counts: { users: number; socials: number } | undefined;
  /**
   * What `update` applies: the counts `changes` saw, the socials rows and the small tables that
   * differed; `byUser`: every child row of the users read is copied again (the change clock names
   * users, not rows), and the counts are then recounted when a comparison next needs them.
   */
  private pending:
    { users: number; socials: number; socialIds: string; small: (keyof typeof SMALL_TABLES)[]; byUser?: boolean } | undefined;
  /** The counts no longer match the copy's tables (a clock's update changed them): recount before comparing. */
  private countsStale = false;
  /** The users the copy holds: every user, or a shard's (`capture`). */
  private slice: Slice = ALL_USERS;
  /** The copy keeps only what a change clock cannot say (`capture`), and cannot be compared with the store. */
  private leanCopy = false;

  /**
   * Why the last `capture` or `update` failed (the copy is gone then), until one succeeds: the
   * watcher reports it, because without a copy every cycle reads every row.
   */
  failure: unknown;

  constructor(private readonly db: Database.Database) {}

  /**
   * What an operator should read while the copy cannot be kept (see `failure`): until it can, every
   * cycle reads every row, several times slower. The cause, and its fix where SQLite's code names one.
   */
  failureNotice(): string | undefined {
    const failure = this.failure;
    if (failure === undefined) return undefined;
    const code = String((failure as { code?: unknown } | null)?.code ?? '');
    const why = `cannot keep the watcher's copy of the store snapshot (${describeCause(failure)}), so every cycle reads every row until it can`;
    if (/^SQLITE_(FULL|IOERR|CANTOPEN|NOMEM)/.test(code)) {
      const size = this.leanCopy ? 'about 45 bytes' : 'about 0.5 KB';
      return `${why}: SQLite keeps the copy in a temporary file of ${size} per user; point SQLITE_TMPDIR at a folder with that much room (it uses /var/tmp or /tmp otherwise)`;
    }
    if (/^SQLITE_(CONSTRAINT|MISMATCH)/.test(code))
      return `${why}: the copy needs the store's users.id and socials.id to be unique integers`;
    return why;
  }

  get captured(): boolean {
    return this.counts !== undefined;
  }

  /** Whether the copy keeps only what a change clock cannot say (see `capture`). */
  get lean(): boolean {
    return this.captured && this.leanCopy;
  }

  /**
   * Copies the current snapshot of `slice`'s users (a shard's watcher copies its shard alone; see
   * `slicedChanges`). `lean`, for a store whose change clock the next passes follow: only each user's
   * name, account age and decoration, no child row (see the top of this file). Best effort: a store
   * that breaks the copy's assumptions (ids that are not integers, duplicate ids) or a full temp disk
   * leaves no copy, and passes simply read every row.
   */
  capture(slice: Slice = ALL_USERS, { lean = false }: { lean?: boolean } = {}): boolean {
    this.counts = undefined;
    this.countsStale = false;
    this.slice = slice;
    this.leanCopy = lean;
    const { sliced } = this;
    return this.savepoint(() => {
      const { db } = this;
      db.exec(`
        DROP TABLE IF EXISTS temp.shadow_users;
        DROP TABLE IF EXISTS temp.shadow_ids;
        DROP TABLE IF EXISTS temp.shadow_socials;
        ${Object.keys(SMALL_TABLES)
          .map((table) => `DROP TABLE IF EXISTS temp.shadow_${table};`)
          .join('\n')}
        CREATE TABLE temp.shadow_users (id INTEGER PRIMARY KEY, ${this.userColumns.join(', ')}, created_ms, ${AGE_PHASE});
        CREATE INDEX temp.shadow_users_age_phase ON shadow_users (age_phase);
        ${copyUsers(this.userColumns)}${sliced ? ` AND id IN (SELECT id FROM main.users WHERE ${sliceCondition(slice)})` : ''};
        ${sliced ? `CREATE TABLE temp.shadow_ids (id INTEGER PRIMARY KEY); ${COPY_IDS};` : ''}
        CREATE TABLE IF NOT EXISTS temp.pass_ids (id INTEGER PRIMARY KEY);
      `);
      if (!lean) this.copyChildRows();
      const users = db.prepare('SELECT count(*) FROM temp.shadow_users').pluck().get() as number;
      const socials = lean ? 0 : (db.prepare('SELECT count(*) FROM temp.shadow_socials').pluck().get() as number);
      this.counts = { users, socials };
    });
  }

  /** The columns of users the copy keeps. */
  private get userColumns(): readonly string[] {
    return this.leanCopy ? LEAN_USER_COLUMNS : USER_COLUMNS;
  }

  /** A whole copy's socials and small tables (after its users: a slice's copy takes its users' rows). */
  private copyChildRows(): void {
    const { sliced } = this;
    this.db.exec(`
      CREATE TABLE temp.shadow_socials (${SHADOW_SOCIALS});
      INSERT INTO temp.shadow_socials SELECT id, ${SOCIAL_COLUMNS.join(', ')} FROM main.socials${sliced ? ` WHERE user_id ${COPIED_USERS}` : ''};
      ${sliced ? 'CREATE INDEX temp.shadow_socials_user ON shadow_socials (user_id);' : ''}
    `);
    for (const table of Object.keys(SMALL_TABLES) as (keyof typeof SMALL_TABLES)[]) this.copySmall(table);
  }

  /** Forgets the copy (after a pass whose output did not commit, the copy no longer matches it). */
  discard(): void {
    this.counts = undefined;
  }

  /**
   * The users whose rows or child rows differ from the copy, or whose account age may turn over
   * between `sinceMs` (the copy's pass) and `atMs`; undefined when there is no copy, a lean one, or
   * that window runs backwards or is too wide to be worth it.
   */
  changes(sinceMs: number, atMs: number): StoreChanges | undefined {
    if (this.leanCopy) return undefined;
    const counts = this.freshCounts();
    const ages = ageWindow(sinceMs, atMs);
    if (counts === undefined || ages === undefined) return undefined;
    if (this.sliced) return this.slicedChanges(ages);
    const userRows = this.changedUserRows(counts.users, ages);
    // Ids past 2^53 read back rounded, so the changed row could not be named: read every row instead.
    if (!userRows.ids.every((id) => Number.isSafeInteger(id))) return undefined;
    const users = new Set<number>(userRows.ids);
    // Child rows whose user_id is not an integer never join a user (the pass matches strictly).
    const add = (value: unknown) => {
      if (typeof value === 'number' && Number.isSafeInteger(value)) users.add(value);
    };
    // A changed social row counts for the user it belongs to now and the one it belonged to.
    const socials = this.changedSocialRows(counts.socials);
    for (const [, now, before] of socials.rows) {
      add(now);
      add(before);
    }
    const small = this.changedSmallTables(add);
    this.pending = { users: userRows.total, socials: socials.total, socialIds: JSON.stringify(socials.rows.map((row) => row[0])), small };
    return { users, stableUntilMs: stableUntil(userRows.nextTurn) };
  }

  /**
   * `changes` for a copy of one slice (a shard), without a walk of the whole store: the copy's users
   * and socials are looked up by id in the store, and the users who entered the slice (new, renamed
   * into it, or back to a published status) are found by hashing the names from the username index.
   * A user who left the slice reads as changed: the pass, which reads only its slice, removes them.
   */
  private slicedChanges(ages: Record<string, number>): StoreChanges | undefined {
    const { db } = this;
    const [changed, turning, nextTurn] = db
      .prepare(
        `SELECT json_group_array(o.id) FILTER (WHERE m.id IS NULL OR ${differs(USER_COLUMNS)}),
        json_group_array(o.id) FILTER (WHERE ${AGE_TURNS}), min(${NEXT_AGE_TURN})
      FROM temp.shadow_users o LEFT JOIN main.users m ON m.id = o.id AND ${READ_STATUSES_M}`,
      )
      .raw()
      .get(ages) as [string, string, number | null];
    const entered = db
      .prepare(
        `SELECT e.id FROM (SELECT id FROM main.users WHERE ${sliceCondition(this.slice)} AND id NOT ${COPIED_USERS}) e
        CROSS JOIN main.users m ON m.id = e.id WHERE ${READ_STATUSES_M}`,
      )
      .pluck()
      .all() as number[];
    const ids = [...(JSON.parse(changed) as number[]), ...(JSON.parse(turning) as number[]), ...entered];
    if (!ids.every((id) => Number.isSafeInteger(id))) return undefined;
    const users = new Set<number>(ids);
    const add = (value: unknown) => {
      if (typeof value === 'number' && Number.isSafeInteger(value)) users.add(value);
    };
    const socials = this.slicedSocialRows();
    for (const [, now, before] of socials) {
      add(now);
      add(before);
    }
    const small = this.changedSmallTables(add);
    // A slice's copy never compares its counts with the store's: they stand as captured.
    const counts = this.counts!;
    this.pending = { ...counts, socialIds: JSON.stringify(socials.map((row) => row[0])), small };
    return { users, stableUntilMs: stableUntil(nextTurn) };
  }

  /** The copy's socials rows changed or gone, and the store's new rows of the copy's users: [id, user_id now, before]. */
  private slicedSocialRows(): [unknown, unknown, unknown][] {
    const changed = this.db
      .prepare(
        `SELECT o.id, m.user_id, o.user_id FROM temp.shadow_socials o LEFT JOIN main.socials m ON m.id = o.id
        WHERE m.id IS NULL OR ${differs(SOCIAL_COLUMNS)}`,
      )
      .raw()
      .all() as [unknown, unknown, unknown][];
    const added = this.db
      .prepare(
        `SELECT m.id, m.user_id, NULL FROM main.socials m WHERE m.user_id ${COPIED_USERS}
        AND m.id NOT IN (SELECT id FROM temp.shadow_socials)`,
      )
      .raw()
      .all() as [unknown, unknown, unknown][];
    return [...changed, ...added];
  }

  /**
   * One walk of users beside the copy finds changed and added rows, counts the matched ones, and
   * finds the unchanged ones whose age turns over (AGE_TURNS). Rows the copy has and the store no
   * longer publishes (removed, or now inactive) are looked for only when the counts say some exist.
   */
  private changedUserRows(copied: number, ages: Record<string, number>): { total: number; ids: number[]; nextTurn: number | null } {
    const { db } = this;
    const [total, matched, changed, turning, nextTurn] = db
      .prepare(
        `SELECT count(*), count(o.id),
        json_group_array(m.id) FILTER (WHERE o.id IS NULL OR ${differs(USER_COLUMNS)}),
        json_group_array(o.id) FILTER (WHERE o.id IS NOT NULL AND (${AGE_TURNS})),
        min(${NEXT_AGE_TURN})
      FROM main.users m LEFT JOIN temp.shadow_users o ON o.id = m.id WHERE ${READ_STATUSES_M}`,
      )
      .raw()
      .get(ages) as [number, number, string, string, number | null];
    const ids = [...(JSON.parse(changed) as number[]), ...(JSON.parse(turning) as number[])];
    if (copied > matched) {
      const gone = db
        .prepare(
          `SELECT o.id FROM temp.shadow_users o WHERE NOT EXISTS (SELECT 1 FROM main.users m WHERE m.id = o.id AND ${READ_STATUSES_M})`,
        )
        .pluck()
        .all() as number[];
      ids.push(...gone);
    }
    return { total, ids, nextTurn };
  }

  /** Changed, added and removed socials rows, likewise: [id, user_id now, user_id in the copy]. */
  private changedSocialRows(copied: number): { total: number; rows: [unknown, unknown, unknown][] } {
    const { db } = this;
    const [total, matched, changed] = db
      .prepare(
        `SELECT count(*), count(o.id), json_group_array(json_array(m.id, m.user_id, o.user_id)) FILTER (WHERE o.id IS NULL OR ${differs(SOCIAL_COLUMNS)})
      FROM main.socials m LEFT JOIN temp.shadow_socials o ON o.id = m.id`,
      )
      .raw()
      .get() as [number, number, string];
    const rows = JSON.parse(changed) as [unknown, unknown, unknown][];
    if (copied > matched) {
      const gone = db
        .prepare(
          'SELECT o.id, NULL, o.user_id FROM temp.shadow_socials o WHERE NOT EXISTS (SELECT 1 FROM main.socials m WHERE m.id = o.id)',
        )
        .raw()
        .all() as [unknown, unknown, unknown][];
      rows.push(...gone);
    }
    return { total, rows };
  }

  /** The small tables that differ from the copy; `add` gets the users each change reaches. */
  private changedSmallTables(add: (userId: unknown) => void): (keyof typeof SMALL_TABLES)[] {
    const { db } = this;
    const tables: (keyof typeof SMALL_TABLES)[] = [];
    for (const [table, columns] of Object.entries(SMALL_TABLES) as [keyof typeof SMALL_TABLES, string][]) {
      const changed = db
        .prepare(
          `SELECT * FROM (SELECT ${columns} FROM ${this.source(table)} EXCEPT SELECT ${columns} FROM temp.shadow_${table})
        UNION ALL SELECT * FROM (SELECT ${columns} FROM temp.shadow_${table} EXCEPT SELECT ${columns} FROM ${this.source(table)})`,
        )
        .raw()
        .all() as unknown[][];
      if (changed.length === 0) continue;
      tables.push(table);
      if (table !== 'decorations') {
        for (const row of changed) add(row[0]);
        continue;
      }
      // A changed decoration changes every profile wearing it.
      for (const id of this.wearers(changed.map((row) => row[0]))) add(id);
    }
    return tables;
  }

  /**
   * `changes` for a store known to be exactly as it was when the copy was taken (its stamp says so):
   * only the users whose account age may turn over, found in the copy alone, with no walk of the
   * store. This is what a watcher's quiet cycle costs with the wall clock as its snapshot time.
   */
  agesTurning(sinceMs: number, atMs: number): StoreChanges | undefined {
    const counts = this.counts;
    const ages = ageWindow(sinceMs, atMs);
    if (counts === undefined || ages === undefined) return undefined;
    const users = this.usersOfPhases(turningPhases(ages));
    if (!users.every((id) => Number.isSafeInteger(id))) return undefined;
    this.pending = { users: counts.users, socials: counts.socials, socialIds: '[]', small: [] };
    return { users: new Set(users), stableUntilMs: stableUntil(this.nextAgeTurn(ages.at!)) };
  }

  /**
   * `changes` from the store's change clock: the users it names (`changed`, since the copy's pass),
   * the wearers of the decorations it names, and the users whose account age may turn over, found in
   * the copy alone. No walk of the store, and for a shard no hash of any name but the changed users'.
   */
  followClock(changed: ClockChanges, sinceMs: number, atMs: number): StoreChanges | undefined {
    const turning = this.agesTurning(sinceMs, atMs);
    if (turning === undefined) return undefined;
    const { users } = turning;
    for (const id of this.ofThisCopy(changed.users)) if (Number.isSafeInteger(id)) users.add(id);
    if (changed.decorations.length > 0) for (const id of this.wearers(changed.decorations)) users.add(id);
    this.pending = { ...this.pending!, small: changed.decorations.length > 0 ? ['decorations'] : [], byUser: true };
    return turning;
  }

  /**
   * Of the users the clock names, those a slice's copy must read: the users it holds (they may have
   * left the slice) and those whose name now hashes into it (they may have entered); the others are
   * other shards' changes, which the pass would only look up to skip. All of them for a whole copy.
   */
  private ofThisCopy(ids: number[]): number[] {
    if (!this.sliced || ids.length === 0) return ids;
    return this.db
      .prepare(
        `SELECT c.value FROM json_each(?) c WHERE c.value ${COPIED_USERS}
        OR EXISTS (SELECT 1 FROM main.users m WHERE m.id = c.value AND ${sliceCondition(this.slice, 'm.username')})`,
      )
      .pluck()
      .all(JSON.stringify(ids)) as number[];
  }

  /**
   * The copy's users wearing one of these decorations (compared as text: a superset of the pass's own
   * matching, which is by exact value). A user who changed decoration is named by the clock itself.
   */
  private wearers(decorations: unknown[]): number[] {
    const ids = JSON.stringify(decorations.map((id) => String(id)));
    return this.db.prepare(`SELECT id FROM temp.shadow_users WHERE CAST(decoration_id AS TEXT) ${NAMED_IDS}`).pluck().all(ids) as number[];
  }

  /** The counts, recounted from the copy when a clock's update left them stale. */
  private freshCounts(): { users: number; socials: number } | undefined {
    if (this.counts === undefined || !this.countsStale) return this.counts;
    const users = this.db.prepare('SELECT count(*) FROM temp.shadow_users').pluck().get() as number;
    const socials = this.db.prepare('SELECT count(*) FROM temp.shadow_socials').pluck().get() as number;
    this.countsStale = false;
    return (this.counts = { users, socials });
  }

  /** Ids of the copy's users whose age phase lies in one of `phases`, or who have none (created_at unparsed). */
  private usersOfPhases(phases: [number, number][]): number[] {
    const select = this.db.prepare('SELECT id FROM temp.shadow_users WHERE age_phase BETWEEN ? AND ?').pluck();
    const users = this.db.prepare('SELECT id FROM temp.shadow_users WHERE age_phase IS NULL').pluck().all() as number[];
    for (const [first, last] of phases) for (const id of select.iterate(first, last) as Iterable<number>) users.push(id);
    return users;
  }

  /** min(NEXT_AGE_TURN) over the copy, from the index: the first age phase after `at`'s, else the first of the next day. */
  private nextAgeTurn(at: number): number | null {
    const phase = ((at % DAY_MS) + DAY_MS) % DAY_MS;
    const first = this.db.prepare('SELECT min(age_phase) FROM temp.shadow_users WHERE age_phase > ?').pluck();
    const later = first.get(phase) as number | null;
    if (later !== null) return at + later - phase;
    const earliest = this.db.prepare('SELECT min(age_phase) FROM temp.shadow_users').pluck().get() as number | null;
    return earliest === null ? null : at + DAY_MS + earliest - phase;
  }

  /** The copy's usernames of these users (those it has). */
  usernames(ids: Iterable<number>): Map<number, unknown> {
    const names = new Map<number, unknown>();
    const select = this.db.prepare('SELECT username FROM temp.shadow_users WHERE id = ?').pluck();
    for (const id of ids) {
      const name = select.get(id);
      if (name !== undefined) names.set(id, name);
    }
    return names;
  }

  /** Ids of the copy's users whose username is `name` ignoring ASCII letter case. */
  holders(name: string): number[] {
    return this.db.prepare('SELECT id FROM temp.shadow_users WHERE lower(username) = ?').pluck().all(name) as number[];
  }

  /**
   * Brings the copy up to the snapshot for the selected users and the changed tables that `changes`
   * found, so it again equals the store. If that fails, the copy is forgotten.
   */
  update(): void {
    const pending = this.pending;
    this.pending = undefined;
    if (pending === undefined || this.counts === undefined) {
      this.counts = undefined;
      return;
    }
    const { sliced } = this;
    this.savepoint(() => {
      this.db.exec(`
        DELETE FROM temp.shadow_users WHERE id ${READ_USERS};
        ${copyUsers(this.userColumns)} AND id ${READ_USERS}${sliced ? ` AND ${sliceCondition(this.slice)}` : ''};
        ${sliced ? `DELETE FROM temp.shadow_ids WHERE id ${READ_USERS}; ${COPY_IDS} WHERE id ${READ_USERS};` : ''}
      `);
      // A lean copy has no child rows to bring up to date.
      if (this.leanCopy) return void (this.counts = { users: pending.users, socials: 0 });
      this.recopySocials(pending.socialIds);
      const byUser = sliced || pending.byUser === true;
      if (byUser) this.recopyReadUsersChildren();
      for (const table of pending.small) if (!byUser || table === 'decorations') this.copySmall(table);
      this.counts = { users: pending.users, socials: pending.socials };
      if (pending.byUser === true && !sliced) this.countsStale = true;
    });
  }

  /** The socials rows `changes` found changed, copied again (for a slice's copy, those of its users). */
  private recopySocials(socialIds: string): void {
    if (socialIds === '[]') return;
    const ofCopiedUsers = this.sliced ? ` AND user_id ${COPIED_USERS}` : '';
    this.db.prepare(`DELETE FROM temp.shadow_socials WHERE id ${NAMED_IDS}`).run(socialIds);
    this.db
      .prepare(
        `INSERT INTO temp.shadow_socials SELECT id, ${SOCIAL_COLUMNS.join(', ')} FROM main.socials WHERE id ${NAMED_IDS}${ofCopiedUsers}`,
      )
      .run(socialIds);
  }

  /**
   * The child rows of the users just read (entering or leaving a slice's copy among them), copied
   * again for the users the copy holds now: a slice's copy, and a copy the change clock is followed
   * with (it names users, not rows). Only the users whose rows of a table differ from the copy's, or
   * who are not in a slice's copy (any more), are copied: most changes touch the users row alone,
   * and a write to the copy costs far more than the lookups that find none is needed. Driven by
   * the few read users (`+`: the copy's users only filter them): driven by the copy's users, SQLite
   * walked every socials row of the copy in each cycle.
   */
  private recopyReadUsersChildren(): void {
    const { sliced, db } = this;
    db.exec('CREATE TABLE IF NOT EXISTS temp.child_ids (id INTEGER PRIMARY KEY)');
    for (const table of ['socials', 'badges', 'bans'] as const) {
      const names = table === 'socials' ? ['id', ...SOCIAL_COLUMNS] : SMALL_TABLES[table].split(', ');
      const rows = (from: string) => `SELECT ${names.join(', ')} FROM ${from} WHERE user_id = p.id`;
      const left = sliced ? ` OR p.id NOT ${COPIED_USERS}` : '';
      // A whole copy, followed by the clock, gets these indexes the first time it needs them.
      db.exec(`CREATE INDEX IF NOT EXISTS temp.shadow_${table}_user ON shadow_${table} (user_id);
        DELETE FROM temp.child_ids;
        INSERT INTO temp.child_ids SELECT p.id FROM temp.pass_ids p
          WHERE EXISTS (${rows(`main.${table}`)} EXCEPT ${rows(`temp.shadow_${table}`)})
          OR EXISTS (${rows(`temp.shadow_${table}`)} EXCEPT ${rows(`main.${table}`)})${left};
        DELETE FROM temp.shadow_${table} WHERE user_id IN (SELECT id FROM temp.child_ids);
        INSERT OR REPLACE INTO temp.shadow_${table} SELECT ${names.map((name) => `s.${name}`).join(', ')}
        FROM temp.child_ids p CROSS JOIN main.${table} s ON s.user_id = p.id${sliced ? ` WHERE +p.id ${COPIED_USERS}` : ''}`);
    }
  }

  /** Whether the copy holds one slice of the users (a shard's) rather than all of them. */
  private get sliced(): boolean {
    return this.slice.count > 1;
  }

  /** Where a small table's rows come from: the store's table, or for a slice's copy its users' rows. */
  private source(table: keyof typeof SMALL_TABLES): string {
    if (!this.sliced || table === 'decorations') return `main.${table}`;
    return `(SELECT ${SMALL_TABLES[table]} FROM main.${table} WHERE user_id ${COPIED_USERS})`;
  }

  private copySmall(table: keyof typeof SMALL_TABLES): void {
    // A slice's copy updates its users' badges and bans by user (recopyReadUsersChildren).
    const byUser = this.sliced && table !== 'decorations';
    this.db.exec(`DROP TABLE IF EXISTS temp.shadow_${table};
      CREATE TABLE temp.shadow_${table} AS SELECT ${SMALL_TABLES[table]} FROM ${this.source(table)};
      ${byUser ? `CREATE INDEX temp.shadow_${table}_user ON shadow_${table} (user_id);` : ''}`);
  }

  /**
   * Runs `work` so that a failure undoes only its own changes; the copy is forgotten then. Called at
   * the end of a pass (capture, update), once every row of the pass's snapshot has been read.
   */
  private savepoint(work: () => void): boolean {
    const { db } = this;
    db.exec('SAVEPOINT shadow');
    try {
      work();
      db.exec('RELEASE shadow');
      this.failure = undefined;
      return true;
    } catch (cause) {
      if (db.inTransaction) {
        db.exec('ROLLBACK TO shadow');
        db.exec('RELEASE shadow');
      } else {
        // On some errors (SQLITE_FULL from a full temporary folder, IOERR, NOMEM) SQLite ends the
        // whole transaction, savepoint included: rolling back to it failed, and with it every cycle.
        // The pass has read all its rows, so a new transaction only lets the caller end its own.
        db.exec('BEGIN');
      }
      this.counts = undefined;
      this.failure = cause;
      return false;
    }
  }
}
