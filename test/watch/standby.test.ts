/**
 * Two and three `watch --publish` processes on one prefix, against moto_server (which honours the
 * conditional writes the leadership lease is taken with, as S3 and R2 do): one leads and publishes,
 * the others build and stand by; a leader killed with kill -9 is replaced within the lease TTL plus
 * a cycle, one stopped with SIGTERM at once; readers of the bucket never see a listed user without
 * both profile objects meanwhile, and the prefix ends exact.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasMoto, s3Env, startMoto, type S3Server } from '../helpers/s3.js';
import { expectExact, listCoveredWhileReading, type Site } from '../publish/helpers.js';
import { ensureCompiled, makeStore, runCliAsync, sql, startCli, status, tempDir, waitFor, type Proc } from './helpers.js';

const SECRET = 'standby-secret-never-printed';
const PREFIX = 'snap';
const TTL_S = 4;
const INTERVAL_S = 0.5;

describe.skipIf(!hasMoto)('two watchers on one prefix (moto_server)', () => {
  if (!hasMoto) console.warn('moto_server is not installed: the standby tests are skipped (pip install "moto[server]")');
  let moto: S3Server;
  const dir = tempDir();
  beforeAll(async () => {
    ensureCompiled();
    moto = await startMoto();
  });
  afterAll(async () => {
    await moto?.close();
    dir.cleanup();
  });

  it('one leads, the others stand by; kill -9 hands over within TTL + a cycle, SIGTERM at once; readers never see a broken API', async () => {
    const bucket = await moto.bucket();
    const db = join(dir.path, 'profiles.db');
    makeStore(db, 60);
    const out = (name: string) => join(dir.path, name);
    const watch = (name: string) =>
      startCli(
        [
          'watch',
          ...['--db', db, '--out', out(name), '--interval', String(INTERVAL_S)],
          ...['--publish', `s3://${bucket}/${PREFIX}`, '--endpoint', moto.endpoint, '--path-style', '--lease-ttl', String(TTL_S)],
        ],
        { env: s3Env({ SOURCE_DATE_EPOCH: '1767225600', AWS_SECRET_ACCESS_KEY: SECRET }) },
      );
    const publish = (name: string) => status(out(name))?.publish;
    const leads = (name: string) => publish(name)?.role === 'leader' && publish(name)?.lastSuccessAt;
    const standsBy = (name: string, leader: Proc) => publish(name)?.role === 'standby' && publish(name)?.leader?.pid === leader.pid;

    const a = watch('a');
    await waitFor('watcher a to lead and publish', () => leads('a'), 30_000);
    const b = watch('b');
    await waitFor('watcher b to stand by under a', () => standsBy('b', a), 15_000);
    expect(publish('b')!.leaseAgeSeconds).toBeLessThanOrEqual(TTL_S);
    expect(publish('b')!.runs).toBe(0); // a standby never publishes
    const regenerate = await runCliAsync(['regenerate', '--out', out('b')]);
    expect(regenerate.code).toBe(0);
    expect(regenerate.stderr).toMatch(new RegExp(`publish: standby: host .+, pid ${a.pid} leads \\(lease renewed [\\d.]+ s ago\\)`));

    // Readers keep checking the bucket, and the store keeps changing, through both hand-overs.
    let reading = true,
      reads = 0;
    const reader = (async () => {
      while (reading) if (await listCoveredWhileReading(moto.endpoint, bucket, PREFIX)) reads++;
    })();
    let change = 0;
    const writer = setInterval(() => sql(db, 'UPDATE users SET views = views + 1 WHERE id = ?', (++change % 60) + 1), 300);
    try {
      const killedAt = Date.now();
      a.child.kill('SIGKILL');
      await waitFor(
        'watcher b to take over from the killed leader',
        () => leads('b') && Date.parse(leads('b') as string) > killedAt,
        20_000,
      );
      const takeover = (Date.parse(publish('b')!.lastSuccessAt!) - killedAt) / 1000;
      // The TTL (whole-second HTTP dates add up to one), then the next cycle, then its publish.
      expect(takeover).toBeLessThan(TTL_S + 1 + INTERVAL_S + 3);
      // ...and not before: the dead leader's last renewal was at most a quarter TTL before the kill.
      expect(takeover).toBeGreaterThan(TTL_S * 0.75);

      const c = watch('c');
      await waitFor('watcher c to stand by under b', () => standsBy('c', b), 15_000);
      const stoppedAt = Date.now();
      await b.stop(10_000);
      await waitFor(
        'watcher c to take over from the stopped leader',
        () => leads('c') && Date.parse(leads('c') as string) > stoppedAt,
        15_000,
      );
      // Released on SIGTERM: no TTL to wait out, only c's next cycle and its publish.
      expect((Date.parse(publish('c')!.lastSuccessAt!) - stoppedAt) / 1000).toBeLessThan(TTL_S);
      clearInterval(writer);
      // A cycle that began after the last change, and nothing left to publish: the bucket is c's tree.
      const lastChange = Date.now();
      await waitFor(
        'c to publish after the last change',
        () => {
          const now = status(out('c'));
          return Date.parse(now?.lastCycle?.startedAt ?? '0') > lastChange && now?.publish && !now.publish.behind && !now.publish.running;
        },
        15_000,
      );
      // A sample counts only when the list stood still while it was read: on a loaded machine the
      // changes above may have left few, so the readers go on over the quiet bucket until they have three.
      await waitFor('readers to sample the bucket three times', () => reads > 2, 30_000);
      reading = false;
      await reader;
      await c.stop(10_000);
      await expectExact({ endpoint: moto.endpoint, bucket, out: out('c') } as Site, PREFIX, ['leader', 'lock']);
      for (const proc of [a, b, c]) expect(proc.stderr() + proc.stdout()).not.toContain(SECRET);
      for (const name of ['a', 'b', 'c']) expect(JSON.stringify(status(out(name)))).not.toContain(SECRET);
    } finally {
      clearInterval(writer);
      reading = false;
      await reader;
    }
  }, 120_000);
});
