/**
 * A long-lived reader (the watcher's StoreSession) reads only the users whose rows changed since its
 * last pass, found by SQLite comparing the store with the session's copy of the last snapshot, and
 * carries every other profile over. Whatever it publishes must be exactly what a fresh build of the
 * same store publishes: each case checks the tree, byte for byte, and the report against one.
 */
import Database from 'better-sqlite3';
import { copyFileSync, linkSync, mkdirSync, readFileSync, renameSync, rmdirSync, rmSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BuildOptions, BuildReport } from '../../src/build.js';
import { StrictWarningsError } from '../../src/core/errors.js';
import { CREATORS_FILE, CREATORS_GZIP_FILE, MANIFEST_FILE } from '../../src/core/layout.js';
import { StoreSession } from '../../src/incremental/session.js';
import { StoreShadow } from '../../src/store/shadow.js';
import { trackStore, untrackStore } from '../../src/store/clock-install.js';
import { buildTo, SNAPSHOT_MS } from '../helpers/build.js';
import { profile, publishedFiles } from '../helpers/output.js';
import { eachTestWorkspace, execSql, SCHEMA_SQL, TestStore, type Workspace } from '../helpers/store.js';

const HOUR = 3_600_000;
const USERS = 40;
/** Users the store's filter lets through (inactive and deleted rows are never read). */
const CANDIDATES = USERS;

let dir: Workspace['dir'];
let db: string;
let out: string;
let session: StoreSession;

/**
 * A clean store (no warnings), without the UNIQUE NOCASE constraint on usernames (which the contract
 * allows a store to lack) so that names can collide. Every third user is suspended; names are out of
 * id order; users are created on the hour, never at midnight (the snapshot time of day).
 */
function cleanStore(file: string): void {
  const store = new TestStore(file, SCHEMA_SQL.replace('TEXT NOT NULL UNIQUE COLLATE NOCASE', 'TEXT NOT NULL'));
  store.decoration('halo', 'Halo', 'halo.png');
  for (let id = 1; id <= USERS; id++) {
    store.user({
      id,
      username: `user${(id * 7) % USERS}x${id}`,
      bio: `Bio ${id} ✨`,
      status: id % 3 === 0 ? 'suspended' : 'active',
      views: id,
      created_at: `2020-01-${String(1 + (id % 28)).padStart(2, '0')} ${String(1 + (id % 23)).padStart(2, '0')}:00:00`,
      decoration_id: id % 5 === 0 ? 'halo' : null,
    });
    if (id % 4 === 0) store.social(id, id, 'GitHub', `https://github.com/u${id}`, 1);
    if (id % 6 === 0) store.badge(id, 'verified');
    if (id % 3 === 0) store.ban(id, 'Paused', 'spam', '2024-05-01 00:00:00');
  }
  store.close();
}
eachTestWorkspace(
  (w) => {
    ({ dir, db, out } = w);
    session = new StoreSession(db);
  },
  { fill: cleanStore },
);
afterEach(() => session.close());

const write = (statement: string) => execSql(db, statement);
const pass = (options: Partial<BuildOptions> = {}) => buildTo(db, out, { session, storeSettleMs: 60_000, ...options });

/** The manifest's profile lines, members first in list order as written, then the rest sorted. */
function profileEntries(tree: string): string[] {
  const lines = readFileSync(join(tree, MANIFEST_FILE), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('u\t'));
  const members = lines.filter((line) => /\t\d+$/.test(line));
  return [...members, ...lines.filter((line) => !/\t\d+$/.test(line)).sort()];
}

/**
 * The tree and report equal a fresh build's at the same snapshot time: byte for byte, or when some
 * documents were kept from a pass at an earlier snapshot time (whose meta they keep), all but meta.
 */
