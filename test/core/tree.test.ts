/**
 * The output tree across rebuilds: byte stability, reproducibility, stale-file removal, foreign-file
 * safety, aliases, and nothing outside --out.
 */
import { appendFileSync, existsSync, linkSync, lstatSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildTo, SNAPSHOT_MS } from '../helpers/build.js';
import { listFiles, profile, publishedFiles, readJson, snapshotTree } from '../helpers/output.js';
import { eachTestWorkspace, execSql, sampleStore, type Workspace } from '../helpers/store.js';
import { PENDING, readManifest, writeClaims } from '../../src/output/manifest.js';
import { MANIFEST_FILE } from '../../src/core/layout.js';

let dir: Workspace['dir'];
let db: string;
let out: string;
eachTestWorkspace((w) => ({ dir, db, out } = w), { fill: sampleStore });

const HOUR = 3_600_000;
const sql = (statement: string) => execSql(db, statement);

describe('byte stability', () => {
  it('a rebuild of unchanged data rewrites nothing: same bytes, same inode, same mtime, meta included', () => {
    buildTo(db, out, { reproducible: false });
    const before = snapshotTree(out);
    // An hour later (same day for every account age): new snapshot time, same data.
    const report = buildTo(db, out, { snapshotMs: SNAPSHOT_MS + HOUR, reproducible: false });
    expect(report.files).toEqual({ written: 0, unchanged: before.size, removed: 0 });
    expect(snapshotTree(out)).toEqual(before);
  });

  it('a changed profile gets new bytes and a new meta.timestamp; other files keep theirs', () => {
    buildTo(db, out);
    const before = snapshotTree(out);
    sql("UPDATE users SET bio = 'New bio' WHERE username = 'bob'");
    const later = SNAPSHOT_MS + HOUR;
    const report = buildTo(db, out, { snapshotMs: later });
    const after = snapshotTree(out);
    expect(profile(out, 'bob').data.bio).toBe('New bio');
    expect(profile(out, 'bob').meta.timestamp).toBe(new Date(later).toISOString());
    expect(readJson(out, 'service-api/v1/creators').meta.timestamp).toBe(new Date(later).toISOString());
    const changed = [...after.keys()].filter((f) => after.get(f)!.bytes !== before.get(f)!.bytes).sort();
    expect(changed).toEqual(['api/v1/users/bob', 'service-api/v1/.creators.gz', 'service-api/v1/creators', 'service-api/v1/users/bob']);
    for (const [f, entry] of after) if (!changed.includes(f)) expect(entry).toEqual(before.get(f));
    expect(report.files).toEqual({ written: 4, unchanged: before.size - 4, removed: 0 });
  });

  it("a commit's claim marks the files about to change pending on top of the last manifest; a build left there by a crash converges", () => {
    buildTo(db, out);
    const before = readManifest(out);
    const [claimed, kept] = [...before.profiles.keys()];
    expect(writeClaims(out, { profiles: [claimed!], files: ['service-api/v1/creators'] })).toBe(true);
    const claimedManifest = readManifest(out);
    expect(claimedManifest.profiles.get(claimed!)).toBe(PENDING);
    expect(claimedManifest.files.get('service-api/v1/creators')).toBe(PENDING);
    expect(claimedManifest.profiles.get(kept!)).toBe(before.profiles.get(kept!));
    expect(claimedManifest.profiles.size).toBe(before.profiles.size);
    // A crash right after the claim: the next build rewrites what was claimed and ends as before.
    const report = buildTo(db, out);
    expect(report.files.written).toBe(4); // the claimed profile under both aliases, the list and its variant
    expect([...readManifest(out).profiles]).toEqual([...before.profiles]);
  });

  it("claims are appended to the out dir's own manifest (no copy of it), but never to a manifest a pin shares", () => {
    buildTo(db, out);
    const path = join(out, MANIFEST_FILE);
    const before = readFileSync(path);
    const [claimed] = [...readManifest(out).profiles.keys()];
    const inode = statSync(path).ino;
    expect(writeClaims(out, { profiles: [claimed!], files: [] })).toBe(true);
    expect(statSync(path).ino).toBe(inode);
    expect(readFileSync(path).subarray(0, before.length)).toEqual(before);
    // A second link (as TreePin.take makes) keeps the file as it is: the claims go onto a copy.
    const pinned = join(dir.path, 'pinned-manifest');
    linkSync(path, pinned);
    const pinnedBytes = readFileSync(pinned);
    expect(writeClaims(out, { profiles: [], files: ['service-api/v1/creators'] })).toBe(true);
    expect(statSync(path).ino).not.toBe(inode);
    expect(readFileSync(pinned)).toEqual(pinnedBytes);
    expect(readManifest(out).profiles.get(claimed!)).toBe(PENDING);
    expect(readManifest(out).files.get('service-api/v1/creators')).toBe(PENDING);
  });

  it('claims cut short by a crash mid-append: the next build rewrites what they may name and ends as a fresh build', () => {
    buildTo(db, out);
    const fresh = snapshotTree(out);
    const [first, second] = [...readManifest(out).profiles.keys()];
    // One claim cut after its key's tab, the next cut inside its key (no newline at the end).
    appendFileSync(join(out, MANIFEST_FILE), `\nu\t${first!}\t-\nu\t${second!}\t\nu\t${second!.slice(0, 2)}`);
    const report = buildTo(db, out);
    expect(report.files.written).toBe(4); // both claimed profiles' files (two aliases each), the list unchanged
    const after = snapshotTree(out);
    expect([...after.keys()]).toEqual([...fresh.keys()]);
    for (const [file, entry] of after) expect(entry.bytes).toEqual(fresh.get(file)!.bytes);
  });

  it('the manifest reads back exactly as written, in chunks of any size, for names shorter and longer than 13 characters', () => {
    // readManifest copies keys and values of 13 characters or more out of the bytes (not slices of
    // the text): every length around that edge, up to the 64 a username may have.
    const names = [2, 11, 12, 13, 14, 30, 64].map((length, i) => `u${i}`.padEnd(length, 'x'));
    const sqlUsers = names.map((name, i) => `(${1000 + i}, '${name}', 'N', '', NULL, '2020-01-01 00:00:00', 0, 'active', NULL)`);
    sql(
      `INSERT INTO users (id, username, display_name, bio, custom_domain, created_at, views, status, decoration_id) VALUES ${sqlUsers.join(', ')}`,
    );
    buildTo(db, out);
    const text = readFileSync(join(out, MANIFEST_FILE), 'utf8');
    const lines = text
      .split('\n')
      .slice(1)
      .filter(Boolean)
      .map((line) => line.split('\t'));
    const manifest = readManifest(out);
    const expected = (kind: string) => new Map(lines.filter((f) => f[0] === kind).map((f) => [f[1], f.slice(2).join('\t')]));
    expect(new Map(manifest.profiles)).toEqual(expected('u'));
    expect(manifest.files).toEqual(expected('f'));
    for (const name of names) expect(manifest.profiles.has(name)).toBe(true);
    // Read a few bytes at a time, every line crosses a chunk's end (and some are longer than a chunk).
    for (const chunkBytes of [1, 7, 64, 1000]) {
      const chunked = readManifest(out, chunkBytes);
      expect([...chunked.profiles], `${chunkBytes}-byte chunks`).toEqual([...manifest.profiles]);
      expect(chunked.files).toEqual(manifest.files);
      expect(chunked.list).toEqual(manifest.list);
      expect(chunked.renderKey).toBe(manifest.renderKey);
    }
    expect(manifest.list?.names.length).toBeGreaterThan(names.length);
    // A last line without its newline (a file cut short) still counts.
    writeFileSync(join(out, MANIFEST_FILE), text.slice(0, -1));
    for (const chunkBytes of [7, 1000, undefined]) expect([...readManifest(out, chunkBytes).profiles]).toEqual([...manifest.profiles]);
  });

  it("a suspended user's change rewrites the profile but not the creators list", () => {
    buildTo(db, out);
    const before = snapshotTree(out);
    sql("UPDATE users SET views = views + 1 WHERE username = 'dave_99'");
    buildTo(db, out, { snapshotMs: SNAPSHOT_MS + HOUR });
    expect(snapshotTree(out).get('service-api/v1/creators')).toEqual(before.get('service-api/v1/creators'));
    expect(profile(out, 'dave_99').data.views).toBe(56);
  });

  it('SOURCE_DATE_EPOCH builds are reproducible byte for byte in fresh folders', () => {
    const other = join(dir.path, 'other');
    buildTo(db, out);
    buildTo(db, other);
    const a = snapshotTree(out),
      b = snapshotTree(other);
    expect([...a.keys()]).toEqual([...b.keys()]);
    for (const [f, entry] of a) expect(b.get(f)!.bytes).toBe(entry.bytes);
  });
});

