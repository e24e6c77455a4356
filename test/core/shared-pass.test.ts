/**
 * A full pass of a large store is shared between threads (src/pass/threads.ts), each reading one
 * share of the users by name. Whatever the threads, the output must be the same bytes: checked
 * through the compiled CLI (the thread module exists only there), against a one-thread build of the
 * same store, with the data that makes shares delicate (case-insensitive duplicates, warnings,
 * list members kept from the last list on a rebuild).
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sliceOf } from '../../src/core/slice.js';
import { commitMark } from '../../src/store/stamp.js';
import { MANIFEST_FILE } from '../../src/core/layout.js';
import { SHARE_FROM, SHARE_REBUILD_BELOW_BYTES } from '../../src/pass/threads.js';
import { publishedFiles } from '../helpers/output.js';
import { runCli, runCliAsync, startNode } from '../helpers/process.js';
import { eachTestWorkspace, execSql, SCHEMA_SQL, TestStore, type Workspace } from '../helpers/store.js';

const USERS = SHARE_FROM + 2000;
/**
 * Four CLI builds of that store: 12-18 s on Node 26 here, up to 31 s on Node 22 and 24 with other
 * test files beside them, past vitest's 30 s default.
 */
const FOUR_BUILDS_MS = 120_000;
/** The schema without UNIQUE COLLATE NOCASE, so names equal but for case can coexist. */
const SCHEMA_NOT_UNIQUE = SCHEMA_SQL.replace('TEXT NOT NULL UNIQUE COLLATE NOCASE', 'TEXT NOT NULL');

let dir: Workspace['dir'];
eachTestWorkspace((workspace) => ({ dir } = workspace));

function bigStore(file: string): void {
  if (SCHEMA_NOT_UNIQUE === SCHEMA_SQL) throw new Error('schema changed: update SCHEMA_NOT_UNIQUE');
  const store = new TestStore(file, SCHEMA_NOT_UNIQUE);
  store.decoration('halo', 'Halo', 'halo.png');
  store.users(USERS, (id) => ({
    user: {
      // Every 997th user repeats an earlier user's name in upper case: the lower id keeps it.
      username: id % 997 === 0 ? `U${(id - 500) * 31}x`.toUpperCase() : id % 1009 === 0 ? `bad name ${id}` : `u${id * 31}x`,
      bio: id % 3 === 0 ? `Bio ${id} ✨` : '',
      status: id % 7 === 0 ? 'suspended' : id % 11 === 0 ? 'inactive' : 'active',
      views: id,
      created_at: id % 1013 === 0 ? 'not a date' : `2020-01-${String(1 + (id % 28)).padStart(2, '0')} 10:00:00`,
      decoration_id: id % 5 === 0 ? 'halo' : null,
    },
    badges: id % 6 === 0 ? ['verified'] : [],
    socials: id % 4 === 0 ? [['GitHub', `https://github.com/u${id}`, 1]] : [],
    ban: id % 7 === 0 ? ['Paused', 'spam', '2024-05-01 00:00:00'] : undefined,
  }));
  store.close();
}

function buildWith(db: string, out: string, threads: number) {
  const result = runCli(['build', '--db', db, '--out', out, '--threads', String(threads), '--json'], {
    env: { SOURCE_DATE_EPOCH: '1767225600' },
    timeoutMs: 120_000,
  });
  expect(result.stderr).not.toContain('a pass thread');
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
}

/** The big store, and the out dirs of its builds on one thread and on two. */
function bigStoreAndTwoOutDirs(): { db: string; one: string; two: string } {
  const db = join(dir.path, 'profiles.db');
  bigStore(db);
  return { db, one: join(dir.path, 'one'), two: join(dir.path, 'two') };
}

function expectSameTrees(a: string, b: string): void {
  const files = publishedFiles(a);
  expect(publishedFiles(b)).toEqual(files);
  for (const file of files) {
    if (readFileSync(join(a, file), 'utf8') !== readFileSync(join(b, file), 'utf8')) throw new Error(`${file} differs`);
  }
}

/** The report without what legitimately differs between the two builds. */
const comparable = ({ out: _out, seconds: _seconds, threads: _threads, notices: _notices, ...rest }: Record<string, unknown>) => rest;

