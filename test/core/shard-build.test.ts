/**
 * A build of one shard (BuildOptions.shard; issue 38, in progress): the users whose slice among n
 * is i, through the store's queries, the pass (threads slice the shard further), the selective
 * passes of a session, and the manifest. Together the n shards' trees are the one tree of a build
 * without a shard: the same profile bytes, each user in exactly one shard, and each shard's list the
 * whole list's members of that shard, in order. A shard's tree says so (its render key); publish
 * refuses it as another shard, and verify checks it is the shard --shard names.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from '../../src/build.js';
import { shardOfRenderKey } from '../../src/core/render-key.js';
import { inSlice, type Slice } from '../../src/core/slice.js';
import { StoreSession } from '../../src/incremental/session.js';
import { readManifest } from '../../src/output/manifest.js';
import { SHARE_FROM } from '../../src/pass/threads.js';
import { publish } from '../../src/publish/publish.js';
import { verify } from '../../src/verify/index.js';
import { CREATORS_FILE } from '../../src/core/layout.js';
import { buildTo, SNAPSHOT_MS } from '../helpers/build.js';
import { publishedFiles } from '../helpers/output.js';
import { REPO } from '../helpers/paths.js';
import { execSql, tempDir, TestStore, userName } from '../helpers/store.js';
import { ensureCompiled } from '../watch/helpers.js';

const SHARDS = 3;
const shard = (index: number): Slice => ({ index, count: SHARDS });
const members = (out: string) => (JSON.parse(readFileSync(join(out, CREATORS_FILE), 'utf8')) as { data: { username: string }[] }).data;

/** Every published profile of a tree: name -> bytes. */
function profilesOf(out: string): Map<string, string> {
  return new Map(
    publishedFiles(out)
      .filter((file) => file.startsWith('api/v1/users/'))
      .map((file) => [file.slice('api/v1/users/'.length), readFileSync(join(out, file), 'utf8')]),
  );
}

/** The shards' trees together are `whole`: each profile in its own shard, byte for byte; each list its members. */
function expectShardsMake(whole: string, shardOuts: string[]): void {
  const all = profilesOf(whole);
  const seen = new Map<string, string>();
  shardOuts.forEach((out, index) => {
    for (const [name, bytes] of profilesOf(out)) {
      expect(inSlice(name, shard(index)), `${name} in shard ${index}`).toBe(true);
      expect(seen.has(name), `${name} in two shards`).toBe(false);
      seen.set(name, bytes);
    }
    const expected = members(whole).filter((user) => inSlice(user.username, shard(index)));
    expect(members(out)).toEqual(expected);
  });
  expect(new Map([...seen].sort())).toEqual(new Map([...all].sort()));
}

