/**
 * The tables and columns docs/store.md names. A store missing any of them is not
 * the store the contract describes, so we refuse it (exit 3) and name what is missing rather than
 * publish something subtly wrong. Private columns are checked for presence only (PRAGMA table_xinfo
 * never reads a value); no query ever selects them.
 */
import type Database from 'better-sqlite3';
import { storeError } from '../core/errors.js';

export const CONTRACT_SCHEMA: Readonly<Record<string, readonly string[]>> = {
  users: [
    'id',
    'username',
    'display_name',
    'bio',
    'custom_domain',
    'created_at',
    'views',
    'status',
    'decoration_id',
    'email',
    'password_hash',
    'last_login_ip',
  ],
  decorations: ['id', 'name', 'file'],
  badges: ['user_id', 'badge'],
  socials: ['id', 'user_id', 'platform', 'url', 'position'],
  bans: ['user_id', 'message', 'reason', 'banned_at'],
};

/**
 * The users rows a build reads at all (SQL condition): statuses that never publish anything (inactive,
 * deleted) are left in the store. The pass's query and the watcher's copy (shadow.ts) both use it.
 */
export const READ_STATUSES = "(status IS NULL OR status NOT IN ('inactive', 'deleted'))";

/** Throws a store error (exit 3) naming every missing table and column. */
export function checkSchema(db: Database.Database, file: string): void {
  const missing: string[] = [];
  const tableInfo = db.prepare<[string], { name: string }>('SELECT name FROM pragma_table_xinfo(?)');
  for (const [table, columns] of Object.entries(CONTRACT_SCHEMA)) {
    const present = new Set(tableInfo.all(table).map((c) => c.name.toLowerCase()));
    if (present.size === 0) {
      missing.push(`table "${table}"`);
      continue;
    }
    for (const column of columns) if (!present.has(column)) missing.push(`column "${table}.${column}"`);
  }
  if (missing.length > 0) {
    throw storeError(
      `schema drift in ${file}: missing ${missing.join(', ')}`,
      "point --db at a profile store that follows profile-snapshot's docs/store.md, or update the store's schema",
    );
  }
}
