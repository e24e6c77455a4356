/**
 * The lease that makes publishers on one prefix take turns, against moto_server (which honours
 * conditional writes as S3 and R2 do): a publisher that finds the prefix held waits, then exits 8
 * naming the holder; a holder killed with kill -9 is taken over after its TTL and the prefix ends
 * exact; a record another writer left behind is re-checked, not trusted. And s3rver, which ignores
 * conditional writes, is detected and refused unless --single-writer accepts the risk.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { Remote } from '../../src/publish/bucket/client.js';
import { thisHolder } from '../../src/publish/lease/holder.js';
import { Lease } from '../../src/publish/lease/lease.js';
import { NO_BASE, serializeIntent } from '../../src/publish/record/format.js';
import { REMOTE_INTENT } from '../../src/publish/keys.js';
import { buildTo } from '../helpers/build.js';
import { runCliAsync, startCli } from '../helpers/process.js';
import { clientFor, CREDENTIALS, hasMoto, readBucket, s3Env, startMoto, startProxy, startS3rver } from '../helpers/s3.js';
import { expectExact, newSite, PREFIX, publicObjects, publishArgs, publishSite, s3Workspace, sql, type Site } from './helpers.js';

const SECRET = 'lease-test-secret-never-printed';

const env = () => s3Env({ AWS_SECRET_ACCESS_KEY: SECRET });

/** A Remote on the site's bucket, as a second publisher in this process. */
async function remoteOf(site: Site): Promise<Remote> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  process.env.AWS_ACCESS_KEY_ID = CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = CREDENTIALS.secretAccessKey;
  return Remote.open({
    bucket: site.bucket,
    prefix: PREFIX,
    endpoint: site.endpoint,
    region: 'us-east-1',
    pathStyle: true,
    concurrency: 4,
  });
}

