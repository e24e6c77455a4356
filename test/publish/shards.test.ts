/**
 * Shards of one store published into one prefix by real processes on moto_server (which honours
 * conditional writes and UploadPartCopy), the creators list joined in the bucket: concurrent
 * publishers over rounds of changes with a reader sampling throughout, kill -9 of a publisher and
 * of a composer, and every refusal with its exit code and nothing changed; and a join under R2's
 * rule for parts, served by the Worker in workerd.
 */
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CREATORS_FILE, CREATORS_GZIP_FILE } from '../../src/core/layout.js';
import { sliceOf } from '../../src/core/slice.js';
import { publish } from '../../src/publish/publish.js';
import { prng } from '../../src/seed/synthetic.js';
import { startWorker } from '../hosting/cdn-fixture.js';
import { gzipNegotiationFailures, send } from '../hosting/request-table.js';
import { buildTo } from '../helpers/build.js';
import { runCliAsync } from '../helpers/process.js';
import { userName } from '../helpers/store.js';
import { clientFor, CREDENTIALS, hasMoto, readBucket, s3Env, startMoto, startProxy } from '../helpers/s3.js';
import { PREFIX, sql, s3Workspace } from './helpers.js';
import {
  buildShards,
  expectJoinedList,
  expectShardedExact,
  newShardedSite,
  sampleReader,
  shardArgs,
  type ShardedSite,
} from './shard-helpers.js';

const workspace = s3Workspace(startMoto, 'profile-snapshot-shards-');
const MiB = 2 ** 20;

/** A round of changes to every shard: updates, removals and arrivals. */
function change(site: ShardedSite, round: number): void {
  sql(
    site.db,
    `UPDATE users SET views = views + ${round} WHERE id % 5 = ${round % 5};` +
      ` UPDATE users SET status = 'deleted' WHERE id % 23 = ${round % 23};` +
      ` UPDATE users SET status = 'active' WHERE id % 29 = ${round % 29} AND status = 'deleted';` +
      ` INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES` +
      [0, 1, 2, 3, 4, 5]
        .map((k) => ` (${100_000 + round * 10 + k}, 'arrival${round}x${k}', 'A', '', '2025-06-01 00:00:00', 1, 'active')`)
        .join(','),
  );
}

/** Samples the live API until `done` settles; returns the stable samples taken. */
async function sampleUntil(site: ShardedSite, done: Promise<unknown>): Promise<number> {
  let finished = false;
  void done.finally(() => (finished = true));
  let stable = 0;
  while (!finished) if (await sampleReader(site.server.endpoint, site.bucket)) stable++;
  return stable;
}

