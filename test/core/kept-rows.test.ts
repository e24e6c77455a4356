/**
 * Rebuilds keep rows whose signature did not change, unrendered, and copy their bytes in the
 * creators list from the last list file. Every kept document must be exactly what rendering would
 * have produced: checked against a fresh build of the same store, byte for byte.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MANIFEST_FILE } from '../../src/core/layout.js';
import type { BuildReport } from '../../src/build.js';
import { buildTo, SNAPSHOT_MS } from '../helpers/build.js';
import { runCli } from '../helpers/process.js';
import { profile, publishedFiles, readJson } from '../helpers/output.js';
import { eachTestWorkspace, execSql, TestStore, type Workspace } from '../helpers/store.js';

const DAY = 86_400_000;
const USERS = 40;

let dir: Workspace['dir'];
let db: string;
let out: string;

/** A clean store (no warnings): every published row can be kept. Every third user is suspended. */
function cleanStore(file: string): void {
  const store = new TestStore(file);
  store.decoration('halo', 'Halo', 'halo.png');
  for (let id = 1; id <= USERS; id++) {
    // Names out of id order, so list neighbours are not id neighbours.
    store.user({
      id,
      username: `user${(id * 7) % USERS}x${id}`,
      bio: `Bio ${id} ✨`,
      status: id % 3 === 0 ? 'suspended' : 'active',
      views: id,
      created_at: `2020-01-${String(1 + (id % 28)).padStart(2, '0')} 10:00:00`,
      decoration_id: id % 5 === 0 ? 'halo' : null,
    });
    if (id % 4 === 0) store.social(id, id, 'GitHub', `https://github.com/u${id}`, 1);
    if (id % 6 === 0) store.badge(id, 'verified');
    if (id % 3 === 0) store.ban(id, 'Paused', 'spam', '2024-05-01 00:00:00');
  }
  store.close();
}
eachTestWorkspace((w) => ({ dir, db, out } = w), { fill: cleanStore });

const write = (statement: string) => execSql(db, statement);

/** Every published file of `a` equals the one in `b`, byte for byte, and the two trees hold the same files. */
function expectSameTree(a: string, b: string): void {
  const files = publishedFiles(a);
  expect(files).toEqual(publishedFiles(b));
  for (const f of files) expect(readFileSync(join(a, f), 'utf8'), f).toBe(readFileSync(join(b, f), 'utf8'));
}

const fresh = (snapshotMs = SNAPSHOT_MS, baseUrl?: string) => {
  const other = join(dir.path, `fresh-${Math.random().toString(36).slice(2)}`);
  buildTo(db, other, { snapshotMs, fullPass: true, ...(baseUrl ? { baseUrl } : {}) });
  return other;
};