function expectSameAsFresh(report: BuildReport, snapshotMs = SNAPSHOT_MS): void {
  const other = join(dir.path, `fresh-${Math.random().toString(36).slice(2)}`);
  const fresh = buildTo(db, other, { snapshotMs, fullPass: true });
  const files = publishedFiles(out);
  expect(files).toEqual(publishedFiles(other));
  const data = (text: string) => (snapshotMs === SNAPSHOT_MS ? text : { ...JSON.parse(text), meta: undefined });
  for (const f of files) {
    if (f === CREATORS_GZIP_FILE) {
      expect(gunzipSync(readFileSync(join(out, f))).equals(readFileSync(join(out, CREATORS_FILE)))).toBe(true);
      // Cut into the same pieces as a fresh build's (pieces copied from the last variant included).
      if (snapshotMs === SNAPSHOT_MS) expect(readFileSync(join(out, f)).equals(readFileSync(join(other, f))), f).toBe(true);
    } else expect(data(readFileSync(join(out, f), 'utf8')), f).toEqual(data(readFileSync(join(other, f), 'utf8')));
  }
  for (const key of ['profiles', 'creators', 'skipped', 'warnings'] as const) expect(report[key], key).toEqual(fresh[key]);
  // The profile entries the pass recorded (many carried over, not looked up) are the fresh build's.
  expect(profileEntries(out)).toEqual(profileEntries(other));
}

/** Writes `statement`, then runs a pass that must read exactly `rowsRead` users and publish what a fresh build does. */
function passAfter(statement: string, rowsRead: number): BuildReport {
  write(statement);
  const report = pass();
  expect(report.rowsRead).toBe(rowsRead);
  expectSameAsFresh(report);
  return report;
}

/** Users created at 01:00 to `hours`:00, whose age turns over `hours` after the midnight snapshot. */
const turningWithin = (hours: number) => Array.from({ length: USERS }, (_, i) => i + 1).filter((id) => 1 + (id % 23) <= hours);