describe('a full pass shared between threads', () => {
  it(
    'writes the same bytes and reports the same as one thread, cold and on a rebuild',
    () => {
      const { db, one, two } = bigStoreAndTwoOutDirs();

      const cold = [buildWith(db, one, 1), buildWith(db, two, 2)];
      expect(cold[0].threads).toBe(1);
      expect(cold[1].threads).toBe(2);
      expect(comparable(cold[1])).toEqual(comparable(cold[0]));
      expect(cold[0].warnings.length).toBeGreaterThan(20); // duplicates, bad names, bad dates
      expectSameTrees(one, two);

      // A rebuild: most rows kept (list members copied from the last list), some changed, renamed,
      // removed or newly suspended.
      execSql(db, "UPDATE users SET views = views + 1 WHERE id % 100 = 0; UPDATE users SET username = username || 'r' WHERE id % 503 = 0");
      const removed = 'user_id % 401 = 0';
      execSql(db, `DELETE FROM socials WHERE ${removed}; DELETE FROM badges WHERE ${removed}; DELETE FROM bans WHERE ${removed}`);
      execSql(db, "DELETE FROM users WHERE id % 401 = 0; UPDATE users SET status = 'suspended' WHERE id % 409 = 0");
      const rebuilt = [buildWith(db, one, 1), buildWith(db, two, 2)];
      expect(rebuilt[1].threads).toBe(2);
      expect(comparable(rebuilt[1])).toEqual(comparable(rebuilt[0]));
      expect(rebuilt[1].files.unchanged).toBeGreaterThan(rebuilt[1].files.written);
      expectSameTrees(one, two);
    },
    FOUR_BUILDS_MS,
  );

  it(
    'keeps a rebuild on one thread when the last manifest is as large as half a million profiles',
    () => {
      const { db, one, two } = bigStoreAndTwoOutDirs();
      buildWith(db, one, 1);
      expect(buildWith(db, two, 2).threads).toBe(2);
      // That large in bytes: blank lines, which the reader skips.
      appendFileSync(join(two, MANIFEST_FILE), '\n'.repeat(SHARE_REBUILD_BELOW_BYTES));
      execSql(db, 'UPDATE users SET views = views + 1 WHERE id % 100 = 0');
      const rebuilt = [buildWith(db, one, 1), buildWith(db, two, 2)];
      expect(rebuilt[1].threads).toBe(1);
      expect(comparable(rebuilt[1])).toEqual(comparable(rebuilt[0]));
      expectSameTrees(one, two);
    },
    FOUR_BUILDS_MS,
  );

  it("fails on a foreign file in another thread's share, as one thread would, leaving the tree as it was", () => {
    const db = join(dir.path, 'profiles.db');
    bigStore(db);
    const out = join(dir.path, 'out');
    buildWith(db, out, 2);
    const before = publishedFiles(out);
    // A new user in the other thread's share, whose file someone else already put there.
    let n = 0;
    while (sliceOf(`newcomer${n}`, 2) !== 1) n++;
    execSql(
      db,
      `INSERT INTO users (id, username, display_name, bio, created_at, status) VALUES (${USERS + 1}, 'newcomer${n}', 'New', '', '2020-01-01 00:00:00', 'active')`,
    );
    writeFileSync(join(out, 'api/v1/users', `newcomer${n}`), 'not ours');
    execSql(db, 'UPDATE users SET views = views + 1 WHERE id % 50 = 0');

    const result = runCli(['build', '--db', db, '--out', out, '--threads', '2'], {
      env: { SOURCE_DATE_EPOCH: '1767225600' },
      timeoutMs: 120_000,
    });
    expect(result.code).toBe(5);
    expect(result.stderr).toContain(`refusing to overwrite ${join(out, 'api/v1/users', `newcomer${n}`)}`);
    expect(publishedFiles(out)).toEqual([...before, `api/v1/users/newcomer${n}`].sort());
  });
});

describe('one snapshot for every thread', () => {
  // Four builds, the last beside a writer that keeps a core busy: 33 s on Node 22 in a CI run.
  it(
    'when the store commits while the threads start, this thread reads every share itself',
    async () => {
      const db = join(dir.path, 'profiles.db');
      bigStore(db);
      execSql(db, 'PRAGMA journal_mode = WAL; CREATE TABLE noise (n INTEGER)');
      // A rebuild: this thread first reads only its own share of the last build's entries.
      const busy = join(dir.path, 'busy');
      buildWith(db, busy, 2);
      execSql(db, 'UPDATE users SET views = views + 1 WHERE id % 100 = 0');
      const quiet = join(dir.path, 'quiet');
      buildWith(db, quiet, 1);
      // A writer committing all the time, to a table the API does not read: every commit moves the
      // store's commit mark, so no other thread can be proven to read this thread's snapshot, while
      // the output stays what it was.
      const writer = startNode([
        '-e',
        `const db = new (require('better-sqlite3'))(${JSON.stringify(db)}); db.pragma('busy_timeout = 5000'); const add = db.prepare('INSERT INTO noise VALUES (1)'); console.error('writing'); for (;;) add.run();`,
      ]);
      try {
        await writer.waitForStderr(/writing/);
        const result = await runCliAsync(['build', '--db', db, '--out', busy, '--threads', '2', '--json'], {
          env: { SOURCE_DATE_EPOCH: '1767225600' },
        });
        expect(result.code, result.stderr).toBe(0);
        const report = JSON.parse(result.stdout);
        expect(report.threads).toBe(1);
        // Only the changed rows, in either share: the other share's last entries were read too.
        expect(report.rendered).toBeLessThan(report.profiles / 10);
        expectSameTrees(quiet, busy);
      } finally {
        await writer.stop();
      }
    },
    FOUR_BUILDS_MS,
  );
});

describe('the commit mark that proves one snapshot', () => {
  for (const mode of ['wal', 'delete'] as const) {
    it(`changes with every commit and with nothing else (${mode} journal)`, () => {
      const db = join(dir.path, `mark-${mode}.db`);
      const store = new TestStore(db);
      store.db.pragma(`journal_mode = ${mode}`);
      store.user({ id: 1, username: 'alice' });
      const first = commitMark(db);
      store.db.prepare('SELECT count(*) FROM users').get();
      expect(commitMark(db)).toBe(first);
      store.user({ id: 2, username: 'bob' });
      const second = commitMark(db);
      expect(second).not.toBe(first);
      store.db.prepare('UPDATE users SET views = 1 WHERE id = 1').run();
      expect(commitMark(db)).not.toBe(second);
      store.close();
    });
  }
});
