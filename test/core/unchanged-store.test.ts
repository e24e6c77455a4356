/**
 * The unchanged-store shortcut: a build whose store, tool, base URL and tree are as the last build
 * left them (and whose snapshot time moves no account age) reads no row and writes nothing. Every
 * way the store can change must still be seen, in rollback-journal and WAL mode.
 */
import Database from 'better-sqlite3';
import { existsSync, readFileSync, renameSync, copyFileSync, writeFileSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StrictWarningsError } from '../../src/core/errors.js';
import { LAST_PASS_FILE } from '../../src/core/layout.js';
import { MANIFEST_FILE } from '../../src/core/layout.js';
import { buildTo, SNAPSHOT_MS } from '../helpers/build.js';
import { runCli } from '../helpers/process.js';
import { profile, snapshotTree } from '../helpers/output.js';
import { eachTestWorkspace, execSql, sampleStore, type Workspace } from '../helpers/store.js';

const DAY = 86_400_000;
/** Tests write the store and build at once: trust its stamp without the 2 s settling time. */
const settled = { storeSettleMs: 0 } as const;

let dir: Workspace['dir'];
let db: string;
let out: string;
eachTestWorkspace((w) => ({ dir, db, out } = w), { fill: sampleStore });

const write = (statement: string) => execSql(db, statement);