describe('selective passes (a session reads only changed users)', () => {
  it('reads every row once, then only the changed ones, rewriting only their files and the list', () => {
    const first = pass();
    expect(first.rowsRead).toBe(CANDIDATES);
    const second = passAfter('UPDATE users SET views = views + 1 WHERE id IN (2, 7)', 2);
    expect(second.rendered).toBe(2);
    // Two profiles under both aliases, and the creators list (both are active).
    expect(second.files).toEqual({ written: 6, unchanged: first.files.written + first.files.unchanged - 6, removed: 0 });
    const idle = pass();
    expect(idle.rowsRead).toBe(0);
    expect(idle.files.written).toBe(0);
  });

  it('finds changes in every table: socials (moved between users too), badges, bans and decorations', () => {
    pass();
    passAfter("UPDATE socials SET url = 'https://github.com/new' WHERE id = 4", 1);
    passAfter('UPDATE socials SET user_id = 9 WHERE id = 8', 2);
    passAfter("INSERT INTO badges (user_id, badge) VALUES (11, 'official'); DELETE FROM badges WHERE user_id = 12", 2);
    passAfter("UPDATE bans SET reason = 'abuse' WHERE user_id = 15", 1);
    // Users 5, 10, ..., 40 wear the halo.
    passAfter("UPDATE decorations SET name = 'Golden halo' WHERE id = 'halo'", 8);
    expect(profile(out, 'user35x5').data.avatarDecoration.name).toBe('Golden halo');
  });

  it('removes the profiles of deleted and inactive users, and publishes new ones', () => {
    pass();
    // Only the new row is there to read.
    const report = passAfter(
      "DELETE FROM users WHERE id = 1; UPDATE users SET status = 'inactive' WHERE id = 2; INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES (99, 'newcomer', 'New', '', '2025-01-01 00:00:00', 0, 'active')",
      1,
    );
    expect(report.files.removed).toBe(4);
    expect(profile(out, 'newcomer').data.username).toBe('newcomer');
  });

  it('reads again only the users whose account age turns over, when the snapshot moves on', () => {
    pass();
    // Users are created on the hour (1 + id % 23): three hours after midnight, those created at
    // 01:00, 02:00 and 03:00 have turned a day older.
    const later = SNAPSHOT_MS + 3 * HOUR;
    const report = pass({ snapshotMs: later });
    const turning = turningWithin(3);
    expect(report.rowsRead).toBe(turning.length);
    expect(report.rendered).toBe(turning.length);
    expectSameAsFresh(report, later);
    // An earlier snapshot than the last pass's: ages may go back, so every row is read.
    expect(pass({ snapshotMs: SNAPSHOT_MS }).rowsRead).toBe(CANDIDATES);
  });

  it('a store whose trusted stamp did not move is not compared again: only users whose age turns over are read', () => {
    pass({ storeSettleMs: 0 });
    const compared = vi.spyOn(StoreShadow.prototype, 'changes');
    try {
      const later = SNAPSHOT_MS + 3 * HOUR;
      const quiet = pass({ storeSettleMs: 0, snapshotMs: later });
      expect(compared).not.toHaveBeenCalled();
      expect(quiet.rowsRead).toBe(turningWithin(3).length);
      expectSameAsFresh(quiet, later);
      // A write moves the stamp: the store is compared again.
      write('UPDATE users SET views = 77 WHERE id = 9');
      const changed = pass({ storeSettleMs: 0, snapshotMs: later });
      expect(compared).toHaveBeenCalledTimes(1);
      expect(changed.rowsRead).toBe(1);
      expectSameAsFresh(changed, later);
    } finally {
      compared.mockRestore();
    }
  });

  it('a changed user taking the name of an unchanged user with a higher id makes a full pass, as a fresh build would decide', () => {
    pass();
    // user 3 ("user21x3") takes the name of user 30 ("user10x30") in other letter case: it now wins.
    const report = passAfter("UPDATE users SET username = 'USER10X30' WHERE id = 3", CANDIDATES);
    expect(report.warnings.map((w) => w.id)).toEqual([30]);
    // And back: 30 is published again (it had a warning, so it is always read).
    const back = passAfter("UPDATE users SET username = 'user21x3' WHERE id = 3", 2);
    expect(back.warnings).toEqual([]);
  });

  it('a changed user taking the name of an unchanged user with a lower id is skipped, without a full pass', () => {
    pass();
    const report = passAfter("UPDATE users SET username = 'User7x1' WHERE id = 30", 1);
    expect(report.warnings.map((w) => w.id)).toEqual([30]);
    // User 30 is read by every pass now (it has a warning), but the name stays user 1's.
    passAfter('UPDATE users SET views = 99 WHERE id = 2', 2);
    expect(profile(out, 'user7x1').data.views).toBe(1);
  });

  it('sees a username change of letter case only, in a store whose usernames are UNIQUE COLLATE NOCASE', () => {
    const contractDb = join(dir.path, 'contract.db');
    new TestStore(contractDb)
      .user({ id: 1, username: 'alice', created_at: '2020-01-01 12:00:00' })
      .user({ id: 2, username: 'bob', created_at: '2020-01-01 12:00:00' })
      .close();
    const contractSession = new StoreSession(contractDb);
    try {
      const contractPass = () => buildTo(contractDb, out, { session: contractSession, storeSettleMs: 60_000 });
      contractPass();
      execSql(contractDb, "UPDATE users SET username = 'Alice' WHERE id = 1");
      const report = contractPass();
      expect(report.rowsRead).toBe(1);
      expect(profile(out, 'alice').data.username).toBe('Alice');
    } finally {
      contractSession.close();
    }
  });

  it('rows with warnings are read by every pass, and their warnings reported every time', () => {
    write("UPDATE users SET bio = x'41' WHERE id = 4; UPDATE users SET username = 'bad name' WHERE id = 8");
    const first = pass();
    expect(first.warnings.map((w) => w.id)).toEqual([4, 8]);
    const report = passAfter('UPDATE users SET views = 1000 WHERE id = 20', 3);
    expect(report.warnings.map((w) => w.id)).toEqual([4, 8]);
  });

  it('reads every row when the store file was replaced, the tree changed behind it, or a pass failed', () => {
    pass();
    // Another file at the path (a restore): the connection is reopened and the copy taken afresh.
    const copy = join(dir.path, 'copy.db');
    copyFileSync(db, copy);
    execSql(copy, 'UPDATE users SET views = 5 WHERE id = 1');
    renameSync(copy, db);
    let report = pass();
    expect(report.rowsRead).toBe(CANDIDATES);
    expectSameAsFresh(report);
    // Deleted and written again in place (the file system may hand the new file the freed inode).
    copyFileSync(db, copy);
    execSql(copy, 'UPDATE users SET views = 8 WHERE id = 1');
    rmSync(db);
    copyFileSync(copy, db);
    report = pass();
    expect(report.rowsRead).toBe(CANDIDATES);
    expectSameAsFresh(report);
    // Another writer rebuilt the tree (the manifest is not the one this session's pass wrote).
    write('UPDATE users SET views = 6 WHERE id = 1');
    buildTo(db, out);
    passAfter('UPDATE users SET views = 7 WHERE id = 1', CANDIDATES);
    // A pass that fails (--strict with a warning) writes nothing; the next one reads every row.
    write("UPDATE users SET bio = x'41' WHERE id = 2");
    expect(() => pass({ strict: true })).toThrow(StrictWarningsError);
    passAfter("UPDATE users SET bio = 'fine' WHERE id = 2", CANDIDATES);
  });

  it('a pass whose output fails to commit, after its read transaction ended, leaves the next pass to read every row', () => {
    pass();
    write('UPDATE users SET views = 4242 WHERE id = 6');
    // A folder where the manifest's temporary file goes, and a second link to the manifest (as a pin
    // makes), so that the claims go onto a copy written there: the commit fails before any file moves.
    const obstacle = join(out, '.profile-snapshot', 'manifest.tmp');
    const secondLink = join(dirname(out), 'manifest-link');
    mkdirSync(obstacle);
    linkSync(join(out, '.profile-snapshot', 'manifest'), secondLink);
    expect(() => pass()).toThrow();
    rmdirSync(obstacle);
    unlinkSync(secondLink);
    expect(profile(out, 'user2x6').data.views).toBe(6);
    const report = pass();
    expect(report.rowsRead).toBe(CANDIDATES);
    expect(profile(out, 'user2x6').data.views).toBe(4242);
    expectSameAsFresh(report);
  });

  it('a --full pass in a session reads every row and takes the copy afresh; the next pass reads only changes', () => {
    pass();
    write('UPDATE users SET views = 500 WHERE id = 3');
    const full = pass({ fullPass: true });
    expect(full.rowsRead).toBe(CANDIDATES);
    passAfter('UPDATE users SET views = 501 WHERE id = 4', 1);
  });

  it('a session starting on a tree the last build left standing copies the store then, and reads only changes after', () => {
    buildTo(db, out, { storeSettleMs: 0 });
    // Settled: the store's stamp is trusted at once, so this pass reads nothing and copies the store.
    const adopted = pass({ storeSettleMs: 0 });
    expect(adopted.storeUnchanged).toBe(true);
    passAfter('UPDATE users SET views = 1234 WHERE id = 17', 1);
  });
});

