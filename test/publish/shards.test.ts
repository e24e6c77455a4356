/**
 * Shards of one store published into one prefix by real processes on moto_server (which honours
 * conditional writes and UploadPartCopy), the creators list joined in the bucket: concurrent
 * publishers over rounds of changes with a reader sampling throughout, and the join over damaged
 * records, missing parts and a held compose lease. Beside it, split so that two workers share them:
 * shards-kill.test.ts (kill -9 of a publisher and of a composer; every refusal) and
 * shards-parts.test.ts (parts copied in the bucket, R2's rule for parts, a forged part index).
 */
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { CREATORS_FILE } from '../../src/core/layout.js';
import { sliceOf } from '../../src/core/slice.js';
import { parseState } from '../../src/publish/record/format.js';
import { scopeOf } from '../../src/publish/keys.js';
import { runCliAsync } from '../helpers/process.js';
import { userName } from '../helpers/store.js';
import { clientFor, hasMoto, s3Env, startMoto } from '../helpers/s3.js';
import { PREFIX, sql, s3Workspace } from './helpers.js';
import { buildShards, change, expectShardedExact, newShardedSite, sampleReader, shardArgs, type ShardedSite } from './shard-helpers.js';
import { tableOf } from '../../src/publish/plan/profile-table.js';

const workspace = s3Workspace(startMoto, 'profile-snapshot-shards-');