describe('aliases', () => {
  it('writes every profile under both alias folders, byte-identical, as regular files (never symlinks)', () => {
    buildTo(db, out);
    const api = readdirSync(join(out, 'api/v1/users')).sort();
    const service = readdirSync(join(out, 'service-api/v1/users')).sort();
    expect(api).toEqual(service);
    expect(api).toHaveLength(18);
    for (const name of api) {
      for (const folder of ['api/v1/users', 'service-api/v1/users']) expect(lstatSync(join(out, folder, name)).isFile()).toBe(true);
      expect(readFileSync(join(out, 'service-api/v1/users', name)).equals(readFileSync(join(out, 'api/v1/users', name)))).toBe(true);
    }
  });
});

describe('stale files', () => {
  it('removes the files of users no longer published (deleted, banned to inactive, renamed)', () => {
    buildTo(db, out);
    sql(`UPDATE users SET status = 'deleted' WHERE username = 'bob';
         UPDATE users SET status = 'inactive' WHERE username = 'dave_99';
         UPDATE users SET username = 'Alicia' WHERE username = 'Alice';`);
    const report = buildTo(db, out, { snapshotMs: SNAPSHOT_MS + HOUR });
    for (const gone of ['bob', 'dave_99', 'alice']) {
      expect(existsSync(join(out, 'api/v1/users', gone))).toBe(false);
      expect(existsSync(join(out, 'service-api/v1/users', gone))).toBe(false);
    }
    expect(profile(out, 'alicia').data.username).toBe('Alicia');
    expect(report.files.removed).toBe(6);
    expect(readJson(out, 'service-api/v1/creators').data.map((u: { username: string }) => u.username)).not.toContain('bob');
  });
});

