/**
 * A watcher whose publishes span many of its own commits, on a live store, against moto_server
 * behind a proxy that slows every request (a bucket far away), with the wall clock as snapshot time:
 *
 *   - its first publish finishes though the watcher commits a changed tree every cycle meanwhile
 *     (it publishes a pinned generation), says how far it got while it runs (status.json, the
 *     metrics, the cycle line), and then every store change reaches the bucket within the interval,
 *     a cycle and a publish (or two, when one was under way);
 *   - a standby takes over from a leader killed in the middle of such a publish, and finishes its
 *     own long publish while its cycles commit;
 *   - readers of the bucket never see a listed user without both profile objects meanwhile;
 *   - `publish` from the CLI beside a watcher that keeps committing still refuses (exit 5), with a
 *     hint that fits that case; the watcher never shows it.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { clientFor, hasMoto, s3Env, startMoto, startProxy } from '../helpers/s3.js';
import { randomSample } from '../helpers/sample.js';
import { expectExact, s3Workspace, type Site } from '../publish/helpers.js';
import { ensureCompiled, makeStore, runCliAsync, sql, startCli, status, userName, waitFor, type Proc } from './helpers.js';

const PREFIX = 'live';
const INTERVAL_S = 0.5;
const USERS = 300;
/** Each request held this long by the proxy, four in flight: a first publish of ~600 objects takes seconds. */
const DELAY_MS = 40;
const CONCURRENCY = 4;
/** Users a reader's sample reads both objects of. */
const SAMPLED = 40;