describe('kept rows', () => {
  it('a rebuild of the same rows renders none and rewrites nothing', () => {
    const first = buildTo(db, out);
    expect(first.rendered).toBe(USERS);
    const again = buildTo(db, out, { fullPass: true });
    expect(again.rendered).toBe(0);
    expect(again.files.written).toBe(0);
    expect(again.profiles).toBe(first.profiles);
    expect(again.creators).toBe(first.creators);
  });

  it('renders only the changed rows (any table), and the tree equals a fresh build byte for byte', () => {
    buildTo(db, out);
    write(`UPDATE users SET views = 999 WHERE id = 7;
      UPDATE socials SET url = 'https://github.com/new' WHERE user_id = 8;
      INSERT INTO badges (user_id, badge) VALUES (10, 'helper');
      UPDATE bans SET message = 'Back soon' WHERE user_id = 9;
      UPDATE decorations SET name = 'Halo 2';`);
    const report = buildTo(db, out, { fullPass: true });
    // 7, 8, 10, 9, and every user wearing the renamed decoration (5, 10, 15, ... 40).
    const decorated = Array.from({ length: USERS / 5 }, (_, i) => (i + 1) * 5);
    expect(report.rendered).toBe(new Set([7, 8, 9, 10, ...decorated]).size);
    expectSameTree(out, fresh());
  });

  it('an unchanged member between changed ones keeps its exact bytes in the list; names joining and leaving move the rest', () => {
    buildTo(db, out);
    write(`UPDATE users SET bio = 'A much longer bio than before, to shift every offset after it 🎉' WHERE id = 1;
      UPDATE users SET status = 'inactive' WHERE id = 2;
      UPDATE users SET status = 'active' WHERE id = 3;
      INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES (41, 'aaa-first', 'First', '', '2021-01-01 00:00:00', 0, 'active');
      INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES (42, 'zzz-last', 'Last', '', '2021-01-01 00:00:00', 0, 'active');`);
    const report = buildTo(db, out, { fullPass: true });
    expect(report.rendered).toBe(4); // 1, 3, 41, 42 (2 is no longer published: not rendered, removed)
    expectSameTree(out, fresh());
    const list = readJson(out, 'service-api/v1/creators').data.map((u: { username: string }) => u.username);
    expect(list[0]).toBe('aaa-first');
    expect(list.at(-1)).toBe('zzz-last');
    // And the next rebuild keeps everything again, copying from the list it just wrote: the places it
    // recorded must be right, or the copied bytes would be.
    expect(buildTo(db, out, { fullPass: true }).rendered).toBe(0);
    write('UPDATE users SET views = 5 WHERE id = 20');
    expect(buildTo(db, out, { fullPass: true }).rendered).toBe(1);
    expectSameTree(out, fresh());
  });

  it('a day later every account age moved: every row is rendered again', () => {
    buildTo(db, out);
    const later = buildTo(db, out, { snapshotMs: SNAPSHOT_MS + DAY });
    expect(later.rendered).toBe(USERS);
    expect(profile(out, 'user7x1').data.accountAgeDays).toBe(profile(fresh(SNAPSHOT_MS + DAY), 'user7x1').data.accountAgeDays);
  });

  it('another base URL renders every row again', () => {
    buildTo(db, out);
    const moved = buildTo(db, out, { baseUrl: 'https://cdn.example.net' });
    expect(moved.rendered).toBe(USERS);
    expectSameTree(out, fresh(SNAPSHOT_MS, 'https://cdn.example.net'));
  });

  it('a rebuild by another tool that changes no file still records its rows: the next process renders none', () => {
    // Separate processes: one process keeps its last manifest in memory, which hid this.
    const build = () => {
      const run = runCli(['build', '--db', db, '--out', out, '--full', '--json'], { env: { SOURCE_DATE_EPOCH: '1767225600' } });
      expect(run.code, run.stderr).toBe(0);
      return JSON.parse(run.stdout) as BuildReport;
    };
    build();
    // The last build's header names another tool (an upgrade): every row is rendered again, to the same bytes.
    const manifestPath = join(out, MANIFEST_FILE);
    const [header, ...lines] = readFileSync(manifestPath, 'utf8').split('\n');
    const [format, , baseUrl] = header!.split('\t');
    writeFileSync(manifestPath, [[format, '0.0.0+0', baseUrl].join('\t'), ...lines].join('\n'));
    const upgraded = build();
    expect([upgraded.rendered, upgraded.files.written]).toEqual([USERS, 0]);
    expect(build().rendered).toBe(0);
  });

  it("a list file changed behind the tool's back is not copied from: members are rendered again", () => {
    buildTo(db, out);
    const listPath = join(out, 'service-api/v1/creators');
    const text = readFileSync(listPath, 'utf8');
    writeFileSync(listPath, text.replace('Bio 1 ✨', 'Bio X ✨')); // same length, other bytes
    write('UPDATE users SET views = 1000 WHERE id = 2');
    const report = buildTo(db, out, { fullPass: true });
    const members = readJson(out, 'service-api/v1/creators').data.length;
    // Every member is rendered (the list cannot be trusted); suspended users are still kept.
    expect(report.rendered).toBe(members);
    expect(readFileSync(listPath, 'utf8')).not.toContain('Bio X');
    expectSameTree(out, fresh());
  });

  it('a format 1 manifest (no signatures) is read: every row is rendered once, nothing rewritten', () => {
    buildTo(db, out);
    const manifest = readFileSync(join(out, MANIFEST_FILE), 'utf8').split('\n');
    const v1 = [
      'profile-snapshot manifest 1',
      ...manifest
        .slice(1)
        .filter(Boolean)
        .map((line) => line.split('\t').slice(0, 3).join('\t')),
    ];
    writeFileSync(join(out, MANIFEST_FILE), `${v1.join('\n')}\n`);
    const report = buildTo(db, out, { fullPass: true });
    expect(report.rendered).toBe(USERS);
    expect(report.files.written).toBe(0);
    expect(buildTo(db, out, { fullPass: true }).rendered).toBe(0);
  });
});