describe('files the tool did not write', () => {
  it('are never deleted or overwritten, beside or inside the API folders', () => {
    mkdirSync(join(out, 'api/v1/users'), { recursive: true });
    writeFileSync(join(out, 'index.html'), '<h1>landing</h1>');
    writeFileSync(join(out, 'api/v1/users/README.txt'), 'hand-written note');
    writeFileSync(join(out, 'api/v1/users/ghost'), 'not a user of this store');
    buildTo(db, out);
    sql("UPDATE users SET status = 'deleted' WHERE username = 'bob'");
    buildTo(db, out, { snapshotMs: SNAPSHOT_MS + HOUR });
    expect(readFileSync(join(out, 'index.html'), 'utf8')).toBe('<h1>landing</h1>');
    expect(readFileSync(join(out, 'api/v1/users/README.txt'), 'utf8')).toBe('hand-written note');
    expect(readFileSync(join(out, 'api/v1/users/ghost'), 'utf8')).toBe('not a user of this store');
  });
});

describe('nothing outside --out', () => {
  it('writes only inside the out dir, and leaves no staging behind', () => {
    const siblings = () => readdirSync(dir.path).sort();
    const before = siblings();
    buildTo(db, out);
    sql('UPDATE users SET views = 1 WHERE id = 1');
    buildTo(db, out, { snapshotMs: SNAPSHOT_MS + HOUR });
    expect(siblings()).toEqual([...before, 'dist'].sort());
    expect(listFiles(out).filter((f) => f.startsWith('.profile-snapshot/'))).toEqual([
      '.profile-snapshot/creators-gzip-index',
      '.profile-snapshot/last-pass.json',
      '.profile-snapshot/manifest',
    ]);
    expect(
      publishedFiles(out).every((f) =>
        /^(api\/v1\/(users\/|openapi\.json$)|service-api\/v1\/(users\/|creators$|\.creators\.gz$)|_errors\/)/.test(f),
      ),
    ).toBe(true);
  });
});

describe("Netlify's folder limit", () => {
  it('reports a notice per users folder past the threshold, never a data warning', () => {
    const quiet = buildTo(db, out);
    expect(quiet.notices).toEqual([]);
    const report = buildTo(db, out, { folderNoticeAt: 17, strict: false });
    expect(report.notices).toHaveLength(2);
    expect(report.notices[0]).toMatch(
      /^api\/v1\/users holds 18 profiles: Netlify refuses a deploy with more than 54,000 files in one folder/,
    );
    expect(report.notices[1]).toMatch(/^service-api\/v1\/users holds 18 profiles/);
    expect(report.warnings.some((w) => w.reason.includes('Netlify'))).toBe(false);
  });
});
