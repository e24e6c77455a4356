/**
 * The watch loop end to end, through the real bin against real SQLite files: every kind of change
 * reaches the tree within one interval, unchanged files keep their bytes and inode (never rewritten),
 * --exec runs once per changing cycle and never for an idle one, the health status tells a monitor
 * what it needs, and a bad cycle never kills the watcher.
 */
import { appendFileSync, existsSync, readFileSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  cycleAfter,
  ensureCompiled,
  lastCycle,
  makeStore,
  type Proc,
  profilePath,
  publishedFiles,
  readJson,
  sql,
  startCli,
  startNode,
  status,
  waitFor as poll,
} from './helpers.js';
import { eachTestWorkspace, type Workspace } from '../helpers/store.js';
import { canMount, mountTmpfs, sh } from '../helpers/mount.js';

let dir: Workspace['dir'];
let db: string;
let out: string;
let watcher: Proc | undefined;

beforeAll(() => ensureCompiled(), 120_000);
eachTestWorkspace((w) => ({ dir, db, out } = w), { fill: (file) => makeStore(file, 40), prefix: 'ps-watch-' });
afterEach(async () => {
  await watcher?.stop();
  watcher = undefined;
});

// A fixed snapshot time: accountAgeDays would otherwise change every profile at midnight UTC.
const watch = (...args: string[]) =>
  startCli(['watch', '--db', db, '--out', out, '--interval', '1', ...args], { env: { SOURCE_DATE_EPOCH: '1767225600' } });
const creators = () => readJson(join(out, 'service-api/v1/creators')).data as { username: string; views: number }[];