describe('building one shard', () => {
  const dir = tempDir('ps-shard-build-');
  afterAll(() => dir.cleanup());
  const db = join(dir.path, 'profiles.db');
  beforeAll(() => {
    const store = new TestStore(db);
    store.users(600, (id) => ({
      user: {
        username: userName(id),
        status: id % 7 === 0 ? 'suspended' : id % 11 === 0 ? 'deleted' : 'active',
        bio: `bio ${id}`,
        created_at: id % 29 === 0 ? 'not a date' : '2020-01-02 10:00:00',
        views: id,
      },
      socials: id % 4 === 0 ? [['GitHub', `https://github.com/u${id}`, 1]] : [],
    }));
    store.close();
  });

  it('the shards together are the whole tree, and each tree names its shard', () => {
    const whole = join(dir.path, 'whole');
    buildTo(db, whole);
    const outs = [0, 1, 2].map((i) => join(dir.path, `shard-${i}`));
    const reports = outs.map((out, i) => buildTo(db, out, { shard: shard(i) }));
    expectShardsMake(whole, outs);
    expect(reports.reduce((n, r) => n + r.profiles, 0)).toBe(profilesOf(whole).size);
    // Every shard reads only its own users, and warns only of them.
    expect(reports.reduce((n, r) => n + r.warnings.length, 0)).toBe(buildTo(db, whole).warnings.length);
    outs.forEach((out, i) => expect(shardOfRenderKey(readManifest(out).renderKey)).toEqual(shard(i)));
    expect(shardOfRenderKey(readManifest(whole).renderKey)).toBeUndefined();
  });

  it("a session's selective passes keep each shard's tree equal to a fresh build of it", () => {
    const work = join(dir.path, 'session.db');
    copyFileSync(db, work);
    const outs = [0, 1, 2].map((i) => join(dir.path, `session-${i}`));
    const sessions = outs.map(() => new StoreSession(work));
    const pass = (i: number) =>
      build({
        db: work,
        out: outs[i],
        baseUrl: 'https://profiles.example.com',
        snapshotMs: SNAPSHOT_MS,
        reproducible: true,
        shard: shard(i),
        session: sessions[i],
        storeSettleMs: 60_000,
      });
    outs.forEach((_, i) => pass(i));
    for (let round = 0; round < 3; round++) {
      execSql(
        work,
        `UPDATE users SET views = views + 1 WHERE id % 17 = ${round}; DELETE FROM socials WHERE user_id = ${100 + round}; DELETE FROM users WHERE id = ${100 + round}; INSERT INTO users (username, display_name, bio, created_at, views, status) VALUES ('new${round}', 'New', '', '2020-01-01 00:00:00', 1, 'active')`,
      );
      const reports = outs.map((_, i) => pass(i));
      expect(reports.every((r) => r.rowsRead < 600)).toBe(true); // selective, not whole
      const whole = join(dir.path, `whole-${round}`);
      buildTo(work, whole);
      expectShardsMake(whole, outs);
    }
    for (const session of sessions) session.close();
  });

  it('publish refuses a tree of another shard than --shard names, before reaching the bucket', async () => {
    const out = join(dir.path, 'shard-0');
    const remote = { bucket: 'never-reached', prefix: 'x', endpoint: 'http://127.0.0.1:9', region: 'us-east-1', concurrency: 1 };
    await expect(publish({ out, remote, shard: { index: 1, count: 3 } })).rejects.toThrow(/holds shard 0\/3, not shard 1\/3/);
  });

  it('verify checks a tree is the shard named, and holds no other shard', () => {
    const out = join(dir.path, 'shard-0');
    expect(verify(out, { shard: shard(0) }).ok).toBe(true);
    const other = verify(out, { shard: shard(1) });
    expect(other.ok).toBe(false);
    expect(other.summary.shard).toBe(1);
  });

  it('threads of a shard slice it further: the same bytes as one thread (compiled build)', () => {
    ensureCompiled();
    const big = join(dir.path, 'big.db');
    const store = new TestStore(big);
    store.users(SHARE_FROM + 3000, (id) => ({ user: { username: userName(id), bio: `b${id}`, views: id } }));
    store.close();
    const entry = pathToFileURL(join(REPO, 'build/index.js')).href;
    const fixture = join(REPO, 'test/core/fixtures/shard-build.mjs');
    const run = (out: string, threads: number) => {
      const result = spawnSync(process.execPath, [fixture, entry, big, out, String(threads), String(SNAPSHOT_MS)], {
        encoding: 'utf8',
        timeout: 120_000,
      });
      expect(result.status, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as { threads: number; profiles: number };
    };
    const one = run(join(dir.path, 'big-1'), 1);
    const two = run(join(dir.path, 'big-2'), 2);
    expect(two.threads).toBe(2);
    expect(two.profiles).toBe(one.profiles);
    expect(profilesOf(join(dir.path, 'big-2'))).toEqual(profilesOf(join(dir.path, 'big-1')));
    expect(readFileSync(join(dir.path, 'big-2', CREATORS_FILE), 'utf8')).toBe(readFileSync(join(dir.path, 'big-1', CREATORS_FILE), 'utf8'));
    for (const name of profilesOf(join(dir.path, 'big-2')).keys()) expect(inSlice(name, { index: 1, count: 2 })).toBe(true);
  }, 180_000);
});
