/**
 * `store track` and `store untrack` through the real CLI on real SQLite files: what they install and
 * record, that they are idempotent, and every refusal (its exit code, and the store left as it was).
 * The clock's exactness under a writing platform is fuzzed in test/fuzz/clock.test.ts.
 */
import Database from 'better-sqlite3';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/core/errors.js';
import type { ChangeSource } from '../../src/incremental/selection.js';
import { formatCycle } from '../../src/watch/format.js';
import type { CycleStatus } from '../../src/watch/status.js';
import { REPO } from '../helpers/paths.js';
import { canMount, mountTmpfs, sh } from '../helpers/mount.js';
import { runCli } from '../helpers/process.js';
import { eachTestWorkspace, execSql, sampleStore } from '../helpers/store.js';

let db: string;
let dir: string;
eachTestWorkspace(
  (w) => {
    db = w.db;
    dir = w.dir.path;
  },
  { fill: sampleStore },
);

const changed = (file: string) =>
  new Database(file, { readonly: true }).prepare('SELECT user_id FROM profile_snapshot_users_changed ORDER BY user_id').pluck().all();
const schemaOf = (file: string) =>
  new Database(file, { readonly: true })
    .prepare("SELECT type, name, sql FROM sqlite_schema WHERE name GLOB 'profile_snapshot_*' ORDER BY name")
    .all();