describe('watch', () => {
  it('brings edits, new users, bans, deletions and view counts into the tree within one interval', async () => {
    watcher = watch();
    let s = await cycleAfter(out, 0);
    expect(s.lastCycle).toMatchObject({ ok: true, profiles: 40, creators: 40 });
    expect(readJson(profilePath(out, 'user00001')).data.displayName).toBe('User 1');

    sql(
      db,
      `UPDATE users SET display_name = 'Renamed' WHERE id = 1;
      UPDATE users SET views = 999999 WHERE id = 2;
      INSERT INTO users (username, display_name, bio, created_at, views, status) VALUES ('NewComer', 'New', '', '2025-05-05 05:05:05', 1, 'active');
      UPDATE users SET status = 'banned' WHERE id = 3;
      INSERT INTO bans (user_id, message, reason, banned_at) VALUES (3, 'Banned.', 'spam', '2025-06-01 00:00:00');
      UPDATE users SET status = 'deleted' WHERE id = 4;
      DELETE FROM socials WHERE user_id = 5; DELETE FROM badges WHERE user_id = 5; DELETE FROM users WHERE id = 5;`,
    );
    const changedAt = lastCycle(out);
    // The first cycle that starts after the change must show it (interval 1 s, so within ~1 s).
    s = await cycleAfter(out, changedAt + 1);
    expect(s.lastCycle).toMatchObject({ ok: true, profiles: 39, creators: 38 });

    expect(readJson(profilePath(out, 'user00001')).data.displayName).toBe('Renamed');
    expect(readJson(profilePath(out, 'user00002')).data.views).toBe(999999);
    expect(readJson(profilePath(out, 'newcomer')).data.username).toBe('NewComer');
    expect(readJson(join(out, 'service-api/v1/users/newcomer')).data.username).toBe('NewComer');
    const banned = readJson(profilePath(out, 'user00003')).data;
    expect(banned.status).toBe('suspended');
    expect(banned.banInfo).toMatchObject({ isBanned: true, message: 'Banned.', reason: 'spam' });
    // Deletions are a privacy promise: gone from every alias and from the list.
    for (const gone of ['user00004', 'user00005']) {
      expect(existsSync(profilePath(out, gone))).toBe(false);
      expect(existsSync(join(out, 'service-api/v1/users', gone))).toBe(false);
    }
    const names = creators().map((u) => u.username);
    expect(names).toContain('NewComer');
    expect(names).not.toContain('user00003');
    expect(names).not.toContain('user00004');
    expect(names).not.toContain('user00005');
    expect(watcher.stderr()).toMatch(/cycle \d+: 39 profiles published \(38 creators\)/);
  });

  it('a watcher that cannot keep its copy of the snapshot says why, once, and still publishes every change', async () => {
    // socials.id without its PRIMARY KEY, and one id used twice: the store still builds, but the
    // watcher's copy (keyed by id) cannot be taken, so every cycle must read every row.
    sql(
      db,
      `ALTER TABLE socials RENAME TO socials_keyed;
      CREATE TABLE socials (id INTEGER, user_id INTEGER NOT NULL, platform TEXT NOT NULL, url TEXT NOT NULL, position INTEGER NOT NULL);
      INSERT INTO socials SELECT id, user_id, platform, url, position FROM socials_keyed;
      DROP TABLE socials_keyed;
      INSERT INTO socials (id, user_id, platform, url, position) VALUES (1, 9, 'GitHub', 'https://github.com/twice', 5);`,
    );
    watcher = watch('--json');
    await cycleAfter(out, 2);
    const before = lastCycle(out);
    sql(db, `UPDATE users SET views = 123456 WHERE id = 7`);
    await cycleAfter(out, before + 1);
    expect(readJson(profilePath(out, 'user00007')).data.views).toBe(123456);
    // Every cycle that read the store read all 40 users: there is no copy to compare with. (A cycle
    // that finds the store unchanged since the last pass reads nothing at all.)
    const read = cycles(watcher)
      .map((c) => c.rowsRead)
      .filter((n) => n > 0);
    expect(read.length).toBeGreaterThanOrEqual(2);
    expect(new Set(read)).toEqual(new Set([40]));
    const notices = watcher
      .stderr()
      .split('\n')
      .filter((line) => line.includes("warning: cannot keep the watcher's copy"));
    // Printed when it first appeared, not again every cycle.
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(
      /UNIQUE constraint failed.*every cycle reads every row until it can: the copy needs the store's users\.id and socials\.id to be unique integers/,
    );
  });

  it.skipIf(!canMount)('a watcher whose SQLite temporary folder is full says so, names SQLITE_TMPDIR, and still publishes', async () => {
    // The copy goes to SQLite's temporary database, which spills to a file in SQLITE_TMPDIR once it
    // outgrows its 16 MB cache: 40 bios of 600 KB do, and a 1 MB tmpfs cannot hold the file.
    sql(db, 'UPDATE users SET bio = hex(zeroblob(300000))');
    const tmp = mountTmpfs(join(dir.path, 'sqlite-tmp'), '1m');
    try {
      watcher = startCli(['watch', '--db', db, '--out', out, '--interval', '1'], {
        env: { SOURCE_DATE_EPOCH: '1767225600', SQLITE_TMPDIR: tmp },
      });
      const s = await cycleAfter(out, 2, 60_000);
      expect(s.lastCycle).toMatchObject({ ok: true, profiles: 40 });
      expect(readJson(profilePath(out, 'user00001')).data.bio).toHaveLength(600_000);
      // SQLite ended the whole read transaction on SQLITE_FULL; the cycles went on regardless.
      const before = lastCycle(out);
      sql(db, 'UPDATE users SET views = 654321 WHERE id = 7');
      expect((await cycleAfter(out, before + 1, 60_000)).lastCycle).toMatchObject({ ok: true });
      expect(readJson(profilePath(out, 'user00007')).data.views).toBe(654321);
      const notices = watcher
        .stderr()
        .split('\n')
        .filter((line) => line.includes("warning: cannot keep the watcher's copy"));
      expect(notices, watcher.stderr()).toHaveLength(1);
      expect(notices[0]).toMatch(/\(.*full.*\).*point SQLITE_TMPDIR at a folder with that much room/);
    } finally {
      await watcher?.stop();
      watcher = undefined;
      sh('umount', '-l', tmp);
    }
  });

  it('never rewrites unchanged files: bytes, mtime and inode stay across cycles', async () => {
    watcher = watch('--json');
    await cycleAfter(out, 0);
    const files = publishedFiles(out);
    const before = new Map(
      files.map((f) => {
        const st = statSync(join(out, f));
        return [f, { bytes: readFileSync(join(out, f), 'utf8'), mtimeMs: st.mtimeMs, ino: st.ino }];
      }),
    );
    // Idle cycles: nothing at all may change.
    const idle = await cycleAfter(out, lastCycle(out) + 1);
    expect(idle.lastCycle).toMatchObject({ changed: false, files: { written: 0, removed: 0 } });
    // One changed user: exactly its two alias files, the creators list and its gzip variant are rewritten.
    const before7 = lastCycle(out);
    sql(db, `UPDATE users SET views = views + 1 WHERE id = 7`);
    await cycleAfter(out, before7 + 1); // the first cycle that starts after the update has ended
    const written = cycles(watcher)
      .filter((c) => c.number > before7)
      .map((c) => c.files.written);
    // It changed in exactly one cycle (the one that read the update), and every other cycle wrote nothing.
    expect(written.filter((n) => n > 0)).toEqual([4]);
    // Only the first cycle read every row; later ones read the changed user alone, or nothing.
    const read = cycles(watcher).map((c) => c.rowsRead);
    expect(read[0]).toBe(40);
    expect(read.slice(1).filter((n) => n > 0)).toEqual([1]);
    const rewritten = new Set([
      'api/v1/users/user00007',
      'service-api/v1/users/user00007',
      'service-api/v1/creators',
      'service-api/v1/.creators.gz',
    ]);
    expect(publishedFiles(out)).toEqual(files);
    for (const [f, was] of before) {
      const st = statSync(join(out, f));
      const now = { bytes: readFileSync(join(out, f), 'utf8'), mtimeMs: st.mtimeMs, ino: st.ino };
      if (rewritten.has(f)) expect(now.bytes, f).not.toBe(was.bytes);
      else expect(now, f).toEqual(was);
    }
  });

  it('runs --exec once per changing cycle, never for an idle one, with the change summary in the environment', async () => {
    const log = join(dir.path, 'exec.log');
    const script = join(dir.path, 'exec.mjs');
    // The command records its environment and overlap (a marker file present means another run is going).
    appendFileSync(
      script,
      `
      import { appendFileSync, existsSync, writeFileSync, rmSync } from 'node:fs';
      const busy = ${JSON.stringify(join(dir.path, 'busy'))};
      const overlap = existsSync(busy);
      writeFileSync(busy, '');
      const e = process.env;
      appendFileSync(${JSON.stringify(log)}, JSON.stringify({ cycle: e.PROFILE_SNAPSHOT_CYCLE, written: e.PROFILE_SNAPSHOT_WRITTEN,
        removed: e.PROFILE_SNAPSHOT_REMOVED, profiles: e.PROFILE_SNAPSHOT_PROFILES, out: e.PROFILE_SNAPSHOT_OUT,
        summary: e.PROFILE_SNAPSHOT_SUMMARY, overlap }) + '\\n');
      setTimeout(() => rmSync(busy), 300);
    `,
    );
    watcher = watch('--exec', `"${process.execPath}" "${script}"`);
    const runs = () =>
      existsSync(log)
        ? readFileSync(log, 'utf8')
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l))
        : [];
    await cycleAfter(out, 0);
    await cycleAfter(out, 3); // three idle cycles after the first
    const first = await waitForRuns(runs, 1);
    expect(first[0]).toMatchObject({ cycle: '1', written: '87', removed: '0', profiles: '40', out, overlap: false });
    expect(first[0].summary).toMatch(/^cycle 1: 40 profiles/);
    await waitForExecIdle();
    expect(runs()).toHaveLength(1);

    const beforeDelete = lastCycle(out);
    sql(db, `DELETE FROM socials WHERE user_id = 9; DELETE FROM badges WHERE user_id = 9; DELETE FROM users WHERE id = 9`);
    await cycleAfter(out, beforeDelete + 1);
    const after = await waitForRuns(runs, 2);
    expect(after[1]).toMatchObject({ written: '2', removed: '2', profiles: '39', overlap: false });
    expect(Number(after[1].cycle)).toBeGreaterThan(beforeDelete);
    await cycleAfter(out, lastCycle(out) + 2);
    await waitForExecIdle();
    expect(runs()).toHaveLength(2);
    expect(watcher.stderr()).toMatch(/exec \(cycle 1\): succeeded/);
  });

  it('--exec failures are logged with a counter and never stop the watcher; runs never overlap', async () => {
    const marker = join(dir.path, 'running');
    const overlaps = join(dir.path, 'overlaps');
    // Each run takes 1.5 s (longer than the interval) and fails; every cycle changes something.
    const command = `if [ -e "${marker}" ]; then echo x >> "${overlaps}"; fi; touch "${marker}"; sleep 1.5; rm -f "${marker}"; exit 7`;
    watcher = watch('--exec', command);
    const writerTick = setInterval(() => sql(db, `UPDATE users SET views = views + 1 WHERE id = 1`), 300);
    try {
      await until(() => (watcher!.stderr().match(/FAILED with exit code 7/g) ?? []).length >= 3, 20_000);
    } finally {
      clearInterval(writerTick);
    }
    expect(watcher.stderr()).toMatch(/exec \(cycle \d+(, covering \d+ changing cycles)?\): FAILED with exit code 7 \(2 in a row\)/);
    expect(existsSync(overlaps)).toBe(false);
    expect(status(out)?.exec).toMatchObject({ lastExitCode: 7 });
    expect(status(out)!.exec!.consecutiveFailures).toBeGreaterThanOrEqual(3);
    expect(watcher.child.exitCode).toBeNull();
  });

  it('--exec-min-interval spaces the starts of --exec runs (a deploy rate limit) and folds changes meanwhile', async () => {
    const log = join(dir.path, 'starts.log');
    watcher = watch(
      '--interval',
      '0.3',
      '--exec',
      `echo "$(date +%s%3N) $PROFILE_SNAPSHOT_CHANGED_CYCLES" >> "${log}"`,
      '--exec-min-interval',
      '1.5',
    );
    const writerTick = setInterval(() => sql(db, 'UPDATE users SET views = views + 1 WHERE id = 1'), 100);
    try {
      await poll('three --exec runs', () => existsSync(log) && readFileSync(log, 'utf8').trim().split('\n').length >= 3, 20_000);
    } finally {
      clearInterval(writerTick);
    }
    const runs = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' ').map(Number));
    // The watcher logs each start as it spawns the command: those times are the ones it spaces.
    const starts = [...watcher.stderr().matchAll(/^(\S+) profile-snapshot watch: exec \(cycle \d+[^)]*\): started$/gm)].map((m) =>
      Date.parse(m[1]!),
    );
    expect(starts.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(1500 - 20);
    // Every cycle changed something, so the runs after the first each covered several cycles.
    expect(runs.slice(1).some(([, folded]) => folded! > 1)).toBe(true);
  });

  it('keeps the last good output through failing cycles (missing store, schema drift), counts them, and recovers', async () => {
    watcher = watch();
    const good = await cycleAfter(out, 0);
    const tree = new Map(publishedFiles(out).map((f) => [f, readFileSync(join(out, f), 'utf8')]));

    renameSync(db, `${db}.away`); // maintenance: the store is gone for a while
    await until(() => /cycle \d+ FAILED \(2 in a row\): profile store not found/.test(watcher!.stderr()));
    let s = await until(() => ((status(out)?.consecutiveFailures ?? 0) >= 2 ? status(out) : undefined));
    expect(s.lastCycle).toMatchObject({ ok: false, error: { kind: 'store', exitCode: 3 } });
    expect(s.lastSuccessAt).toBe(good.lastSuccessAt);
    expect(new Map(publishedFiles(out).map((f) => [f, readFileSync(join(out, f), 'utf8')]))).toEqual(tree);

    renameSync(`${db}.away`, db);
    sql(db, 'ALTER TABLE bans RENAME COLUMN reason TO why'); // schema drift
    const failuresBefore = status(out)!.consecutiveFailures;
    await until(() => {
      const now = status(out);
      return now && now.consecutiveFailures > failuresBefore && now.lastCycle?.error?.message.includes('schema drift') ? now : undefined;
    });
    expect(new Map(publishedFiles(out).map((f) => [f, readFileSync(join(out, f), 'utf8')]))).toEqual(tree);

    sql(db, 'ALTER TABLE bans RENAME COLUMN why TO reason');
    s = await until(() => {
      const now = status(out);
      return now?.lastCycle?.ok ? now : undefined;
    });
    expect(s.consecutiveFailures).toBe(0);
    expect(s.lastSuccess?.profiles).toBe(40);
    expect(watcher.child.exitCode).toBeNull();
  });

  it('a store locked past --busy-timeout fails the cycle with a counter; the next tick succeeds', async () => {
    // A rollback-journal store (not WAL) whose writer holds an exclusive lock: readers must wait.
    sql(db, 'PRAGMA journal_mode = DELETE');
    watcher = watch('--busy-timeout', '100');
    await cycleAfter(out, 0);
    const holder = startNode([
      '-e',
      `
      const db = new (require('better-sqlite3'))(${JSON.stringify(db)});
      db.exec('BEGIN EXCLUSIVE'); db.prepare("UPDATE users SET views = 5 WHERE id = 1").run();
      process.stderr.write('locked\\n');
      setTimeout(() => { db.exec('COMMIT'); db.close(); }, 2500);`,
    ]);
    await poll('the writer to lock the store', () => holder.stderr().includes('locked'));
    await until(() => /FAILED \(2 in a row\): profile store is locked by another process past the busy timeout/.test(watcher!.stderr()));
    expect(status(out)?.lastCycle?.error).toMatchObject({ kind: 'store', exitCode: 3 });
    await holder.exit;
    await until(() => status(out)?.lastCycle?.ok === true);
    expect(readJson(profilePath(out, 'user00001')).data.views).toBe(5);
  });

  it('regenerates every 30 seconds unless told otherwise', async () => {
    watcher = startCli(['watch', '--db', db, '--out', out], { env: { SOURCE_DATE_EPOCH: '1767225600' } });
    const s = await cycleAfter(out, 0);
    expect(s.intervalSeconds).toBe(30);
    // The next cycle is due an interval after this one started, not sooner.
    const dueInMs = Date.parse(s.nextCycleAt!) - Date.parse(s.lastCycle!.startedAt);
    expect(dueInMs).toBeGreaterThan(29_000);
    expect(dueInMs).toBeLessThan(31_000);
  });

  it('writes a health status a monitor can read, outside the published paths', async () => {
    watcher = watch();
    const s = await cycleAfter(out, 1);
    expect(s).toMatchObject({
      version: 1,
      pid: watcher.child.pid,
      out,
      db,
      intervalSeconds: 1,
      state: 'idle',
      consecutiveFailures: 0,
      lastCycle: { ok: true, profiles: 40, creators: 40, skipped: 0, warnings: 0 },
    });
    expect(Date.parse(s.lastSuccessAt!)).toBeGreaterThan(Date.parse(s.startedAt) - 1);
    expect(s.lastCycle!.durationMs).toBeGreaterThanOrEqual(0);
    expect(Date.parse(s.nextCycleAt!)).toBeGreaterThan(0);
    expect(publishedFiles(out).some((f) => f.includes('status'))).toBe(false);
    expect(existsSync(join(out, '.profile-snapshot/status.json'))).toBe(true);
  });

  it('rejects a bad --interval as a usage error (exit 2)', async () => {
    const proc = startCli(['watch', '--db', db, '--out', out, '--interval', '0']);
    expect((await proc.exit).code).toBe(2);
    expect(proc.stderr()).toMatch(/--interval must be a positive number/);
  });
});

const until = <T>(condition: () => T | undefined | false | null, timeoutMs = 15_000) => poll('condition', condition, timeoutMs);

const waitForRuns = (runs: () => any[], n: number) => poll(`${n} exec runs`, () => (runs().length >= n ? runs() : undefined));

const waitForExecIdle = () => poll('exec idle', () => status(out)?.exec?.running === false);

/** The per-cycle JSON lines a `watch --json` prints on stdout. */
const cycles = (proc: Proc) =>
  proc
    .stdout()
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
