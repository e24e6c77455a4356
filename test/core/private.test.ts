/**
 * Private columns (users.email, password_hash, last_login_ip) never reach any output file, log line
 * or report, and no query even reads them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/process.js';
import { listFiles } from '../helpers/output.js';
import { SCHEMA_SQL, tempDir, TestStore } from '../helpers/store.js';

let dir: ReturnType<typeof tempDir>;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => dir.cleanup());

const canary = (column: string, id: number) => `CANARY-${column}-${id}-f3a9c1`;

describe('private-column canary', () => {
  it('appears in no output file, no log line and no report, whatever the row', () => {
    const db = join(dir.path, 'profiles.db');
    const store = new TestStore(db);
    const rows: [string, string][] = [
      ['Active1', 'active'],
      ['susp', 'suspended'],
      ['banned1', 'banned'],
      ['gone', 'deleted'],
      ['idle', 'inactive'],
      ['bad name', 'active'],
      ['.dot', 'active'],
      ['odd', 'weird'],
    ];
    rows.forEach(([username, status], i) => {
      const id = i + 1;
      store.user({
        id,
        username,
        status,
        email: canary('email', id),
        password_hash: canary('password_hash', id),
        last_login_ip: canary('last_login_ip', id),
      });
    });
    // Warnings of every kind on top: bad date, bad social, dangling decoration, missing ban row.
    store.user({
      id: 50,
      username: 'baddate',
      created_at: 'never',
      email: canary('email', 50),
      password_hash: canary('password_hash', 50),
      last_login_ip: canary('last_login_ip', 50),
    });
    store.user({
      id: 51,
      username: 'links',
      decoration_id: 'nope',
      email: canary('email', 51),
      password_hash: canary('password_hash', 51),
      last_login_ip: canary('last_login_ip', 51),
    });
    store.social(1, 51, 'x', 'javascript:void(0)', 1);
    store.close();

    const out = join(dir.path, 'dist');
    const results = [
      runCli(['build', '--db', db, '--out', out, '--json']),
      runCli(['build', '--db', db, '--out', out, '--json', '--strict']),
    ];
    expect(results.map((r) => r.code)).toEqual([0, 4]);
    const everything = [
      ...results.flatMap((r) => [r.stdout, r.stderr]),
      ...listFiles(out).map((f) => readFileSync(join(out, f), 'utf8')),
    ].join('\n');
    expect(everything).toContain('Active1'); // the haystack is real
    expect(everything).not.toMatch(/CANARY-/);
  });

  it('the build never reads a private column: reading one would fail this store', () => {
    // The store without its private columns, filled, then the private columns added as generated
    // columns that raise an error whenever a query reads them (SQLite computes them on read).
    const withoutPrivate = SCHEMA_SQL.replace(
      /,\s*email\s+TEXT NULL,.*\n\s*password_hash\s+TEXT NULL,.*\n\s*last_login_ip\s+TEXT NULL.*\n/,
      '\n',
    );
    expect(withoutPrivate).not.toContain('password_hash');
    const db = join(dir.path, 'trapped.db');
    const store = new TestStore(db, withoutPrivate);
    store.db
      .prepare(
        "INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES (1, 'u', 'U', '', '2020-01-01 00:00:00', 1, 'active')",
      )
      .run();
    store.db
      .prepare(
        "INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES (2, 's', 'S', '', '2020-01-01 00:00:00', 1, 'suspended')",
      )
      .run();
    for (const column of ['email', 'password_hash', 'last_login_ip']) {
      store.exec(`ALTER TABLE users ADD COLUMN ${column} TEXT GENERATED ALWAYS AS (json('read of a private column ' || id)) VIRTUAL`);
    }
    // The trap works: any read of the column fails.
    expect(() => store.db.prepare('SELECT email FROM users').all()).toThrow(/malformed JSON/);
    store.close();
    const result = runCli(['build', '--db', db, '--out', join(dir.path, 'dist')]);
    expect(result.stderr).not.toContain('malformed');
    expect(result.code).toBe(0);
  });
});
