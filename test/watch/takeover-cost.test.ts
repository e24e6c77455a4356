/**
 * What a takeover costs: a leader killed with kill -9 while its publish's uploads are in flight
 * leaves a record (the state, and the intent of the publish it did not finish); the watcher that
 * takes over trusts it but for what the intent names, so it sends only those objects and what
 * changed since, never the whole tree again. The watchers build their own trees with the wall
 * clock, as on two machines.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { clientFor, hasMoto, s3Env, startMoto, startProxy } from '../helpers/s3.js';
import { s3Workspace } from '../publish/helpers.js';
import { ensureCompiled, makeStore, sql, startCli, status, userName, waitFor } from './helpers.js';

const PREFIX = 'snap';
const USERS = 800;
/** Long enough that renewals never lapse on a loaded machine (the first publish floods the bucket). */
const TTL_S = 10;
const INTERVAL_S = 0.5;
/** Users changed for the publish the leader is killed in, and the one changed after the kill. */
const CHANGED = 200;
const LATER = 700;
/** Profiles between two checkpoints of a publish's record, lowered so that a small first publish has several. */
const EVERY = 150;

describe.skipIf(!hasMoto)('the cost of a takeover (moto_server)', () => {
  const workspace = s3Workspace(startMoto, 'ps-watch-takeover-cost-');
  beforeAll(() => ensureCompiled(), 120_000);

  const bio = async (bucket: string, id: number): Promise<string | undefined> => {
    const client = clientFor(workspace.server.endpoint);
    try {
      const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `${PREFIX}/api/v1/users/${userName(id)}` }));
      return (JSON.parse(await object.Body!.transformToString()) as { data: { bio: string } }).data.bio;
    } catch {
      return undefined;
    } finally {
      client.destroy();
    }
  };
  const arrived = async (bucket: string, id: number, mark: string, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while ((await bio(bucket, id)) !== mark) {
      if (Date.now() > deadline) throw new Error(`${mark} did not reach the bucket in ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  /**
   * A store of USERS users, a bucket behind a proxy that forwards each request once its body is whole
   * (a killed leader leaves no half-written object), and watchers of it, each with its own out dir and
   * the wall clock (each watcher's documents carry their own build times), as on two machines.
   */
  async function site(env: Record<string, string> = {}) {
    const bucket = await workspace.server.bucket();
    const proxy = await startProxy(workspace.server.endpoint, { delayMs: 20 });
    const db = join(workspace.dir, `${bucket}.db`);
    makeStore(db, USERS);
    const out = (name: string) => join(workspace.dir, `${bucket}-${name}`);
    const start = (name: string) =>
      startCli(
        [
          'watch',
          ...['--db', db, '--out', out(name), '--interval', String(INTERVAL_S), '--lease-ttl', String(TTL_S)],
          ...['--publish', `s3://${bucket}/${PREFIX}`, '--endpoint', proxy.endpoint, '--path-style'],
        ],
        { env: s3Env(env) },
      );
    const publish = (name: string) => status(out(name))?.publish;
    return { bucket, proxy, db, out, start, publish };
  }

  it('kill -9 mid-upload: the new leader sends only what the dead one had in flight and what changed since', async () => {
    const { bucket, proxy, db, start, publish } = await site();
    const a = start('a');
    let b: ReturnType<typeof start> | undefined;
    try {
      await waitFor('a to lead and publish', () => publish('a')?.role === 'leader' && publish('a')?.lastSuccessAt, 120_000);
      b = start('b');
      await waitFor('b to stand by', () => publish('b')?.role === 'standby' && publish('b')?.leader?.pid === a.pid, 30_000);
      await waitFor('a to be quiet', () => publish('a')?.behind === false && publish('a')?.running === false, 30_000);

      // A publish of CHANGED users, the leader killed once the first of them is up: the rest is in flight.
      sql(db, `UPDATE users SET bio = 'before the kill' WHERE id <= ${CHANGED}`);
      await arrived(bucket, 1, 'before the kill', 30_000);
      a.child.kill('SIGKILL');
      const sentBefore = proxy.log.length;
      sql(db, 'UPDATE users SET bio = ? WHERE id = ?', 'after the kill', LATER);
      await arrived(bucket, LATER, 'after the kill', 90_000);
      await waitFor('b to finish its publish', () => publish('b')?.role === 'leader' && publish('b')?.running === false, 60_000);

      const after = proxy.log.slice(sentBefore);
      const profilePuts = after.filter((r) => r.method === 'PUT' && r.path.includes('/users/')).map((r) => r.path.split('/').pop()!);
      const listings = after.filter((r) => r.method === 'GET' && r.query.includes('list-type'));
      console.log(`takeover: ${after.length} requests after the kill, ${profilePuts.length} profile PUTs, ${listings.length} listings`);
      // The dead leader's publish (its intent names the changed users) and the change since: nothing else.
      const allowed = new Set([...Array.from({ length: CHANGED }, (_, i) => userName(i + 1)), userName(LATER)]);
      expect(profilePuts.filter((name) => !allowed.has(name))).toEqual([]);
      expect(profilePuts).toContain(userName(LATER));
      expect(listings).toEqual([]);
    } finally {
      a.child.kill('SIGKILL');
      await b?.stop(10_000);
      await proxy.close();
    }
  }, 240_000);

  it('kill -9 in a first publish, after its checkpoints: the new leader sends only what came after the last one', async () => {
    const { bucket, proxy, db, out, start, publish } = await site({ PROFILE_PUBLISH_CHECKPOINT_EVERY: String(EVERY) });
    const states = () => proxy.log.filter((r) => r.method === 'PUT' && r.path.endsWith('/.profile-snapshot/remote-state')).length;
    const a = start('a');
    let b: ReturnType<typeof start> | undefined;
    try {
      await waitFor('a to lead', () => publish('a')?.role === 'leader', 60_000);
      b = start('b');
      await waitFor('b to stand by', () => publish('b')?.role === 'standby' && publish('b')?.leader?.pid === a.pid, 60_000);
      // a's first publish: killed once two checkpoints are in the bucket, its uploads in flight.
      await waitFor("a's second checkpoint", () => states() >= 2, 120_000);
      a.child.kill('SIGKILL');
      expect(publish('a')?.lastSuccessAt).toBeNull();
      const sentBefore = proxy.log.length;
      const profiles = status(out('a'))?.lastCycle?.profiles ?? 0;
      expect(profiles).toBeGreaterThan(2 * EVERY);
      sql(db, 'UPDATE users SET bio = ? WHERE id = ?', 'after the kill', LATER);
      await arrived(bucket, LATER, 'after the kill', 120_000);
      await waitFor('b to finish its publish', () => publish('b')?.role === 'leader' && publish('b')?.running === false, 60_000);

      const after = proxy.log.slice(sentBefore);
      const profilePuts = new Set(after.filter((r) => r.method === 'PUT' && r.path.includes('/api/v1/users/')).map((r) => r.path));
      const listings = after.filter((r) => r.method === 'GET' && r.query.includes('list-type'));
      console.log(`first-publish takeover: ${profilePuts.size} of ${profiles} profiles sent again, ${listings.length} listings`);
      // The record the checkpoints left is trusted: no listing, and the 2 x EVERY profiles they name stay.
      expect(listings).toEqual([]);
      expect(profilePuts.size).toBeLessThanOrEqual(profiles - 2 * EVERY);
      expect(profilePuts.size).toBeGreaterThan(0);
    } finally {
      a.child.kill('SIGKILL');
      await b?.stop(10_000);
      await proxy.close();
    }
  }, 300_000);
});