describe.skipIf(!hasMoto)('the publish lease (moto_server)', () => {
  if (!hasMoto) console.warn('moto_server is not installed: the lease tests are skipped (pip install "moto[server]")');
  const workspace = s3Workspace(startMoto, 'ps-publish-lease-');

  it('waits for a held prefix, then exits 8 naming the holder and its age, never a credential', async () => {
    const site = await newSite(workspace.server, workspace.dir, 20);
    const remote = await remoteOf(site);
    const holder = { ...thisHolder('held-by-test'), host: 'ci-runner-7' };
    const lease = await Lease.acquire(remote, 'lock', { ttlMs: 60_000, singleWriter: false, holder }, 0);
    try {
      const started = performance.now();
      const run = await runCliAsync(publishArgs(site, site.endpoint, '--lock-timeout', '1.5'), { env: env() });
      expect(run.code).toBe(8);
      expect(performance.now() - started).toBeGreaterThanOrEqual(1500);
      expect(run.stderr).toMatch(/the prefix is held by another publisher: host ci-runner-7, pid \d+ \(held-by-test\), renewed \d+ s ago/);
      expect(run.stderr).toMatch(/TTL 60 s; waited 2 s/);
      expect(run.stderr).toMatch(/Fix: retry later \(exit 8 is transient\)/);
      expect(run.stderr + run.stdout).not.toContain(SECRET);
      // Nothing public was written while waiting.
      expect(publicObjects(await readBucket(site.endpoint, site.bucket, PREFIX)).size).toBe(0);
    } finally {
      await lease.release();
      remote.close();
    }
    // Released: the next publish takes the prefix at once.
    const after = await runCliAsync(publishArgs(site, site.endpoint, '--lock-timeout', '0'), { env: env() });
    expect(after.code).toBe(0);
    await expectExact(site);
  });

  it('takes over from a holder killed with kill -9 mid-publish once its TTL has passed, and ends exact', async () => {
    const site = await newSite(workspace.server, workspace.dir, 120);
    await publishSite(site);
    // A second tree: every profile changes, so the killed publish is mid-way through many uploads.
    const other = join(workspace.dir, 'other');
    cpSync(site.db, join(workspace.dir, 'other.db'));
    sql(
      join(workspace.dir, 'other.db'),
      "UPDATE users SET display_name = 'Other ' || id; UPDATE users SET status = 'deleted' WHERE id % 17 = 0;",
    );
    buildTo(join(workspace.dir, 'other.db'), other);
    const proxy = await startProxy(site.endpoint, { delayMs: 20 });
    const killed = startCli(publishArgs({ ...site, out: other }, proxy.endpoint, '--lease-ttl', '3', '--concurrency', '2', '--force'), {
      env: env(),
    });
    // Killed once its intent is written and some profiles are up: the bucket is half-way between trees.
    const puts = () => proxy.log.filter((r) => r.method === 'PUT' && r.path.includes('/api/v1/users/')).length;
    for (let i = 0; puts() < 20; i++) {
      if (i > 400) throw new Error(`the publish to kill did not get going: ${killed.stderr()}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    killed.child.kill('SIGKILL');
    await killed.exit;
    const started = performance.now();
    const next = await runCliAsync(publishArgs(site, site.endpoint, '--lock-timeout', '30', '--force'), { env: env() });
    const waited = performance.now() - started;
    await proxy.close();
    expect(next.code, next.stderr).toBe(0);
    // It waited for the dead holder's lease to expire (3 s TTL, whole-second dates), not for good.
    expect(waited).toBeGreaterThan(1500);
    expect(waited).toBeLessThan(15_000);
    // What the killed publish touched was re-checked from its intent: the bucket is the tree again.
    await expectExact(site);
  }, 60_000);

  it('a holder paused past its TTL (SIGSTOP) writes nothing more once resumed: the one that took over wins', async () => {
    // Paused at three points of its uploads, a round each.
    for (const pauseAfter of [6, 20, 40]) {
      const round = join(workspace.dir, `round-${pauseAfter}`);
      mkdirSync(round);
      const site = await newSite(workspace.server, round, 120);
      await publishSite(site);
      const other = join(workspace.dir, `other-${pauseAfter}`);
      cpSync(site.db, `${other}.db`);
      sql(`${other}.db`, "UPDATE users SET display_name = 'Paused ' || id;");
      buildTo(`${other}.db`, other);
      sql(site.db, "UPDATE users SET bio = 'The winner' WHERE id % 2 = 0;");
      buildTo(site.db, site.out);
      // Paused while both of its upload slots (--concurrency 2) wait for answers: profile PUTs the
      // proxy holds, received whole and not yet answered. Counting any request held would count the
      // lease's renewals too (their own thread), and could pause an upload between its fence check and
      // its socket (a new connection's connect lies there), a gap no lease on S3 can cover (docs/publish.md).
      const profilePut = (method: string, path: string) => method === 'PUT' && path.includes('/api/v1/users/');
      const received = { profilePuts: 0, afterResume: [] as string[], resumed: false };
      const proxy = await startProxy(site.endpoint, {
        delayMs: 20,
        fault: (_n, method, path) => {
          if (!profilePut(method, path)) return undefined;
          received.profilePuts++;
          if (received.resumed) received.afterResume.push(path);
          return undefined;
        },
      });
      const paused = startCli(publishArgs({ ...site, out: other }, proxy.endpoint, '--lease-ttl', '2', '--concurrency', '2'), {
        env: env(),
      });
      const puts = () => proxy.log.filter((r) => profilePut(r.method, r.path)).length;
      for (let i = 0; puts() < pauseAfter || received.profilePuts - puts() < 2; i++) {
        if (i > 4000) throw new Error(`the publish to pause did not get going: ${paused.stderr()}`);
        await new Promise((r) => setTimeout(r, 1));
      }
      paused.child.kill('SIGSTOP');
      try {
        const winner = await runCliAsync(publishArgs(site, site.endpoint, '--lock-timeout', '30'), { env: env() });
        expect(winner.code, winner.stderr).toBe(0);
      } finally {
        received.resumed = true;
        paused.child.kill('SIGCONT');
      }
      const resumed = await paused.exit;
      await proxy.close();
      expect(received.afterResume, 'profile PUTs sent once resumed').toEqual([]);
      // It found its lease gone (not renewed in time, or taken over) and stopped before writing again.
      expect([6, 8], `exit ${resumed.code}: ${paused.stderr()}`).toContain(resumed.code);
      expect(paused.stderr()).toMatch(/lease on .* (was not renewed in time|was taken over)/);
      await expectExact(site);
    }
  }, 90_000);

  it('does not trust a record another writer left: an intent over another state makes it list and re-check', async () => {
    const site = await newSite(workspace.server, workspace.dir, 30);
    await publishSite(site);
    // A writer outside the lease: changes a profile object behind the record, and leaves an intent
    // planned over a state that is not the one in the bucket.
    const client = clientFor(site.endpoint);
    const key = (path: string) => `${PREFIX}/${path}`;
    await client.send(new PutObjectCommand({ Bucket: site.bucket, Key: key('api/v1/users/user00002'), Body: '{"foreign":true}' }));
    const foreign = serializeIntent({ id: 'foreign', base: 'not-this-state', profiles: new Set(), files: new Set(), strays: new Set() });
    await client.send(new PutObjectCommand({ Bucket: site.bucket, Key: key(REMOTE_INTENT), Body: foreign }));
    client.destroy();
    const next = await publishSite(site);
    expect(next.compared).toBe('listing');
    expect(next.profiles.put).toBe(1); // both aliases go up again: one of them did not match
    await expectExact(site);
    // The record it left is whole again: the next check is quiet and trusts it.
    const quiet = await publishSite(site);
    expect(quiet.compared).toBe('state');
    expect(quiet.changed).toBe(false);
  });

  it('re-checks what an unresolved intent of another publish names, trusting the rest', async () => {
    const site = await newSite(workspace.server, workspace.dir, 30);
    await publishSite(site);
    const remote = await remoteOf(site);
    const state = await readBucket(site.endpoint, site.bucket, PREFIX);
    remote.close();
    const stateId = /remote state 1\t(\S+)/.exec(gunzip(state.get('.profile-snapshot/remote-state')!.bytes))![1]!;
    // Another publish id's intent over this very state, naming one profile it may have overwritten.
    const client = clientFor(site.endpoint);
    await client.send(new PutObjectCommand({ Bucket: site.bucket, Key: `${PREFIX}/api/v1/users/user00003`, Body: '{"half":true}' }));
    const intent = serializeIntent({ id: 'killed', base: stateId, profiles: new Set(['user00003']), files: new Set(), strays: new Set() });
    await client.send(new PutObjectCommand({ Bucket: site.bucket, Key: `${PREFIX}/${REMOTE_INTENT}`, Body: intent }));
    client.destroy();
    const next = await publishSite(site);
    expect(next.compared).toBe('state');
    expect(next.requests.LIST).toBe(0);
    expect(next.profiles.put).toBe(1);
    await expectExact(site);
    expect(NO_BASE).not.toBe(stateId);
  });
});

describe('a store that ignores conditional writes (s3rver)', () => {
  const workspace = s3Workspace(startS3rver, 'ps-publish-unfenced-');

  it('is refused with exit 6 before any public object is written, unless --single-writer accepts the risk', async () => {
    const site = await newSite(workspace.server, workspace.dir, 10);
    const refused = await runCliAsync(publishArgs(site), { env: env() });
    expect(refused.code).toBe(6);
    expect(refused.stderr).toMatch(/ignores conditional writes \(a second If-None-Match: \* create was accepted\)/);
    expect(refused.stderr).toMatch(/Fix: .*pass --single-writer if only one publisher ever writes to this prefix/);
    expect(publicObjects(await readBucket(site.endpoint, site.bucket, PREFIX)).size).toBe(0);

    const accepted = await runCliAsync(publishArgs(site, site.endpoint, '--single-writer'), { env: env() });
    expect(accepted.code).toBe(0);
    expect(accepted.stderr).toMatch(/warning: .* ignores conditional writes \(accepted with --single-writer\)/);
    await expectExact(site);
    // Remembered in the lease: the next changing publish with the flag does not probe again.
    sql(site.db, 'UPDATE users SET views = views + 1 WHERE id = 2');
    buildTo(site.db, site.out);
    const again = await runCliAsync([...publishArgs(site, site.endpoint, '--single-writer'), '--json'], { env: env() });
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).requests.DELETE).toBe(0);
    // Without the flag it is refused again, whatever an earlier publisher accepted.
    sql(site.db, 'UPDATE users SET views = views + 1 WHERE id = 3');
    buildTo(site.db, site.out);
    expect((await runCliAsync(publishArgs(site), { env: env() })).code).toBe(6);
  });
});

function gunzip(latin1: string): string {
  return gunzipSync(Buffer.from(latin1, 'latin1')).toString('utf8');
}
