/**
 * A composer that stalls never puts an older list back (docs/scaling-out.md, "Joins are fenced"):
 * frozen with SIGSTOP as its completions go out, held past its compose lease while another shard
 * publishes a newer part (with removed users) and joins it, then resumed: its completions, sent again
 * after the connection dropped under them, meet the fence; one that had passed the fence before the
 * freeze meets the bucket's condition; the newer list stands.
 */
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CREATORS_FILE, CREATORS_GZIP_FILE } from '../../src/core/layout.js';
import { runCliAsync } from '../helpers/process.js';
import { clientFor, hasMoto, readBucket, s3Env, startMoto, startProxy } from '../helpers/s3.js';
import { PREFIX, sql, s3Workspace } from './helpers.js';
import { buildShards, expectJoinedList, newShardedSite, sampleReader, shardArgs } from './shard-helpers.js';

const workspace = s3Workspace(startMoto, 'profile-snapshot-join-fence-');

const usernames = (list: string): string[] => (JSON.parse(list).data as { username: string }[]).map((user) => user.username.toLowerCase());

/** Whether the process is stopped (SIGSTOP): its state in /proc. */
const stopped = (pid: number) => / T /.test(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\)/, ''));

/** The listed users (of the list or its variant) without both profile objects in the bucket. */
async function listedWithoutProfile(endpoint: string, bucket: string): Promise<string[]> {
  const objects = await readBucket(endpoint, bucket, PREFIX);
  const listed = usernames(Buffer.from(objects.get(CREATORS_FILE)!.bytes, 'latin1').toString('utf8'));
  return listed.filter((name) => !objects.has(`api/v1/users/${name}`) || !objects.has(`service-api/v1/users/${name}`));
}

describe.skipIf(!hasMoto)('joins fenced in the bucket and in the process (moto_server)', () => {
  it('a composer frozen as it completes, past its lease, while a newer join lands: the newer list stands, no listed user 404s', async () => {
    const site = await newShardedSite(workspace.server, workspace.dir, 400, 2);
    for (const i of [0, 1]) {
      const run = await runCliAsync(shardArgs(site, i, workspace.server.endpoint), { env: s3Env() });
      expect(run.code, run.stderr).toBe(0);
    }
    // Creators of shard 1 leave: the newer join drops them, and shard 1's publish then deletes their profiles.
    const listed = new Set(usernames(readFileSync(join(site.whole, CREATORS_FILE), 'utf8')));
    const leaving = readdirSync(join(site.shards[1]!, 'api/v1/users'))
      .filter((name) => listed.has(name))
      .slice(0, 8);
    expect(leaving.length).toBe(8);
    sql(site.db, `UPDATE users SET status = 'deleted' WHERE lower(username) IN (${leaving.map((name) => `'${name}'`).join(', ')})`);
    buildShards(site);

    // The stale composer: `compose` over the old parts (the record of the last join gone, so it joins
    // them again), frozen the moment its first completion arrives. The list and its variant are gone
    // too, so its completions ask for no object there (If-None-Match: *, which moto honours; it
    // ignores If-Match there): a completion that passed the fence before the freeze, sent once it
    // resumes, meets the bucket's condition; the others meet the fence.
    const client = clientFor(workspace.server.endpoint);
    for (const path of ['.profile-snapshot/shards/joined', CREATORS_FILE, CREATORS_GZIP_FILE])
      await client.send(new DeleteObjectCommand({ Bucket: site.bucket, Key: `${PREFIX}/${path}` }));
    client.destroy();
    let composer: number | undefined;
    let frozen = false;
    let released = false;
    const proxy = await startProxy(workspace.server.endpoint, {
      fault: (_n, method, path, query) => {
        // Both completions: the list's and its variant's (`.creators.gz`).
        if (released || method !== 'POST' || !query.includes('uploadId=') || !/\/\.?creators(\.gz)?$/.test(path)) return undefined;
        if (!frozen && composer !== undefined) process.kill(composer, 'SIGSTOP');
        frozen = true;
        return 'reset';
      },
    });
    // The stale composer's lease runs out soon after it freezes; the newer publisher's own leases are
    // long, so that a loaded machine never lets them lapse mid-publish.
    const compose = ['compose', '--to', `s3://${site.bucket}/${PREFIX}`, '--endpoint', proxy.endpoint, '--lease-ttl', '3'];
    const stale = runCliAsync(compose, { env: s3Env(), onSpawn: (child) => (composer = child.pid) });
    try {
      const started = Date.now();
      while (!(frozen && stopped(composer!))) {
        if (Date.now() - started > 60_000) throw new Error(`the composer never reached its completions: ${JSON.stringify(await stale)}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // The newer join: shard 1's publish waits out the frozen composer's lease, joins, deletes the leavers.
      const newer = await runCliAsync(shardArgs(site, 1, workspace.server.endpoint, '--lease-ttl', '30'), { env: s3Env() });
      expect(newer.code, newer.stderr).toBe(0);
      expect(await listedWithoutProfile(workspace.server.endpoint, site.bucket)).toEqual([]);
    } finally {
      released = true;
      if (composer !== undefined && frozen) process.kill(composer, 'SIGCONT');
    }
    const run = await stale;
    await proxy.close();
    // Its lease gone, the stale composer sent nothing more: the newer list stands. It says why.
    expect(await listedWithoutProfile(workspace.server.endpoint, site.bucket)).toEqual([]);
    const objects = await readBucket(workspace.server.endpoint, site.bucket, PREFIX);
    const list = Buffer.from(objects.get(CREATORS_FILE)!.bytes, 'latin1');
    const gzip = Buffer.from(objects.get(CREATORS_GZIP_FILE)!.bytes, 'latin1');
    expectJoinedList(list, gzip, usernames(readFileSync(join(site.whole, CREATORS_FILE), 'utf8')));
    expect(await sampleReader(workspace.server.endpoint, site.bucket)).toBe(true);
    // Stopped by the fence: once resumed, its own clock says the lease lapsed (exit 6), or its renewal
    // thread finds the newer publisher's lease first (taken over: exit 8, as any prefix held); or, when
    // both completions had passed it before the freeze, refused by the bucket (exit 0: the newer join
    // stands).
    if (run.code === 6) expect(run.stderr).toMatch(/compose lease .* (not renewed in time|taken over)/);
    else if (run.code === 8) expect(run.stderr).toMatch(/compose lease .* taken over by .*; this publish stopped writing/);
    else expect(run.stderr, `exit ${run.code}`).toMatch(/another composer joined the creators list .* its join stands/);
  }, 180_000);
});