describe.skipIf(!hasMoto)('shards published into one prefix', () => {
  it('keeps the joined API whole while 3 shards publish side by side over rounds of changes', async () => {
    const site = await newShardedSite(workspace.server, workspace.dir, 400, 3);
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

  it('joins parts large enough to be copied in the bucket', async () => {
    // Bios of 12 kB: each shard's part well past S3's 5 MiB minimum, so copies do the joining.
    const site = await newShardedSite(workspace.server, workspace.dir, 1500, 2, 12_000);
    for (const i of [0, 1]) {
      const run = await runCliAsync([...shardArgs(site, i, site.server.endpoint), '--json'], { env: s3Env() });
      expect(run.code, run.stderr).toBe(0);
      if (i === 1) {
        const joined = JSON.parse(run.stdout).shard.join;
        // The list's parts are copied; only its gzip parts, small enough here, are read and joined.
        expect(joined.copiedParts).toBeGreaterThanOrEqual(2);
        expect(joined.uploadedBytes).toBeLessThan(statSync(join(site.whole, CREATORS_FILE)).size / 50);
      }
    }
    await expectShardedExact(site);
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
      const id = Array.from({ length: 60 }, (_, i) => i + 1).find((i) => sliceOf(userName(i), 2) === 1)!;
      sql(site.db, `UPDATE users SET display_name = 'Renamed', status = 'active' WHERE id = ${id}`);
      buildShards(site);
      const behind = await runCliAsync(shardArgs(site, 1, site.server.endpoint, '--lock-timeout', '2'), { env: s3Env() });
      expect(behind.code, behind.stderr).toBe(12);
      expect(behind.stderr).toMatch(/shard 1\/2 was published, but the creators list does not hold its part yet: .*pid 4242/);
      // Its profiles went out; the list stands as it was.
      expect((await read(`api/v1/users/${userName(id).toLowerCase()}`)).toString()).toContain('Renamed');
      expect((await read(CREATORS_FILE)).equals(before)).toBe(true);
      await client.send(new DeleteObjectCommand(key('.profile-snapshot/compose')));
      const next = await runCliAsync(shardArgs(site, 1, site.server.endpoint), { env: s3Env() });
      expect(next.code, next.stderr).toBe(0);
      expect(next.stderr).toMatch(/list joined/);
    } finally {
      client.destroy();
    }
    await expectShardedExact(site);
  }, 120_000);

  it('fails its own check on a list that drops or repeats a shard', async () => {
    const site = await newShardedSite(workspace.server, workspace.dir, 300, 3);
    for (const i of [0, 1, 2]) expect((await runCliAsync(shardArgs(site, i, site.server.endpoint), { env: s3Env() })).code).toBe(0);
    const objects = await readBucket(site.server.endpoint, site.bucket, PREFIX);
    const index = (i: number) => JSON.parse(objects.get(`.profile-snapshot/shards/${i}-of-3/part`)!.bytes);
    // Shard 2's index made to name shard 1's part: a composition that repeats shard 1 and drops shard 2.
    const forged = { ...index(1), shard: '2/3', id: `${index(1).id}-again` };
    const client = clientFor(site.server.endpoint);
    await client.send(
      new PutObjectCommand({ Bucket: site.bucket, Key: `${PREFIX}/.profile-snapshot/shards/2-of-3/part`, Body: JSON.stringify(forged) }),
    );
    client.destroy();
    const run = await runCliAsync(['compose', '--to', `s3://${site.bucket}/${PREFIX}`, '--endpoint', site.server.endpoint], {
      env: s3Env(),
    });
    expect(run.code, run.stderr).toBe(0);
    const after = await readBucket(site.server.endpoint, site.bucket, PREFIX);
    const expected = (JSON.parse(readFileSync(join(site.whole, CREATORS_FILE), 'utf8')).data as { username: string }[]).map((u) =>
      u.username.toLowerCase(),
    );
    const list = Buffer.from(after.get(CREATORS_FILE)!.bytes, 'latin1');
    expect(() => expectJoinedList(list, Buffer.from(after.get(CREATORS_GZIP_FILE)!.bytes, 'latin1'), expected)).toThrow();
  }, 120_000);

  it('survives kill -9 of a shard publisher and of a composer; a lone publish of each shard makes the prefix exact', async () => {
    const site = await newShardedSite(workspace.server, workspace.dir, 600, 3);
    const proxy = await startProxy(site.server.endpoint, { delayMs: 10 });
    const random = prng(11);
    // A killed holder's leases must run out between rounds: a short TTL, yet one a loaded machine renews in time.
    const args = (i: number) => shardArgs(site, i, proxy.endpoint, '--force', '--lease-ttl', '3', '--concurrency', '4');
    for (const i of [0, 1, 2]) {
      const run = await runCliAsync(shardArgs(site, i, proxy.endpoint), { env: s3Env() });
      expect(run.code, run.stderr).toBe(0);
    }
    let killedUploading = 0,
      killedJoining = 0,
      variantMayDiffer = false;
    for (let round = 1; round <= 6; round++) {
      change(site, round);
      buildShards(site);
      const before = proxy.log.length;
      const seen = (test: (path: string, method: string) => boolean) => proxy.log.slice(before).some((r) => test(r.path, r.method));
      // Odd rounds kill mid-upload of profiles; even rounds while the list is being joined.
      const joining = round % 2 === 0;
      const moment = joining
        ? () => seen((path, method) => method === 'PUT' && path.endsWith(`/${CREATORS_FILE}`))
        : () => seen((path, method) => method === 'PUT' && path.includes('/v1/users/'));
      const kill = (child: ChildProcess) => {
        const poll = setInterval(() => {
          if (child.exitCode !== null || child.signalCode !== null) clearInterval(poll);
          else if (moment()) {
            clearInterval(poll);
            setTimeout(() => child.kill('SIGKILL'), Math.floor(random() * (joining ? 20 : 100)));
          }
        }, 2);
      };
      const shard = round % 3;
      const run = await runCliAsync(args(shard), { env: s3Env(), onSpawn: kill });
      if (run.signal === 'SIGKILL') {
        if (joining) killedJoining++;
        else killedUploading++;
      } else expect(run.code, run.stderr).toBe(0);
      // Whatever the moment, readers see a whole API: a list that parses and names only served users.
      // A composer killed between its two completions leaves the variant one join apart until the
      // next whole publish joins again (the lone publishes at the end must make it exact).
      if (run.signal === 'SIGKILL') variantMayDiffer ||= joining;
      else variantMayDiffer = false;
      await sampleReader(site.server.endpoint, site.bucket, variantMayDiffer);
      // The killed holder's leases (3 s) run out; HTTP dates are whole seconds.
      await new Promise((r) => setTimeout(r, 5500));
    }
    expect(killedUploading).toBeGreaterThan(1);
    expect(killedJoining).toBeGreaterThan(1);
    for (const i of [0, 1, 2]) {
      const run = await runCliAsync(args(i), { env: s3Env() });
      expect(run.code, run.stderr).toBe(0);
    }
    await proxy.close();
    await expectShardedExact(site);
  }, 240_000);

  it('refuses bad shards, a shard count other than the prefix has, and trees of the other kind, changing nothing', async () => {
    const site = await newShardedSite(workspace.server, workspace.dir, 200, 2);
    const endpoint = site.server.endpoint;
    const to = (prefix: string) => ['--to', `s3://${site.bucket}/${prefix}`, '--endpoint', endpoint];
    for (const bad of ['3/2', '0/0', 'x/4'])
      expect((await runCliAsync(['publish', '--out', site.shards[0]!, '--shard', bad, ...to(PREFIX)], { env: s3Env() })).code).toBe(2);
    expect(
      (await runCliAsync(['build', '--db', site.db, '--out', join(workspace.dir, 'x')], { env: { ...s3Env(), PROFILE_SHARD: '2/2' } }))
        .code,
    ).toBe(2);
    // One shard published: the list waits for the other, and compose says which (exit 11).
    expect((await runCliAsync(shardArgs(site, 0, endpoint), { env: s3Env() })).code).toBe(0);
    const compose = await runCliAsync(['compose', ...to(PREFIX)], { env: s3Env() });
    expect(compose.code).toBe(11);
    expect(compose.stderr).toContain('1/2');
    const before = await readBucket(endpoint, site.bucket, PREFIX);
    expect(before.has(CREATORS_FILE)).toBe(false);
    // Another shard count (the message names the prefix's), a whole tree into the sharded prefix.
    const four = join(workspace.dir, 'four');
    buildTo(site.db, four, { shard: { index: 1, count: 4 } });
    const wrongCount = await runCliAsync(['publish', '--out', four, ...to(PREFIX)], { env: s3Env() });
    expect(wrongCount.code, wrongCount.stderr).toBe(9);
    expect(wrongCount.stderr).toContain('split into 2 shards');
    expect((await runCliAsync(['publish', '--out', site.whole, ...to(PREFIX)], { env: s3Env() })).code).toBe(10);
    const composeFour = await runCliAsync(['compose', '--shards', '4', ...to(PREFIX)], { env: s3Env() });
    expect(composeFour.code, composeFour.stderr).toBe(9);
    expect(composeFour.stderr).toContain('split into 2 shards');
    const unchanged = await readBucket(endpoint, site.bucket, PREFIX);
    expect([...unchanged.keys()].sort()).toEqual([...before.keys()].sort());
    for (const [key, object] of before) expect(unchanged.get(key)!.bytes, key).toBe(object.bytes);
    // A shard into a prefix of whole trees.
    expect((await runCliAsync(['publish', '--out', site.whole, ...to('whole')], { env: s3Env() })).code).toBe(0);
    const wholeBefore = await readBucket(endpoint, site.bucket);
    expect(
      (
        await runCliAsync(
          shardArgs(site, 1, endpoint).map((a) => (a.endsWith(PREFIX) ? a.replace(PREFIX, 'whole') : a)),
          { env: s3Env() },
        )
      ).code,
    ).toBe(10);
    const after = await readBucket(endpoint, site.bucket);
    expect([...after.keys()].sort()).toEqual([...wholeBefore.keys()].sort());
    for (const [key, object] of wholeBefore) if (!key.includes('.profile-snapshot/')) expect(after.get(key)!.bytes, key).toBe(object.bytes);
  }, 120_000);
});

// R2's rule for the parts of one upload (every part but the last the same size, the last no larger),
// met by the join, and what it joined served by the committed Worker in workerd (miniflare), over
// real HTTP. In this file, not beside it: two files of moto-heavy shard tests side by side starve
// the concurrent reader above on a loaded machine.
describe.skipIf(!hasMoto)('a joined list under R2 rules, served by the Worker in workerd', () => {
  /** The sizes of the parts the object was completed from, as the store reports them (HEAD ?partNumber=). */
  async function partSizes(bucket: string, key: string): Promise<number[]> {
    const client = clientFor(workspace.server.endpoint);
    try {
      const first = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key, PartNumber: 1 }));
      const sizes = [first.ContentLength!];
      for (let part = 2; part <= (first.PartsCount ?? 1); part++) {
        sizes.push((await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key, PartNumber: part }))).ContentLength!);
      }
      return sizes;
    } finally {
      client.destroy();
    }
  }

  it('joins in parts of 5 MiB but the last, and the Worker serves the list and its gzip variant', async () => {
    // Bios of 12 kB: a list of about 12 MB in 3 parts, so windows of 5 MiB cross the parts' seams.
    const site = await newShardedSite(workspace.server, workspace.dir, 1200, 3, 12_000);
    process.env.AWS_ACCESS_KEY_ID = CREDENTIALS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = CREDENTIALS.secretAccessKey;
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
    const remote = {
      bucket: site.bucket,
      prefix: PREFIX,
      endpoint: workspace.server.endpoint,
      region: 'us-east-1',
      pathStyle: true,
      concurrency: 16,
      equalParts: true,
    };
    for (const [index, out] of site.shards.entries()) {
      const report = await publish({ out, shard: { index, count: site.shards.length }, remote });
      if (index === site.shards.length - 1) expect(report.shard?.join?.joined).toBe(true);
    }

    const listBytes = readFileSync(join(site.whole, CREATORS_FILE)).length;
    expect(listBytes).toBeGreaterThan(10 * MiB);
    const identity = await partSizes(site.bucket, `${PREFIX}/${CREATORS_FILE}`);
    expect(identity.length).toBe(Math.ceil(listBytes / (5 * MiB)));
    expect(identity.slice(0, -1).every((size) => size === 5 * MiB)).toBe(true);
    expect(identity.at(-1)).toBeLessThanOrEqual(5 * MiB);
    const gzip = await partSizes(site.bucket, `${PREFIX}/${CREATORS_GZIP_FILE}`);
    expect(gzip.slice(0, -1).every((size) => size === 5 * MiB)).toBe(true);
    expect(gzip.at(-1)).toBeLessThanOrEqual(5 * MiB);
    await expectShardedExact(site);

    // The Worker reads the list and its variant alone here: the profiles are the request table's (worker.test.ts).
    const lists = new Set([`${PREFIX}/${CREATORS_FILE}`, `${PREFIX}/${CREATORS_GZIP_FILE}`]);
    const objects = await readBucket(workspace.server.endpoint, site.bucket, '', (key) => lists.has(key));
    const host = await startWorker(objects, { PREFIX: PREFIX, CACHE: 'off' });
    try {
      const list = Buffer.from(objects.get(`${PREFIX}/${CREATORS_FILE}`)!.bytes, 'latin1');
      expect(await gzipNegotiationFailures((method, target, headers) => send(host.origin, method, target, headers), list)).toEqual([]);
      const served = await send(host.origin, 'GET', '/service-api/v1/creators');
      expect(served.status).toBe(200);
      expect(JSON.parse(served.body).data.length).toBe(JSON.parse(readFileSync(join(site.whole, CREATORS_FILE), 'utf8')).data.length);
    } finally {
      await host.close();
    }
  }, 240_000);
});
