/**
 * `publish` against real S3 servers: s3rver always, moto_server too when it is installed. The
 * bucket must end exactly as the tree (keys, bytes, headers), touching only what changed.
 */
import { describe, expect, it } from 'vitest';
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { buildTo } from '../helpers/build.js';
import { clientFor, hasMoto, readBucket, startMoto, startS3rver, type S3Server } from '../helpers/s3.js';
import { DeletionGuardError } from '../../src/publish/plan/plan.js';
import type { PublishOptions } from '../../src/publish/report.js';
import { parseState } from '../../src/publish/record/format.js';

const REMOTE_STATE_KEY = '.profile-snapshot/remote-state';
import { expectExact, expectListCovered, newSite, PREFIX, publicObjects, publishSite, s3Workspace, sql, totalRequests } from './helpers.js';
import { tableOf } from '../../src/publish/plan/profile-table.js';

const servers: [string, () => Promise<S3Server>][] = [['s3rver', startS3rver]];
if (hasMoto) servers.push(['moto', startMoto]);

describe.each(servers)('publish to %s', (_name, start) => {
  const workspace = s3Workspace(start, 'ps-publish-');
  const server = () => workspace.server;

  it('uploads every public file with the contract headers, then only what changed', async () => {
    const site = await newSite(server(), workspace.dir, 200);
    const first = await publishSite(site);
    expect(first.compared).toBe('listing');
    expect(first.objects).toMatchObject({ put: 200 * 2 + 7, deleted: 0, unchanged: 0 });
    const objects = await expectExact(site);
    // Every byte sent counted once, though the uploads ran side by side.
    expect(first.bytes).toBe([...publicObjects(objects).values()].reduce((sum, object) => sum + object.bytes.length, 0));

    // Quiet: the state says everything is live; no listing, no write.
    const quiet = await publishSite(site);
    expect(quiet.compared).toBe('state');
    expect(quiet.changed).toBe(false);
    expect(quiet.requests.LIST).toBe(0);
    expect(quiet.requests.PUT + quiet.requests.DELETE + quiet.requests.POST).toBe(0);
    expect(totalRequests(quiet)).toBeLessThanOrEqual(3);

    // 1% changed (two users), one removed, one new.
    sql(
      site.db,
      "UPDATE users SET views = views + 1000 WHERE id IN (3, 7); UPDATE users SET status = 'deleted' WHERE id = 11;" +
        " INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES (900, 'Newcomer', 'New', '', '2025-06-01 00:00:00', 1, 'active');",
    );
    buildTo(site.db, site.out);
    const changed = await publishSite(site);
    expect(changed.compared).toBe('state');
    expect(changed.requests.LIST).toBe(0);
    expect(changed.profiles).toEqual({ put: 3, deleted: 1 });
    expect(changed.list).toBe(true);
    // Three profiles under two aliases, the list and its variant, the intent and the state, and the
    // lock taken and released; the two removed objects. The record's headers are read first (the
    // quiet check: ranged GETs), then the record whole, the lock once, and the record again as
    // conditional GETs answered 304, after the lock is held.
    expect(changed.requests.PUT).toBe(3 * 2 + 2 + 2 + 2);
    expect(changed.requests.GET).toBe(2 + 2 + 1 + 2);
    expect(changed.objects.deleted).toBe(2);
    await expectExact(site);
  });

  it('reconciles a bucket filled by hand or by an older run, by content, when it has no state', async () => {
    const site = await newSite(server(), workspace.dir, 30);
    const client = clientFor(site.endpoint);
    const key = (path: string) => `${PREFIX}/${path}`;
    // An older run's leftovers: a stale profile, a profile whose user is gone, one alias missing, a stray file.
    await client.send(
      new PutObjectCommand({ Bucket: site.bucket, Key: key('api/v1/users/user00001'), Body: Buffer.from('{"stale":true}') }),
    );
    await client.send(new PutObjectCommand({ Bucket: site.bucket, Key: key('api/v1/users/gone'), Body: Buffer.from('{}') }));
    await client.send(new PutObjectCommand({ Bucket: site.bucket, Key: key('index.html'), Body: Buffer.from('<h1>') }));
    await publishSite(site);
    await expectExact(site);
    await client.send(new DeleteObjectCommand({ Bucket: site.bucket, Key: key('service-api/v1/users/user00002') }));
    await client.send(new PutObjectCommand({ Bucket: site.bucket, Key: key('_errors/not-found.json'), Body: Buffer.from('{}') }));
    // The state cannot know what was done behind its back; --full lists and compares by content.
    const full = await publishSite(site, { full: true });
    expect(full.compared).toBe('listing');
    expect(full.objects.put).toBe(3); // both aliases of user00002 (one missing), the damaged error document
    await expectExact(site);
    client.destroy();
  });

  it('refuses to delete more than 10% of the live profiles, changing nothing, unless allowed', async () => {
    const site = await newSite(server(), workspace.dir, 300);
    await publishSite(site);
    const before = await readBucket(site.endpoint, site.bucket, PREFIX);
    // A truncated store: 80 of 300 users left (440 objects to delete, more than max(100, 60)).
    sql(site.db, 'DELETE FROM socials WHERE user_id > 80; DELETE FROM bans WHERE user_id > 80; DELETE FROM users WHERE id > 80;');
    buildTo(site.db, site.out);
    const refused = await publishSite(site).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DeletionGuardError);
    expect((refused as DeletionGuardError).exitCode).toBe(7);
    expect((refused as Error).message).toMatch(/delete 440 objects/);
    expect((refused as DeletionGuardError).hint).toMatch(/--max-deletes 440/);
    expect(await readBucket(site.endpoint, site.bucket, PREFIX)).toEqual(before);

    await expect(publishSite(site, { maxDeletes: 439 })).rejects.toBeInstanceOf(DeletionGuardError);
    const allowed = await publishSite(site, { maxDeletes: 440 });
    expect(allowed.objects.deleted).toBe(440);
    await expectExact(site);
  });

  it('force skips the guard; a dry run decides and writes nothing', async () => {
    const site = await newSite(server(), workspace.dir, 150);
    await publishSite(site);
    sql(site.db, 'DELETE FROM socials; DELETE FROM bans; DELETE FROM users WHERE id > 10;');
    buildTo(site.db, site.out);
    const before = await readBucket(site.endpoint, site.bucket, PREFIX);
    const dry = await publishSite(site, { dryRun: true, force: true });
    expect(dry.dryRun).toBe(true);
    expect(dry.objects.deleted).toBeGreaterThan(200);
    expect(dry.requests.PUT + dry.requests.DELETE + dry.requests.POST).toBe(0);
    expect(await readBucket(site.endpoint, site.bucket, PREFIX)).toEqual(before);
    await publishSite(site, { force: true });
    const objects = await expectExact(site);
    expect(expectListCovered(publicObjects(objects))).toBeGreaterThan(0);
  });

  it('finishes the job of a publish that failed half-way, leaving nothing orphaned', async () => {
    const site = await newSite(server(), workspace.dir, 40);
    await publishSite(site);
    // New users arrive and one goes; the publish dies after uploading some of them.
    sql(
      site.db,
      "UPDATE users SET status = 'deleted' WHERE id = 6; INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES (901, 'late1', 'L', '', '2025-06-01 00:00:00', 1, 'active'), (902, 'late2', 'L', '', '2025-06-01 00:00:00', 1, 'active');",
    );
    buildTo(site.db, site.out);
    const { startProxy } = await import('../helpers/s3.js');
    let puts = 0;
    // The lock, the intent and one profile's two objects get through; then every request fails.
    const proxy = await startProxy(site.endpoint, { fault: (_n, method) => (method === 'PUT' && ++puts > 4 ? 'status503' : undefined) });
    // Its lock cannot be released either (every PUT fails): a short TTL lets the next publish take over soon.
    const failing = { remote: { maxAttempts: 2 } as PublishOptions['remote'], leaseTtlMs: 2000 };
    await expect(publishSite(site, failing, proxy.endpoint)).rejects.toMatchObject({
      exitCode: 6,
    });
    await proxy.close();
    const half = publicObjects(await readBucket(site.endpoint, site.bucket, PREFIX));
    expect(half.has('api/v1/users/late1') || half.has('api/v1/users/late2')).toBe(true);
    expectListCovered(half); // the old list is still live: it names neither
    // Nothing is deleted after a failure: the user who went still has both objects.
    expect(half.has('api/v1/users/user00006') && half.has('service-api/v1/users/user00006')).toBe(true);

    // Before the next publish, the store drops both newcomers again: their uploaded objects must go.
    sql(site.db, 'DELETE FROM users WHERE id > 900;');
    buildTo(site.db, site.out);
    const next = await publishSite(site);
    expect(next.compared).toBe('state');
    expect(next.requests.LIST).toBe(0);
    await expectExact(site);
  });

  it("keeps what was live in each checkpoint's state: a publish stopped after one re-sends only the rest", async () => {
    const site = await newSite(server(), workspace.dir, 60);
    await publishSite(site);
    const stateOf = async () => {
      const objects = await readBucket(site.endpoint, site.bucket, PREFIX, (key) => key === REMOTE_STATE_KEY);
      return parseState(Buffer.from(objects.get(REMOTE_STATE_KEY)!.bytes, 'latin1'));
    };
    const live = tableOf((await stateOf()).live.profiles);
    // A third of the users change; the publish checkpoints every 5 and is stopped after its second chunk.
    sql(site.db, 'UPDATE users SET views = views + 1 WHERE id % 3 = 0;');
    buildTo(site.db, site.out);
    const stopped = new Error('stopped by the test');
    const onProgress = (progress: { phase: string; done: number }) => {
      if (progress.phase === 'upload' && progress.done > 2 * 2 * 5) throw stopped;
    };
    await expect(publishSite(site, { checkpointProfiles: 5, onProgress })).rejects.toBe(stopped);
    // The checkpoint's state: every profile live before, the sent ones with their new hashes.
    const checkpoint = tableOf((await stateOf()).live.profiles);
    expect([...checkpoint.keys()]).toEqual([...live.keys()]);
    expect([...checkpoint].filter(([name, hash]) => hash !== live.get(name)).length).toBeGreaterThanOrEqual(5);
    const next = await publishSite(site);
    expect(next.objects.put).toBeLessThan(2 * 20);
    await expectExact(site);
  });
});

describe('publish of a large creators list', () => {
  const workspace = s3Workspace(startS3rver, 'ps-publish-multipart-');

  it("uploads it in parts, and a listing recognises the parts' ETag", async () => {
    // 120 active users with bios of 50 KB: a list of 6 MB, in two parts of 5 MB (S3's smallest).
    const site = await newSite(workspace.server, workspace.dir, 150, 50_000);
    const remote = { multipartThresholdBytes: 5 * 1024 * 1024, multipartPartBytes: 5 * 1024 * 1024 } as PublishOptions['remote'];
    const first = await publishSite(site, { remote });
    expect(first.list).toBe(true);
    expect(first.requests.POST).toBeGreaterThanOrEqual(2); // create and complete the multipart upload
    await expectExact(site);
    const full = await publishSite(site, { remote, full: true });
    expect(full.objects.put).toBe(0);
  });
});
