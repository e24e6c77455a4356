/**
 * A leader whose main thread stalls lets go (--stall-timeout), with real watchers on moto_server:
 *
 *   - a leader whose main thread blocks for good (the test hook PROFILE_SNAPSHOT_TEST_STALL_AT_CYCLE)
 *     renews its lease no more, says why on stderr and in status.json, and exits 13 within the stall
 *     bound and a TTL; the standby takes over and publishes the next change;
 *   - a leader that sleeps between cycles longer than the stall bound is not stalled: its sleep beats.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { clientFor, hasMoto, s3Env, startMoto } from '../helpers/s3.js';
import { s3Workspace } from '../publish/helpers.js';
import { ensureCompiled, makeStore, sql, startCli, status, userName, waitFor, type Proc } from './helpers.js';

const PREFIX = 'snap';
const SECRET = 'stall-secret-never-printed';
const STALL_ENV = 'PROFILE_SNAPSHOT_TEST_STALL_AT_CYCLE';

describe.skipIf(!hasMoto)('a leader whose main thread stalls (moto_server)', () => {
  if (!hasMoto) console.warn('moto_server is not installed: the stall tests are skipped (pip install "moto[server]")');
  const workspace = s3Workspace(startMoto, 'ps-watch-stall-');
  beforeAll(() => ensureCompiled(), 120_000);

  interface Timing {
    ttlS: number;
    intervalS: number;
    stallS: number;
  }

  /** Watchers of one store on one prefix, each with its own out dir. */
  function watchers(db: string, bucket: string, { ttlS, intervalS, stallS }: Timing) {
    const out = (name: string) => join(workspace.dir, `${bucket}-${name}`);
    const start = (name: string, env: Record<string, string> = {}) =>
      startCli(
        [
          'watch',
          ...['--db', db, '--out', out(name), '--interval', String(intervalS), '--lease-ttl', String(ttlS)],
          ...['--stall-timeout', String(stallS), '--busy-timeout', '1000'],
          ...['--publish', `s3://${bucket}/${PREFIX}`, '--endpoint', workspace.server.endpoint, '--path-style'],
        ],
        { env: s3Env({ SOURCE_DATE_EPOCH: '1767225600', AWS_SECRET_ACCESS_KEY: SECRET, ...env }) },
      );
    const publish = (name: string) => status(out(name))?.publish;
    return { out, start, publish };
  }

  const read = async (bucket: string, path: string): Promise<string | undefined> => {
    const client = clientFor(workspace.server.endpoint);
    try {
      const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `${PREFIX}/${path}` }));
      return await object.Body!.transformToString();
    } catch {
      return undefined;
    } finally {
      client.destroy();
    }
  };
  const leaderLease = async (bucket: string) => {
    const text = await read(bucket, '.profile-snapshot/leader');
    return text === undefined ? undefined : (JSON.parse(text) as { renewals: number; holder: { pid: number } });
  };
  async function until(what: string, condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    const started = Date.now();
    while (!(await condition())) {
      if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  it('a leader whose main thread blocks loses the lease within the stall bound plus a TTL, exits 13 saying why, and the standby publishes the next change', async () => {
    const bucket = await workspace.server.bucket();
    const db = join(workspace.dir, `${bucket}.db`);
    makeStore(db, 60);
    const timing = { ttlS: 4, intervalS: 0.5, stallS: 3 };
    const w = watchers(db, bucket, timing);
    // a leads from its first look, before its first build; it blocks after its 12th cycle, about 6 s in.
    const a = w.start('a', { [STALL_ENV]: '12' });
    let b: Proc | undefined;
    try {
      await waitFor('watcher a to lead', () => w.publish('a')?.role === 'leader', 30_000);
      b = w.start('b');
      await a.waitForStderr(new RegExp(`${STALL_ENV}: the main thread blocks now`), 60_000);
      // Its last progress came just before that line: the bounds count from here.
      const stalledAt = Date.now();
      expect((await leaderLease(bucket))?.holder.pid).toBe(a.pid);
      sql(db, "UPDATE users SET display_name = 'After the stall' WHERE id = 2");

      // The renewal thread looks at the heartbeat before each renewal (every quarter TTL) and ends the
      // process at once; a second of slack for a loaded machine's timers.
      const boundS = timing.stallS + timing.ttlS + 1;
      const exit = await Promise.race([a.exit, new Promise((resolve) => setTimeout(() => resolve('still running'), boundS * 1000))]);
      const exitedS = (Date.now() - stalledAt) / 1000;
      expect(exit, `a ${boundS} s after it blocked`).toEqual({ code: 13, signal: null });
      expect(a.stderr()).toMatch(
        /profile-snapshot watch: STALLED: the watcher's main thread made no progress for [\d.]+ s, after cycle 12 \(--stall-timeout 3 s\): it renews its leases no more.*exits 13\. Fix: .*--stall-timeout\.\n$/,
      );
      // Node's notice about the inspector session the renewal thread used is not printed.
      expect(a.stderr()).not.toContain('debugger');
      const stalled = status(w.out('a'));
      expect(stalled?.state).toBe('stopped');
      expect(stalled?.stall?.error).toMatchObject({ kind: 'stalled', exitCode: 13 });
      // Past the bound, rounded to a tenth: 3.04 s reads 3.
      expect(stalled?.stall?.secondsSinceProgress).toBeGreaterThanOrEqual(timing.stallS);

      // The lease a renewed last lapses a TTL later at most: b leads then, a second more for the bucket's
      // whole-second dates, and three for b's look on a loaded machine.
      await until('b to take the leader lease', async () => (await leaderLease(bucket))?.holder.pid === b!.pid, 30_000);
      const ledS = (Date.now() - stalledAt) / 1000;
      expect(ledS).toBeLessThan(timing.stallS + timing.ttlS + 1 + 3);
      await until(
        'the change made after the stall to reach the bucket',
        async () => (await read(bucket, `api/v1/users/${userName(2)}`))?.includes('After the stall') === true,
        30_000,
      );
      console.log(
        `stall: a exited 13 ${exitedS.toFixed(2)} s after it blocked, b led ${ledS.toFixed(2)} s after (bound ${timing.stallS + timing.ttlS} s)`,
      );
      expect(w.publish('b')?.role).toBe('leader');
    } finally {
      await a.stop(5_000);
      await b?.stop(10_000);
    }
    for (const proc of [a, b!]) expect(proc.stderr() + proc.stdout()).not.toContain(SECRET);
  }, 120_000);

  it('a leader that sleeps between cycles longer than the stall bound is not stalled: its sleep is progress', async () => {
    const bucket = await workspace.server.bucket();
    const db = join(workspace.dir, `${bucket}.db`);
    makeStore(db, 20);
    const timing = { ttlS: 2, intervalS: 6, stallS: 2 };
    const w = watchers(db, bucket, timing);
    const a = w.start('a');
    try {
      await waitFor('watcher a to lead and publish', () => w.publish('a')?.lastSuccessAt, 30_000);
      // Three sleeps of 6 s, each three times the stall bound, with renewals every half second.
      await waitFor(
        "a's fourth cycle",
        () => {
          if (a.child.exitCode !== null) throw new Error(`a exited ${a.child.exitCode} while sleeping: ${a.stderr()}`);
          return (status(w.out('a'))?.cycles ?? 0) >= 4;
        },
        40_000,
      );
      expect(a.child.exitCode).toBeNull();
      expect(w.publish('a')?.role).toBe('leader');
      expect(status(w.out('a'))?.stall).toMatchObject({ timeoutSeconds: 2, error: null });
      const lease = await leaderLease(bucket);
      expect(lease?.holder.pid).toBe(a.pid);
      expect(lease?.renewals).toBeGreaterThan(20);
    } finally {
      expect(await a.stop(10_000)).toEqual({ code: 0, signal: null });
    }
    expect(a.stderr()).not.toMatch(/no progress/);
  }, 90_000);
});