describe('a session on a store with a change clock', () => {
  const track = () => trackStore(db);
  const copy = () => session.open().shadow;

  it('keeps a lean copy (names, ages, decorations) and follows the clock: only changed users are read', () => {
    track();
    expect(pass().rowsRead).toBe(CANDIDATES);
    expect(copy().lean).toBe(true);
    // A child row, a decoration and a rename: the clock names them, the lean copy says the rest.
    for (const [statement, rowsRead] of [
      ["UPDATE socials SET url = 'https://github.com/moved' WHERE user_id = 4", 1],
      ["UPDATE decorations SET name = 'Halo 2' WHERE id = 'halo'", USERS / 5],
      ["UPDATE users SET username = 'renamed7' WHERE id = 7", 1],
      ["INSERT INTO badges (user_id, badge) VALUES (8, 'verified')", 1],
    ] as const) {
      const report = passAfter(statement, rowsRead);
      expect(report.changes.by).toBe('clock');
      expect(copy().lean).toBe(true);
    }
  });

  it('passes in a row that write no manifest compose the list over the last one, and stay exact', () => {
    track();
    // Members with a warning: read by every pass, rendered as they were, so a pass without a change
    // writes nothing and composes its list over the last one's; now and then a change that writes.
    write("UPDATE users SET bio = x'41' WHERE id IN (4, 7)");
    pass();
    for (let round = 1; round <= 12; round++) {
      const quiet = pass();
      expect(quiet.rowsRead, `round ${round}`).toBe(2);
      expect(quiet.files.written, `round ${round}`).toBe(0);
      expectSameAsFresh(quiet);
      if (round % 4 === 0) passAfter(`UPDATE users SET display_name = 'Round ${round}' WHERE id = ${round + 10}`, 3);
    }
  });

  it('the lean copy holds no column but the name, the age and the decoration, and no child table', () => {
    const connection = new Database(db, { readonly: true });
    try {
      const tables = (lean: boolean) => {
        connection.exec('BEGIN');
        try {
          expect(new StoreShadow(connection).capture(undefined, { lean })).toBe(true);
          const names = connection
            .prepare("SELECT name FROM sqlite_temp_master WHERE type = 'table' AND name GLOB 'shadow_*'")
            .pluck()
            .all();
          const columns = connection.prepare('SELECT name FROM pragma_table_xinfo(?, ?)').pluck().all('shadow_users', 'temp');
          return { tables: (names as string[]).sort(), columns };
        } finally {
          connection.exec('ROLLBACK');
        }
      };
      expect(tables(true)).toEqual({ tables: ['shadow_users'], columns: ['id', 'username', 'decoration_id', 'created_ms', 'age_phase'] });
      // The whole copy, for contrast: every column a build reads, and the child tables.
      const whole = tables(false);
      expect(whole.tables).toEqual(['shadow_badges', 'shadow_bans', 'shadow_decorations', 'shadow_socials', 'shadow_users']);
      expect(whole.columns).toContain('bio');
    } finally {
      connection.close();
    }
  });

  it('untracked mid-run: one pass reads every row and says why, then the whole copy is compared', () => {
    track();
    pass();
    untrackStore(db);
    write("UPDATE users SET bio = 'After untrack' WHERE id = 5");
    const fallback = pass();
    expect(fallback.rowsRead).toBe(CANDIDATES);
    expect(fallback.changes.clockFallback).toBe('the change clock was removed');
    expectSameAsFresh(fallback);
    expect(copy().lean).toBe(false);
    expect(passAfter("UPDATE users SET bio = 'Compared' WHERE id = 5", 1).changes.by).toBe('comparison');
  });

  it('tracked mid-run: the whole copy is compared once, then the copy turns lean', () => {
    pass();
    expect(copy().lean).toBe(false);
    track();
    const once = passAfter("UPDATE users SET bio = 'Tracked' WHERE id = 5", 1);
    expect(once.changes.by).toBe('comparison');
    expect(copy().lean).toBe(true);
    expect(passAfter("UPDATE users SET bio = 'Followed' WHERE id = 5", 1).changes.by).toBe('clock');
  });

  it('a lean copy is never compared with the store, yet still finds the ages turning', () => {
    track();
    pass();
    write("UPDATE users SET bio = 'Changed' WHERE id = 9");
    const store = session.open();
    store.inSnapshot(() => {
      expect(store.shadow.changes(SNAPSHOT_MS, SNAPSHOT_MS)).toBeUndefined();
      const turning = store.shadow.agesTurning(SNAPSHOT_MS, SNAPSHOT_MS + 3 * HOUR)?.users;
      expect([...(turning ?? [])].sort((x, y) => x - y)).toEqual(turningWithin(3));
    });
  });
});