describe('store track', () => {
  it('installs once; a second run changes nothing; untrack removes every object, and again changes nothing', () => {
    const first = runCli(['store', 'track', '--db', db, '--json']);
    expect(first.code, first.stderr).toBe(0);
    const report = JSON.parse(first.stdout) as { changed: boolean; epoch: string; triggers: number };
    expect(report).toMatchObject({ changed: true, triggers: expect.any(Number) });
    expect(first.stderr).toContain(`installed the change clock in ${db} (epoch ${report.epoch}`);
    const installed = schemaOf(db);
    const again = runCli(['store', 'track', '--db', db, '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ changed: false, epoch: report.epoch });
    expect(schemaOf(db)).toEqual(installed);

    expect(runCli(['store', 'untrack', '--db', db]).stderr).toContain('removed the change clock');
    expect(schemaOf(db)).toEqual([]);
    const none = runCli(['store', 'untrack', '--db', db]);
    expect(none.code).toBe(0);
    expect(none.stderr).toContain('there is no change clock in');
    // Installed again: another epoch, so a reader falls back once.
    const third = JSON.parse(runCli(['store', 'track', '--db', db, '--json']).stdout) as { epoch: string };
    expect(third.epoch).not.toBe(report.epoch);
  });

  it('records published changes, REPLACE deletes included, and nothing for private columns', () => {
    expect(runCli(['store', 'track', '--db', db]).code).toBe(0);
    execSql(db, "UPDATE users SET last_login_ip = '10.1.1.1', email = 'x@y.invalid' WHERE id = 1");
    execSql(db, 'UPDATE users SET username = username, bio = bio WHERE id = 2'); // an ORM's save, nothing changed
    expect(changed(db)).toEqual([]);
    execSql(db, 'UPDATE users SET views = views + 1 WHERE id = 3');
    // A new user under user 4's name, through REPLACE: user 4 is deleted without a delete trigger.
    const name = new Database(db, { readonly: true }).prepare('SELECT username FROM users WHERE id = 4').pluck().get() as string;
    execSql(
      db,
      `PRAGMA foreign_keys = OFF; INSERT OR REPLACE INTO users (id, username, display_name, bio, created_at, views, status)
       VALUES (900, '${name.toUpperCase()}', 'New', '', '2024-01-01 00:00:00', 0, 'active')`,
    );
    execSql(db, "UPDATE decorations SET name = name || '!' WHERE rowid = 1");
    expect(changed(db)).toEqual([3, 4, 900]);
    const decorations = new Database(db, { readonly: true })
      .prepare('SELECT count(*) FROM profile_snapshot_decorations_changed')
      .pluck()
      .get();
    expect(decorations).toBe(1);
  });

  it('--print-sql shows every statement for this store and writes nothing', () => {
    const printed = runCli(['store', 'track', '--db', db, '--print-sql']);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain('CREATE TABLE profile_snapshot_clock');
    expect(printed.stdout).toContain('CREATE TRIGGER profile_snapshot_users_replace_0_insert BEFORE INSERT ON users');
    expect(printed.stdout).not.toMatch(/UPDATE OF[^\n]*(email|password_hash|last_login_ip)/);
    expect(schemaOf(db)).toEqual([]);
    expect(runCli(['store', 'track', '--help']).stdout).toContain('--print-sql');
    // docs/change-clock.md shows the same SQL, for the same schema.
    const docs = readFileSync(join(REPO, 'docs/change-clock.md'), 'utf8');
    const shown = /## The whole SQL, for the sample store\n\n```sql\n([\s\S]*?)```/.exec(docs)?.[1];
    expect(shown?.trim()).toBe(printed.stdout.trim());
  });

  it('a cycle that could not follow the clock says why in its line', () => {
    const cycle = { number: 7, ok: true, changed: true, durationMs: 1200, profiles: 3, creators: 2, skipped: 0, warnings: 0 };
    const files = { written: 2, unchanged: 5, removed: 0 };
    const line = (changes: ChangeSource) => formatCycle({ ...cycle, files, changes } as unknown as CycleStatus);
    expect(line({ by: 'comparison', clockFallback: 'the change clock was removed' })).toContain(
      '; the change clock was removed: compared the whole store;',
    );
    expect(line({ by: 'every row', clockFallback: 'the change clock cannot be read: x' })).toContain('x: read the whole store;');
    expect(line({ by: 'clock', clockFallback: null })).not.toContain('whole store');
  });

  it('refuses a file that is not a profile store (exit 3), and a clock of another format (exit 15), changing nothing', () => {
    const other = join(dir, 'other.db');
    execSql(other, 'CREATE TABLE notes (id INTEGER PRIMARY KEY)');
    const notStore = runCli(['store', 'track', '--db', other]);
    expect(notStore.code).toBe(ExitCode.store);
    expect(notStore.stderr).toMatch(/schema drift.*missing table "users"/);
    expect(schemaOf(other)).toEqual([]);

    expect(runCli(['store', 'track', '--db', db]).code).toBe(0);
    execSql(db, 'UPDATE profile_snapshot_clock SET format = 2');
    const before = readFileSync(db);
    for (const command of ['track', 'untrack']) {
      const refused = runCli(['store', command, '--db', db]);
      expect(refused.code, refused.stderr).toBe(ExitCode.clockFormat);
      expect(refused.stderr).toContain('holds a change clock this version cannot use (its format is 2');
    }
    expect(readFileSync(db).equals(before)).toBe(true);
  });

  it('a build follows the clock from its out dir: it reads the users that changed, and says why when it cannot', () => {
    const out = join(dir, 'dist');
    expect(runCli(['store', 'track', '--db', db]).code).toBe(0);
    const build = () => {
      const result = runCli(['build', '--db', db, '--out', out, '--json'], { env: { SOURCE_DATE_EPOCH: '1767225600' } });
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as { rowsRead: number; warnings: unknown[]; changes: { by: string; clockFallback: string | null } };
    };
    const first = build();
    expect(first.changes).toEqual({ by: 'every row', clockFallback: null });
    execSql(db, 'UPDATE users SET views = views + 1 WHERE id IN (1, 2)');
    const second = build();
    expect(second.changes).toEqual({ by: 'clock', clockFallback: null });
    // The two users, and the rows with warnings (read by every pass), nothing else.
    expect(second.rowsRead).toBeLessThan(first.rowsRead);
    expect(runCli(['store', 'untrack', '--db', db]).code).toBe(0);
    execSql(db, 'UPDATE users SET views = views + 1 WHERE id = 3');
    expect(build().changes).toEqual({ by: 'every row', clockFallback: 'the change clock was removed' });
  });

  it.skipIf(!canMount)('refuses a store it cannot write (exit 14), on a read-only mount', () => {
    const mount = mountTmpfs(join(dir, 'ro'), '8m');
    try {
      copyFileSync(db, join(mount, 'profiles.db'));
      expect(sh('mount', '-o', 'remount,ro', mount).status).toBe(0);
      const refused = runCli(['store', 'track', '--db', join(mount, 'profiles.db')]);
      expect(refused.code, refused.stderr).toBe(ExitCode.storeReadOnly);
      expect(refused.stderr).toContain('cannot write the profile store');
      expect(refused.stderr).toContain('its primary');
    } finally {
      sh('umount', '-l', mount);
    }
  });
});