describe('a build over an unchanged store', () => {
  it('reads nothing, writes nothing, and reports what the last build published, warnings included', () => {
    const first = buildTo(db, out, settled);
    expect(first.storeUnchanged).toBe(false);
    expect(first.warnings.length).toBeGreaterThan(0); // the sample has bad rows
    const before = snapshotTree(out);
    const second = buildTo(db, out, { ...settled, snapshotMs: SNAPSHOT_MS + 60_000 });
    expect(second.storeUnchanged).toBe(true);
    expect(second.files).toEqual({ written: 0, unchanged: first.files.written, removed: 0 });
    expect({ profiles: second.profiles, creators: second.creators, skipped: second.skipped, warnings: second.warnings }).toEqual({
      profiles: first.profiles,
      creators: first.creators,
      skipped: first.skipped,
      warnings: first.warnings,
    });
    expect(snapshotTree(out)).toEqual(before);
  });

  it('reads no row (the pass reports the rows it read; this one reports none), and --full reads them all', () => {
    const read = (options: Parameters<typeof buildTo>[2]) => {
      const counts: number[] = [];
      const report = buildTo(db, out, { ...options, onProgress: (rows) => counts.push(rows) });
      return { report, counts };
    };
    const first = read(settled);
    expect(first.counts.at(-1)).toBeGreaterThan(0);
    const second = read(settled);
    expect(second.report.storeUnchanged).toBe(true);
    expect(second.counts).toEqual([]);
    const full = read({ ...settled, fullPass: true });
    expect(full.report.storeUnchanged).toBe(false);
    expect(full.counts.at(-1)).toBe(first.counts.at(-1));
    expect(full.report.files.written).toBe(0);
  });

  it('under --strict fails with the same warnings and writes nothing', () => {
    const first = buildTo(db, out, settled);
    const before = snapshotTree(out);
    let thrown: unknown;
    try {
      buildTo(db, out, { ...settled, strict: true });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(StrictWarningsError);
    expect((thrown as StrictWarningsError).warnings).toEqual(first.warnings);
    expect(snapshotTree(out)).toEqual(before);
  });
});

describe('every change is seen', () => {
  it('rollback-journal mode: an update that keeps the file size', () => {
    buildTo(db, out, settled);
    const size = readFileSync(db).length;
    write("UPDATE users SET views = views + 1 WHERE username = 'bob'");
    expect(readFileSync(db).length).toBe(size);
    const report = buildTo(db, out, settled);
    expect(report.storeUnchanged).toBe(false);
    expect(profile(out, 'bob').data.views).toBeGreaterThan(0);
    expect(report.files.written).toBe(4); // bob under both aliases, the creators list and its variant
  });

  it('a change to a child table only', () => {
    buildTo(db, out, settled);
    write("UPDATE socials SET url = 'https://example.org/new' WHERE user_id = (SELECT id FROM users WHERE username = 'alice')");
    const report = buildTo(db, out, settled);
    expect(report.storeUnchanged).toBe(false);
    expect(profile(out, 'alice').data.socials.map((s: { url: string }) => s.url)).toContain('https://example.org/new');
  });

  it('WAL mode: commits in the -wal file while the writer stays open, then a checkpoint that deletes it', () => {
    write('PRAGMA journal_mode = WAL');
    const writer = new Database(db);
    try {
      buildTo(db, out, settled);
      writer.exec("UPDATE users SET views = 1001 WHERE username = 'bob'");
      expect(buildTo(db, out, settled).storeUnchanged).toBe(false);
      expect(profile(out, 'bob').data.views).toBe(1001);
      expect(buildTo(db, out, settled).storeUnchanged).toBe(true);
      writer.exec("UPDATE users SET views = 1002 WHERE username = 'bob'");
      expect(buildTo(db, out, settled).storeUnchanged).toBe(false);
      expect(profile(out, 'bob').data.views).toBe(1002);
    } finally {
      writer.close(); // the last connection checkpoints and removes the -wal file
    }
    expect(existsSync(`${db}-wal`)).toBe(false);
    expect(buildTo(db, out, settled).storeUnchanged).toBe(false);
    // Commit and checkpoint again: only the database file shows it now.
    const again = new Database(db);
    again.exec("UPDATE users SET views = 1003 WHERE username = 'bob'");
    again.close();
    expect(existsSync(`${db}-wal`)).toBe(false);
    expect(buildTo(db, out, settled).storeUnchanged).toBe(false);
    expect(profile(out, 'bob').data.views).toBe(1003);
  });

  it('the store replaced by another file, even one with old timestamps', () => {
    buildTo(db, out, settled);
    const other = join(dir.path, 'other.db');
    copyFileSync(db, other);
    execSql(other, "UPDATE users SET bio = 'Replaced' WHERE username = 'bob'");
    utimesSync(other, new Date(2020, 0, 1), new Date(2020, 0, 1));
    renameSync(other, db);
    expect(buildTo(db, out, settled).storeUnchanged).toBe(false);
    expect(profile(out, 'bob').data.bio).toBe('Replaced');
  });

  it('a snapshot time that moves an account age (and only then)', () => {
    const first = buildTo(db, out, settled);
    const age = profile(out, 'bob').data.accountAgeDays;
    expect(buildTo(db, out, { ...settled, snapshotMs: SNAPSHOT_MS + 1 }).storeUnchanged).toBe(true);
    const dayLater = buildTo(db, out, { ...settled, snapshotMs: SNAPSHOT_MS + DAY });
    expect(dayLater.storeUnchanged).toBe(false);
    expect(profile(out, 'bob').data.accountAgeDays).toBe(age + 1);
    expect(dayLater.files.written).toBeGreaterThan(2);
    expect(dayLater.files.written).toBeLessThan(first.files.written); // not the error documents nor the contract
  });

  it("a snapshot time earlier than the last build's", () => {
    buildTo(db, out, settled);
    expect(buildTo(db, out, { ...settled, snapshotMs: SNAPSHOT_MS - 1 }).storeUnchanged).toBe(false);
  });

  it('another base URL', () => {
    buildTo(db, out, settled);
    const report = buildTo(db, out, { ...settled, baseUrl: 'https://cdn.example.net' });
    expect(report.storeUnchanged).toBe(false);
    expect(profile(out, 'bob').data.pageUrl).toBe('https://cdn.example.net/p/bob');
  });

  it('a manifest rewritten by anyone else, or a record from another tool, is not trusted', () => {
    buildTo(db, out, settled);
    writeFileSync(join(out, MANIFEST_FILE), readFileSync(join(out, MANIFEST_FILE)));
    expect(buildTo(db, out, settled).storeUnchanged).toBe(false);
    const record = JSON.parse(readFileSync(join(out, LAST_PASS_FILE), 'utf8'));
    writeFileSync(join(out, LAST_PASS_FILE), JSON.stringify({ ...record, renderKey: record.renderKey.replace(/^[^\t]*/, '0.0.0+0') }));
    expect(buildTo(db, out, settled).storeUnchanged).toBe(false);
  });
});

describe('a store written moments before the build', () => {
  /** Never settled within a test: the store was written moments ago. */
  const fresh = { storeSettleMs: 60_000 } as const;
  const rowsRead = (options: Parameters<typeof buildTo>[2]) => {
    const counts: number[] = [];
    const report = buildTo(db, out, { ...options, onProgress: (rows) => counts.push(rows) });
    return { report, rows: counts.at(-1) ?? 0 };
  };

  it('is read whole while its files are fresh, and skipped by the next build once they settled unchanged', () => {
    const first = rowsRead(fresh);
    expect(first.report.storeUnchanged).toBe(false);
    expect(first.rows).toBeGreaterThan(0);
    // The stamp is not trusted yet: the next build reads every row again (and keeps each unrendered).
    const soon = rowsRead(fresh);
    expect(soon.report.storeUnchanged).toBe(false);
    expect(soon.rows).toBe(first.rows);
    // Settled, and the same stamp the pass recorded: nothing moved since, so nothing is read.
    const later = rowsRead(settled);
    expect(later.report.storeUnchanged).toBe(true);
    expect(later.rows).toBe(0);
    expect(later.report.files).toEqual({ written: 0, unchanged: first.report.files.written, removed: 0 });
  });

  for (const journal of ['delete', 'wal'] as const) {
    it(`${journal === 'wal' ? 'WAL' : 'rollback-journal'} mode: a write right after that build is seen, however soon it came`, () => {
      write(`PRAGMA journal_mode = ${journal}`);
      buildTo(db, out, fresh);
      write("UPDATE users SET views = 4242 WHERE username = 'bob'");
      const report = buildTo(db, out, settled);
      expect(report.storeUnchanged).toBe(false);
      expect(profile(out, 'bob').data.views).toBe(4242);
    });
  }

  it('a write committed while the pass reads (WAL) is not vouched for: the next build reads it', () => {
    write('PRAGMA journal_mode = WAL');
    const writer = new Database(db);
    try {
      // onProgress runs inside the pass's read transaction, after its last row: the pass does not
      // see this write, so its record must not cover it.
      let wrote = false;
      buildTo(db, out, {
        ...fresh,
        onProgress: () => {
          if (!wrote) writer.exec("UPDATE users SET views = 777 WHERE username = 'bob'");
          wrote = true;
        },
      });
      expect(wrote).toBe(true);
      expect(profile(out, 'bob').data.views).not.toBe(777);
    } finally {
      writer.close();
    }
    const report = buildTo(db, out, settled);
    expect(report.storeUnchanged).toBe(false);
    expect(profile(out, 'bob').data.views).toBe(777);
  });
});

describe('a pass that fails', () => {
  it('leaves the tree and the record as they were, and the record does not vouch for the changed store', () => {
    buildTo(db, out, settled);
    const record = readFileSync(join(out, LAST_PASS_FILE), 'utf8');
    const before = snapshotTree(out);
    write("UPDATE users SET views = 5151 WHERE username = 'bob'");
    expect(() => buildTo(db, out, { ...settled, strict: true })).toThrow(StrictWarningsError);
    expect(readFileSync(join(out, LAST_PASS_FILE), 'utf8')).toBe(record);
    expect(snapshotTree(out)).toEqual(before);
    const report = buildTo(db, out, settled);
    expect(report.storeUnchanged).toBe(false);
    expect(profile(out, 'bob').data.views).toBe(5151);
  });
});

describe('the CLI', () => {
  it('says so in the summary, and --full reads every row anyway', async () => {
    // A store left alone for the settling time, as a real store between two CI builds.
    await new Promise((r) => setTimeout(r, 2100));
    const args = ['build', '--db', db, '--out', out];
    const env = { SOURCE_DATE_EPOCH: String(SNAPSHOT_MS / 1000) };
    expect(runCli(args, { env }).code).toBe(0);
    const again = runCli(args, { env });
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(
      /files 0 written, \d+ unchanged, 0 removed; \d+ warnings; store unchanged since the last build, no row read;/,
    );
    const full = runCli([...args, '--full'], { env });
    expect(full.code).toBe(0);
    expect(full.stderr).not.toContain('store unchanged');
    expect(runCli(['build', '--help']).stdout).toContain('--full');
  });
});