describe.skipIf(!hasMoto)('publishes that span many cycles of a live store (moto_server)', () => {
  if (!hasMoto) console.warn('moto_server is not installed: the long-publish tests are skipped (pip install "moto[server]")');
  const workspace = s3Workspace(startMoto, 'ps-watch-long-');
  beforeAll(() => ensureCompiled(), 120_000);

  /** A store of USERS users, a slow way to a new bucket, and watchers of both, each with its own out dir. */
  async function liveSetup() {
    const bucket = await workspace.server.bucket();
    const db = join(workspace.dir, `${bucket}.db`);
    makeStore(db, USERS);
    const slow = await startProxy(workspace.server.endpoint, { delayMs: DELAY_MS });
    const out = (name: string) => join(workspace.dir, `${bucket}-${name}`);
    const watch = (name: string, extra: string[] = []) =>
      startCli(
        [
          'watch',
          ...['--db', db, '--out', out(name), '--interval', String(INTERVAL_S), '--concurrency', String(CONCURRENCY)],
          ...['--publish', `s3://${bucket}/${PREFIX}`, '--endpoint', slow.endpoint, '--path-style', ...extra],
        ],
        { env: s3Env() }, // the wall clock: no SOURCE_DATE_EPOCH
      );
    // The platform: a user's views change every 200 ms, so every cycle commits a changed tree.
    let writes = 0;
    const writer = setInterval(() => sql(db, 'UPDATE users SET views = views + 1 WHERE id = ?', (++writes % USERS) + 1), 200);
    const reader = sampleReader(bucket);
    /** The platform and the readers stop; the watchers still reach the bucket through the proxy. */
    const quiet = async () => {
      clearInterval(writer);
      await reader.stop();
    };
    const stop = async () => {
      await quiet();
      await slow.close();
    };
    return { bucket, db, slow, out, watch, reader, quiet, stop };
  }

  /**
   * Reads the bucket as a CDN would, over and over: the list, then both objects of SAMPLED users it
   * names, chosen anew each time (every user each time would keep moto busy for the watchers' share).
   * No user is ever removed here, so whatever list a sample read, each name must have both.
   */
  function sampleReader(bucket: string) {
    let reading = true,
      samples = 0;
    const client = clientFor(workspace.server.endpoint);
    const read = async (path: string) => {
      try {
        const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `${PREFIX}/${path}` }));
        return await object.Body!.transformToString();
      } catch (error) {
        if ((error as { name?: string }).name === 'NoSuchKey') return undefined;
        throw error;
      }
    };
    const sample = async () => {
      const list = await read('service-api/v1/creators');
      if (list === undefined) return false;
      const names = (JSON.parse(list) as { data: { username: string }[] }).data.map((c) => c.username.toLowerCase());
      const paths = randomSample(names, SAMPLED).flatMap((name) => [`api/v1/users/${name}`, `service-api/v1/users/${name}`]);
      const missing: string[] = [];
      for (let i = 0; i < paths.length; i += 8)
        await Promise.all(paths.slice(i, i + 8).map(async (path) => ((await read(path)) === undefined ? missing.push(path) : 0)));
      expect(missing).toEqual([]);
      return true;
    };
    const loop = (async () => {
      try {
        // A pause between samples: the suite runs another file beside this one on two cores.
        while (reading) {
          if (await sample()) samples++;
          await new Promise((r) => setTimeout(r, 300));
        }
      } finally {
        client.destroy();
      }
    })();
    return {
      get samples() {
        return samples;
      },
      stop: async () => {
        reading = false;
        await loop;
      },
    };
  }

  const bio = async (bucket: string, name: string): Promise<string | undefined> => {
    const client = clientFor(workspace.server.endpoint);
    try {
      const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `${PREFIX}/api/v1/users/${name}` }));
      return (JSON.parse(await object.Body!.transformToString()) as { data: { bio: string } }).data.bio;
    } catch {
      return undefined;
    } finally {
      client.destroy();
    }
  };

  /** Seconds from a store change to its arrival in the bucket. */
  async function changeToBucket(setup: Awaited<ReturnType<typeof liveSetup>>, id: number, mark: string): Promise<number> {
    const changedAt = Date.now();
    sql(setup.db, 'UPDATE users SET bio = ? WHERE id = ?', mark, id);
    for (;;) {
      if ((await bio(setup.bucket, userName(id))) === mark) return (Date.now() - changedAt) / 1000;
      if (Date.now() - changedAt > 30_000) throw new Error(`${mark} did not reach the bucket in 30 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The publish lines of a watcher's log: cycle, seconds, and whether it failed. */
  const publishLines = (proc: Proc) =>
    [...proc.stderr().matchAll(/publish \(cycle (\d+)\): (FAILED)?.*; ([\d.]+) s$/gm)].map((m) => ({
      cycle: Number(m[1]),
      failed: m[2] !== undefined,
      seconds: Number(m[3]),
    }));

  it('a first publish spanning many commits finishes, shows its progress, and then changes arrive within the bound', async () => {
    const setup = await liveSetup();
    const a = setup.watch('a', ['--metrics', '127.0.0.1:0']);
    try {
      // While the first publish runs: its progress in status.json, the metrics and the cycle lines.
      const during = await waitFor(
        'the first publish to report progress',
        () => {
          const progress = status(setup.out('a'))?.publish?.progress;
          return progress && progress.phase === 'upload' && progress.done > 0 && progress.done < progress.total ? progress : undefined;
        },
        30_000,
      );
      expect(during.cycle).toBe(1);
      expect(during.bytes).toBeGreaterThan(0);
      const metricsAt = /metrics on (http:\/\/[^/]+)\/metrics/.exec(a.stderr())![1];
      const metrics = await (await fetch(`${metricsAt}/metrics`)).text();
      expect(metrics).toMatch(/^profile_snapshot_publish_running 1$/m);
      expect(Number(/^profile_snapshot_publish_objects (\d+)$/m.exec(metrics)![1])).toBeGreaterThan(2 * USERS);
      expect((await fetch(`${metricsAt}/healthz`)).status).toBe(200);
      expect(existsSync(join(setup.out('a'), '.profile-snapshot/pinned'))).toBe(true);

      await waitFor('the first publish to succeed', () => publishLines(a).length > 0, 60_000);
      const first = publishLines(a)[0]!;
      expect(first).toMatchObject({ cycle: 1, failed: false });
      // It spanned many of the watcher's own commits: each would have sent today's publish back to the start.
      const changedDuring = a.stderr().match(/: cycle \d+: \d+ profiles published.*publishing cycle 1's tree: /gm) ?? [];
      expect(changedDuring.length).toBeGreaterThanOrEqual(4);
      expect(a.stderr()).toMatch(/publishing cycle 1's tree: [\d,]+ of [\d,]+ objects uploaded \(\d+%\), [\d.]+ MB/);

      // Each change arrives within the interval, a cycle and the publishes under way and of the change.
      const latencies: number[] = [];
      for (let i = 0; i < 5; i++) latencies.push(await changeToBucket(setup, 10 + i, `mark-${i}`));
      const deltas = publishLines(a).slice(1);
      expect(deltas.every((line) => !line.failed)).toBe(true);
      const slowestPublish = Math.max(...deltas.map((line) => line.seconds));
      const slowestCycle = Math.max(
        ...(a.stderr().match(/: cycle \d+: .*; ([\d.]+) s; next in/gm) ?? []).map((l) => Number(/([\d.]+) s; next in/.exec(l)![1])),
      );
      for (const latency of latencies) expect(latency).toBeLessThan(INTERVAL_S + slowestCycle + 2 * slowestPublish + 0.5);
      await waitFor('readers to sample the live bucket a few times', () => setup.reader.samples > 2, 30_000);

      await setup.quiet();
      await waitFor('a to publish after the last change', () => {
        const now = status(setup.out('a'));
        return now?.publish && !now.publish.behind && !now.publish.running && now.publish.progress === null;
      });
      await a.stop(15_000);
      expect(a.stderr()).not.toContain('kept committing');
      expect(existsSync(join(setup.out('a'), '.profile-snapshot/pinned'))).toBe(false);
      await expectExact({ endpoint: workspace.server.endpoint, bucket: setup.bucket, out: setup.out('a') } as Site, PREFIX, [
        'leader',
        'lock',
      ]);
    } finally {
      await setup.stop();
      await a.stop(5_000);
    }
  }, 120_000);

  it('a standby takes over from a leader killed mid-publish and finishes its own long publish', async () => {
    const setup = await liveSetup();
    const ttl = ['--lease-ttl', '4'];
    const a = setup.watch('a', ttl);
    let b: Proc | undefined;
    try {
      await waitFor('a to lead', () => status(setup.out('a'))?.publish?.role === 'leader', 30_000);
      b = setup.watch('b', ttl);
      await waitFor('b to stand by', () => status(setup.out('b'))?.publish?.role === 'standby', 30_000);
      await waitFor(
        'a to be a third into its first publish',
        () => {
          const progress = status(setup.out('a'))?.publish?.progress;
          return progress?.phase === 'upload' && progress.done > progress.total / 3;
        },
        30_000,
      );
      const killedAt = Date.now();
      a.child.kill('SIGKILL');
      const leads = () => {
        const publish = status(setup.out('b'))?.publish;
        const finished = publish?.role === 'leader' && publish.lastSuccessAt !== null && Date.parse(publish.lastSuccessAt) > killedAt;
        // Its log line follows the status file by a moment.
        return finished && publishLines(b!).length > 0;
      };
      await waitFor('b to take over and finish a publish', leads, 90_000);
      const lines = publishLines(b);
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.every((line) => !line.failed)).toBe(true);
      const latency = await changeToBucket(setup, 42, 'after-takeover');
      expect(latency).toBeLessThan(15);
      await waitFor('readers to sample the live bucket a few times', () => setup.reader.samples > 2, 30_000);
      await setup.quiet();
      await waitFor('b to publish after the last change', () => {
        const now = status(setup.out('b'));
        return now?.publish && !now.publish.behind && !now.publish.running;
      });
      await b.stop(15_000);
      await expectExact({ endpoint: workspace.server.endpoint, bucket: setup.bucket, out: setup.out('b') } as Site, PREFIX, [
        'leader',
        'lock',
      ]);
    } finally {
      await setup.stop();
      a.child.kill('SIGKILL');
      await b?.stop(5_000);
    }
  }, 180_000);

  it('publish from the CLI beside a watcher that keeps committing refuses with exit 5 and a hint for that case', async () => {
    const setup = await liveSetup();
    // A watcher without --publish, committing every cycle as the store changes.
    const w = startCli(['watch', '--db', setup.db, '--out', setup.out('w'), '--interval', '0.2'], { env: s3Env() });
    try {
      await waitFor('the watcher to build', () => status(setup.out('w'))?.lastSuccessAt, 30_000);
      const publish = await runCliAsync(
        [
          'publish',
          ...['--out', setup.out('w'), '--to', `s3://${setup.bucket}/cli`, '--endpoint', setup.slow.endpoint, '--path-style'],
          ...['--concurrency', '2'],
        ],
        { env: s3Env() },
      );
      expect(publish.code).toBe(5);
      expect(publish.stderr).toContain('changed under 3 publishes in a row');
      expect(publish.stderr).toMatch(
        new RegExp(`the watcher pid ${w.pid} rewrites this tree every cycle: let it publish \\(run it with --publish\\)`),
      );
    } finally {
      await setup.stop();
      await w.stop(5_000);
    }
  }, 120_000);
});