/** Samples the live API until `done` settles, a short pause between samples; returns the stable samples taken. */
async function sampleUntil(site: ShardedSite, done: Promise<unknown>): Promise<number> {
  let finished = false;
  void done.finally(() => (finished = true));
  let stable = 0;
  while (!finished) {
    if (await sampleReader(site.server.endpoint, site.bucket)) stable++;
    // Without it the reader keeps moto busier than the three publishers it samples.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return stable;
}

describe.skipIf(!hasMoto)('shards published into one prefix', () => {
  it('keeps the joined API whole while 3 shards publish side by side over rounds of changes', async () => {
    const site = await newShardedSite(workspace.server, workspace.dir, 200, 3);
    const endpoint = site.server.endpoint;
    let stable = 0;
    for (let round = 0; round <= 4; round++) {
      if (round > 0) {
        change(site, round);
        buildShards(site);
      }
      const runs = Promise.all(site.shards.map((_, i) => runCliAsync(shardArgs(site, i, endpoint, '--force'), { env: s3Env() })));
      stable += await sampleUntil(site, runs);
      for (const run of await runs) expect(run.code, run.stderr).toBe(0);
      await expectShardedExact(site);
    }
    // The reader saw the API while it changed, not only before and after.
    console.log(`reader: ${stable} stable samples while 3 shards published, over 5 rounds`);
    expect(stable).toBeGreaterThanOrEqual(3);
  }, 240_000);

  it('joins a list whose first shards have no creators', async () => {
    // Three users in n shards, n chosen so that shard 0 is empty: the first members take no comma.
    const names = ['user00001', 'user00002', 'user00003'];
    const count = [5, 6, 7, 8, 9, 10, 11, 12].find(
      (n) => names.every((name) => sliceOf(name, n) !== 0) && new Set(names.map((name) => sliceOf(name, n))).size > 1,
    )!;
    const site = await newShardedSite(workspace.server, workspace.dir, 3, count);
    for (let i = 0; i < count; i++) expect((await runCliAsync(shardArgs(site, i, site.server.endpoint), { env: s3Env() })).code).toBe(0);
    await expectShardedExact(site);
  }, 120_000);

  it('joins again over a record of the last join that cannot be read, instead of failing every shard', async () => {
    const site = await newShardedSite(workspace.server, workspace.dir, 40, 2);
    for (let i = 0; i < 2; i++) expect((await runCliAsync(shardArgs(site, i, site.server.endpoint), { env: s3Env() })).code).toBe(0);
    const client = clientFor(site.server.endpoint);
    try {
      const damaged = { Bucket: site.bucket, Key: `${PREFIX}/.profile-snapshot/shards/joined`, Body: '{"parts": ["cut sh' };
      await client.send(new PutObjectCommand(damaged));
      change(site, 1);
      buildShards(site);
      for (let i = 0; i < 2; i++) {
        const run = await runCliAsync(shardArgs(site, i, site.server.endpoint), { env: s3Env() });
        expect(run.code, run.stderr).toBe(0);
      }
    } finally {
      client.destroy();
    }
    await expectShardedExact(site);
  }, 120_000);

  it('a part replaced or deleted by hand stops only the join: the other shards publish on, and its own shard sends it again', async () => {
    const site = await newShardedSite(workspace.server, workspace.dir, 90, 3);
    for (let i = 0; i < 3; i++) expect((await runCliAsync(shardArgs(site, i, site.server.endpoint), { env: s3Env() })).code).toBe(0);
    const client = clientFor(site.server.endpoint);
    const key = (path: string) => ({ Bucket: site.bucket, Key: `${PREFIX}/${path}` });
    const read = async (path: string) =>
      Buffer.from(await (await client.send(new GetObjectCommand(key(path)))).Body!.transformToByteArray());
    const partOf = async (shard: number) =>
      (JSON.parse((await read(`.profile-snapshot/shards/${shard}-of-3/part`)).toString()) as { identity: { key: string } }).identity.key;
    const publishShard = async (shard: number) => {
      const run = await runCliAsync(shardArgs(site, shard, site.server.endpoint), { env: s3Env() });
      expect(run.code, run.stderr).toBe(0);
      return run.stderr;
    };
    try {
      // Same size, other bytes: only the version tells them apart (the join copies only the version named).
      const replaced = await partOf(0);
      await client.send(
        new PutObjectCommand({ ...key(replaced), Body: Buffer.from((await read(replaced)).toString().replace(/"/g, "'")) }),
      );
      const before = await read(CREATORS_FILE);
      const id = Array.from({ length: 90 }, (_, i) => i + 1).find((i) => sliceOf(userName(i), 3) === 1)!;
      sql(site.db, `UPDATE users SET display_name = 'Renamed' WHERE id = ${id}`);
      buildShards(site);
      // Shard 1 publishes its change; the list cannot take shard 0's part, and stands as it was.
      expect(await publishShard(1)).toMatch(/the part of 0\/3 is gone from the bucket/);
      expect((await read(CREATORS_FILE)).equals(before)).toBe(true);
      expect(await sampleReader(site.server.endpoint, site.bucket)).toBe(true);
      // Shard 2's part deleted too: shard 0, its tree unchanged, sends its own part again; shard 2's still stops the join.
      await client.send(new DeleteObjectCommand(key(await partOf(2))));
      expect(await publishShard(0)).toMatch(/the part of 2\/3 is gone from the bucket/);
      expect((await read(CREATORS_FILE)).equals(before)).toBe(true);
      expect(await publishShard(2)).not.toMatch(/gone from the bucket/);
      expect((await read(CREATORS_FILE)).toString()).toContain('Renamed');
      // Each shard removes its older parts once a publish of its own finds the list holding its current one.
      change(site, 2);
      buildShards(site);
      for (let i = 0; i < 3; i++) expect(await publishShard(i)).not.toMatch(/gone from the bucket/);
    } finally {
      client.destroy();
    }
    await expectShardedExact(site);
  }, 120_000);

  it('a compose lease held past --lock-timeout: the shard is published (exit 12, the list behind), and its next publish joins', async () => {
    const site = await newShardedSite(workspace.server, workspace.dir, 60, 2);
    for (let i = 0; i < 2; i++) expect((await runCliAsync(shardArgs(site, i, site.server.endpoint), { env: s3Env() })).code).toBe(0);
    const client = clientFor(site.server.endpoint);
    const key = (path: string) => ({ Bucket: site.bucket, Key: `${PREFIX}/${path}` });
    const read = async (path: string) =>
      Buffer.from(await (await client.send(new GetObjectCommand(key(path)))).Body!.transformToByteArray());
    try {
      // Another composer, alive (renewed just now, a long TTL), holds the list.
      const now = new Date().toISOString();
      const holder = { id: 'another', host: 'elsewhere', pid: 4242 };
      const lease = {
        tool: 'profile-snapshot',
        lease: 'compose',
        holder,
        acquiredAt: now,
        renewedAt: now,
        renewals: 0,
        ttlSeconds: 600,
        released: false,
        preconditions: 'proven',
      };
      await client.send(new PutObjectCommand({ ...key('.profile-snapshot/compose'), Body: JSON.stringify(lease) }));
      const before = await read(CREATORS_FILE);
      const ofShard1 = Array.from({ length: 60 }, (_, i) => i + 1).filter((i) => sliceOf(userName(i), 2) === 1);
      const id = ofShard1[0]!;
      sql(site.db, `UPDATE users SET display_name = 'Renamed', status = 'active' WHERE id = ${id}`);
      // A user removed meanwhile: the list still names them, so their objects wait for the join, and
      // the shard's state keeps them live with the hash they were published with.
      const gone = userName(ofShard1[1]!).toLowerCase();
      const stateKey = scopeOf({ index: 1, count: 2 }).state;
      const hashIn = async (name: string) => tableOf(parseState(await read(stateKey)).live.profiles).get(name);
      const goneHash = await hashIn(gone);
      expect(goneHash).toMatch(/^[^?]+$/);
      sql(site.db, `UPDATE users SET status = 'deleted' WHERE id = ${ofShard1[1]}`);
      buildShards(site);
      const behind = await runCliAsync(shardArgs(site, 1, site.server.endpoint, '--lock-timeout', '2'), { env: s3Env() });
      expect(behind.code, behind.stderr).toBe(12);
      expect(behind.stderr).toMatch(/shard 1\/2 was published, but the creators list does not hold its part yet: .*pid 4242/);
      // Its profiles went out; the list stands as it was.
      expect((await read(`api/v1/users/${userName(id).toLowerCase()}`)).toString()).toContain('Renamed');
      expect((await read(CREATORS_FILE)).equals(before)).toBe(true);
      expect((await read(`api/v1/users/${gone}`)).length).toBeGreaterThan(0);
      expect(await hashIn(gone)).toBe(goneHash);
      await client.send(new DeleteObjectCommand(key('.profile-snapshot/compose')));
      const next = await runCliAsync(shardArgs(site, 1, site.server.endpoint), { env: s3Env() });
      expect(next.code, next.stderr).toBe(0);
      expect(next.stderr).toMatch(/list joined/);
    } finally {
      client.destroy();
    }
    await expectShardedExact(site);
  }, 120_000);
});
