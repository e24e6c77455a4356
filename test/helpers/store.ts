/**
 * Real SQLite stores in temporary folders, written to the contract's schema (data/schema.sql), with
 * helpers to add rows. Never a mocked database.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { REPO } from './paths.js';

export { REPO };
export const SCHEMA_SQL = readFileSync(join(REPO, 'data/schema.sql'), 'utf8');
export const SAMPLE_SQL = readFileSync(join(REPO, 'data/sample.sql'), 'utf8');

export interface UserRow {
  id: number;
  username: string;
  display_name?: unknown;
  bio?: unknown;
  custom_domain?: unknown;
  created_at?: unknown;
  views?: unknown;
  status?: string;
  decoration_id?: string | null;
  email?: string | null;
  password_hash?: string | null;
  last_login_ip?: string | null;
}

/** One user of `TestStore.users`: its row (the id is given) and its child rows. */
export interface BulkUser {
  user: Omit<UserRow, 'id'>;
  badges?: string[];
  /** [platform, url, position] */
  socials?: [string, string, number][];
  /** [message, reason, banned_at] */
  ban?: [string | null, string | null, string];
}

const INSERT_USER = `INSERT INTO users (id, username, display_name, bio, custom_domain, created_at, views, status, decoration_id, email, password_hash, last_login_ip)
  VALUES (@id, @username, @display_name, @bio, @custom_domain, @created_at, @views, @status, @decoration_id, @email, @password_hash, @last_login_ip)`;

function withDefaults(row: UserRow): Required<UserRow> {
  return {
    display_name: `Name ${row.id}`,
    bio: '',
    custom_domain: null,
    created_at: '2020-01-01 00:00:00',
    views: 0,
    status: 'active',
    decoration_id: null,
    email: null,
    password_hash: null,
    last_login_ip: null,
    ...row,
  };
}

/** The username of bulk store user `id`: user00001... (see TestStore.users). */
export const userName = (id: number): string => `user${String(id).padStart(5, '0')}`;

/** A temp folder removed by `cleanup()`; tests create one per case. */
export function tempDir(prefix = 'profile-snapshot-test-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

export interface Workspace {
  dir: ReturnType<typeof tempDir>;
  /** `profiles.db` in the folder, written by `fill` when one is given. */
  db: string;
  /** `dist` in the folder (or `out`), not created. */
  out: string;
}

/**
 * Registers hooks that give each test of the file a fresh temp folder with a store path and an out
 * path, handed to `use`, and remove it after the test. Call it before the file's own afterEach hooks
 * (vitest runs after-hooks last-registered first, so those still see the folder).
 */
export function eachTestWorkspace(
  use: (workspace: Workspace) => void,
  options: { fill?: (db: string) => void; out?: string; prefix?: string } = {},
): void {
  let dir: ReturnType<typeof tempDir> | undefined;
  beforeEach(() => {
    dir = tempDir(options.prefix);
    const workspace = { dir, db: join(dir.path, 'profiles.db'), out: join(dir.path, options.out ?? 'dist') };
    options.fill?.(workspace.db);
    use(workspace);
  });
  afterEach(() => dir?.cleanup());
}

/** `fill` for eachTestWorkspace: the sample store (data/sample.sql). */
export const sampleStore = (db: string): void => TestStore.sample(db).close();

/** Runs SQL on a store through its own connection, as the platform's writers would (busy timeout included). */
export function execSql(db: string, sql: string, ...params: unknown[]): void {
  const handle = new Database(db);
  handle.pragma('busy_timeout = 5000');
  try {
    if (params.length > 0) handle.prepare(sql).run(...params);
    else handle.exec(sql);
  } finally {
    handle.close();
  }
}

export class TestStore {
  readonly db: Database.Database;

  constructor(
    readonly file: string,
    schemaSql: string = SCHEMA_SQL,
  ) {
    this.db = new Database(file);
    this.db.pragma('foreign_keys = OFF');
    this.db.exec(schemaSql);
  }

  static sample(file: string): TestStore {
    const store = new TestStore(file);
    store.db.exec(SAMPLE_SQL);
    return store;
  }

  user(row: UserRow): this {
    this.db.prepare(INSERT_USER).run(withDefaults(row));
    return this;
  }

  /**
   * Users 1..`count` in one transaction, each with the child rows `rowsOf` gives (socials get ids in
   * insertion order): the bulk stores of the watch and fault suites.
   */
  users(count: number, rowsOf: (id: number) => BulkUser): this {
    const user = this.db.prepare(INSERT_USER);
    const badge = this.db.prepare('INSERT INTO badges (user_id, badge) VALUES (?, ?)');
    const social = this.db.prepare('INSERT INTO socials (user_id, platform, url, position) VALUES (?, ?, ?, ?)');
    const ban = this.db.prepare('INSERT INTO bans (user_id, message, reason, banned_at) VALUES (?, ?, ?, ?)');
    this.db.transaction(() => {
      for (let id = 1; id <= count; id++) {
        const rows = rowsOf(id);
        user.run(withDefaults({ ...rows.user, id }));
        for (const name of rows.badges ?? []) badge.run(id, name);
        for (const [platform, url, position] of rows.socials ?? []) social.run(id, platform, url, position);
        if (rows.ban) ban.run(id, ...rows.ban);
      }
    })();
    return this;
  }

  badge(userId: number, badge: string): this {
    this.db.prepare('INSERT INTO badges (user_id, badge) VALUES (?, ?)').run(userId, badge);
    return this;
  }

  social(id: number, userId: number, platform: string, url: string, position: number): this {
    this.db
      .prepare('INSERT INTO socials (id, user_id, platform, url, position) VALUES (?, ?, ?, ?, ?)')
      .run(id, userId, platform, url, position);
    return this;
  }

  ban(userId: number, message: string | null, reason: string | null, bannedAt: string): this {
    this.db.prepare('INSERT INTO bans (user_id, message, reason, banned_at) VALUES (?, ?, ?, ?)').run(userId, message, reason, bannedAt);
    return this;
  }

  decoration(id: string, name: string, file: string): this {
    this.db.prepare('INSERT INTO decorations (id, name, file) VALUES (?, ?, ?)').run(id, name, file);
    return this;
  }

  exec(sql: string): this {
    this.db.exec(sql);
    return this;
  }

  close(): void {
    this.db.close();
  }
}
