/**
 * A publish under faults: a server that throttles, fails and drops connections; a publish killed
 * with SIGKILL at random points; and the order of its requests, checked while readers watch.
 */
import type { ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { buildTo } from '../helpers/build.js';
import { hasMoto, readBucket, s3Env, startMoto, startProxy, startS3rver } from '../helpers/s3.js';
import { runCliAsync } from '../helpers/process.js';
import {
  expectExact,
  expectListCovered,
  listCoveredWhileReading,
  newSite,
  PREFIX,
  publicObjects,
  publishArgs,
  publishSite,
  s3Workspace,
  sql,
} from './helpers.js';
import { prng } from '../../src/seed/synthetic.js';
import type { PublishOptions } from '../../src/publish/report.js';

describe('publish under faults', () => {
  // moto stores an object only once its whole body arrived, as S3 does; s3rver writes in place,
  // so behind it the proxy (which forwards whole bodies only) stands in for that.
  const workspace = s3Workspace(hasMoto ? startMoto : startS3rver, 'ps-publish-faults-');

  it('retries throttling, 5xx answers, dropped connections and slow answers, and ends exact', async () => {
    const site = await newSite(workspace.server, workspace.dir, 60);
    const faults = ['status503', 'reset', 'slow'] as const;
    const injected = { status503: 0, reset: 0, slow: 0 };
    const proxy = await startProxy(site.endpoint, {
      fault: (n) => {
        if (n % 7 !== 3) return undefined;
        const fault = faults[Math.floor(n / 7) % 3]!;
        injected[fault]++;
        return fault;
      },
    });
    const report = await publishSite(site, {}, proxy.endpoint);
    await proxy.close();
    expect(Math.min(injected.status503, injected.reset, injected.slow)).toBeGreaterThan(1);
    // Every failed request was sent again; a slow answer is waited for, not retried.
    expect(report.retries).toBe(injected.status503 + injected.reset);
    await expectExact(site);
  }, 60_000);

  it('sends again later what failed after every attempt of the SDK, without sending the rest twice; gives up after its rounds', async () => {
    const site = await newSite(workspace.server, workspace.dir, 60);
    // Two attempts per request; each later round 50 ms after the last.
    const remote = { maxAttempts: 2 } as Partial<PublishOptions['remote']> as PublishOptions['remote'];
    const laterPausesMs = [50, 50, 50];
    const victim = (path: string) => path.endsWith('/api/v1/users/user00007');
    let hits = 0;
    const flaky = await startProxy(site.endpoint, {
      fault: (_n, method, path) => (method === 'PUT' && victim(path) && ++hits <= 3 ? 'reset' : undefined),
    });
    const report = await publishSite(site, { remote, laterPausesMs }, flaky.endpoint);
    await flaky.close();
    // Both attempts of the first send reset, the later round's first too, its SDK retry passed.
    expect(hits).toBeGreaterThan(3);
    expect(report.sentLater).toBe(1);
    const puts = flaky.log.filter((r) => r.method === 'PUT' && /\/users\/[^/]+$/.test(r.path));
    expect(puts.filter((r) => !victim(r.path)).length).toBe(2 * 60 - 1); // the rest once each
    await expectExact(site);

    // A profile that never gets through: the publish fails after its rounds, with what it sent kept.
    sql(site.db, 'UPDATE users SET views = views + 1');
    buildTo(site.db, site.out);
    const dead = await startProxy(site.endpoint, { fault: (_n, method, path) => (method === 'PUT' && victim(path) ? 'reset' : undefined) });
    const failed = await publishSite(site, { remote, laterPausesMs }, dead.endpoint).catch((error: Error) => error);
    await dead.close();
    expect(failed).toBeInstanceOf(Error);
    expect((failed as Error & { exitCode: number }).exitCode).toBe(6);
    expect((failed as Error).message).toMatch(/ECONNRESET|socket hang up/);
    expect((failed as Error).message).toContain('1 request still failed after 3 more rounds');
    // Every other profile object once: all but the victim's two (its second alias waits for its first).
    const sentOnce = dead.log.filter((r) => r.method === 'PUT' && /\/users\/[^/]+$/.test(r.path) && !victim(r.path));
    expect(sentOnce.length).toBe(2 * 60 - 2);
  }, 60_000);

  it('keeps the order: profiles, then the list, then deletions, then the state; readers never see a list naming a missing profile', async () => {
    const site = await newSite(workspace.server, workspace.dir, 40);
    await publishSite(site);
    sql(
      site.db,
      "UPDATE users SET status = 'deleted' WHERE id <= 6; UPDATE users SET views = views + 5 WHERE id > 16;" +
        " INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES (901, 'arrival', 'A', '', '2025-06-01 00:00:00', 1, 'active');",
    );
    buildTo(site.db, site.out);
    const proxy = await startProxy(site.endpoint, { delayMs: 100 });
    let reading = true,
      reads = 0;
    const reader = (async () => {
      while (reading) if (await listCoveredWhileReading(site.endpoint, site.bucket)) reads++;
    })();
    const report = await publishSite(site, { remote: { concurrency: 2 } as PublishOptions['remote'] }, proxy.endpoint);
    reading = false;
    await reader;
    await proxy.close();
    expect(reads).toBeGreaterThan(1);
    expect(report.profiles.put).toBeGreaterThan(5);

    const at = (test: (path: string, method: string) => boolean) => proxy.log.filter((r) => test(r.path, r.method));
    const list = at((path, method) => method === 'PUT' && path.endsWith('/service-api/v1/creators'));
    const profiles = at((path, method) => method === 'PUT' && /\/users\/[^/]+$/.test(path));
    const deletions = at((_path, method) => method === 'POST' || method === 'DELETE');
    const intent = at((path, method) => method === 'PUT' && path.endsWith('/remote-intent'));
    const state = at((path, method) => method === 'PUT' && path.endsWith('/remote-state'));
    expect([list.length, intent.length, state.length]).toEqual([1, 1, 1]);
    expect(deletions.length).toBeGreaterThan(0);
    for (const r of profiles) expect(r.startedAt).toBeGreaterThanOrEqual(intent[0]!.endedAt);
    for (const r of profiles) expect(r.endedAt).toBeLessThanOrEqual(list[0]!.startedAt);
    for (const r of deletions) expect(r.startedAt).toBeGreaterThanOrEqual(list[0]!.endedAt);
    for (const r of deletions) expect(r.endedAt).toBeLessThanOrEqual(state[0]!.startedAt);
    await expectExact(site);
  }, 60_000);

  it('survives kill -9 at random points: the bucket serves a consistent API, and the next publish ends exact', async () => {
    const site = await newSite(workspace.server, workspace.dir, 80);
    // Each request held 15 ms: a publish lasts well past most kill moments (100-1000 ms) even on a
    // fast machine, so most rounds are killed mid-publish, not after it ended.
    const proxy = await startProxy(site.endpoint, { delayMs: 15 });
    const random = prng(7);
    // A killed publish leaves its lock lease to expire: a 1 s TTL, waited out after each kill (whole-
    // second HTTP dates: 4 s at most), so every round's publish gets to work before its kill.
    const args = publishArgs(
      site,
      proxy.endpoint,
      '--concurrency',
      '4',
      '--force',
      '--lease-ttl',
      '1',
      ...(hasMoto ? [] : ['--single-writer']),
    );
    let killed = 0,
      killedUploading = 0;
    for (let round = 1; round <= 6; round++) {
      // Each round changes a different part of the store: updates, removals, arrivals.
      sql(
        site.db,
        `UPDATE users SET views = views + ${round} WHERE id % 3 = ${round % 3}; UPDATE users SET status = '${round % 2 ? 'deleted' : 'active'}' WHERE id % 11 = ${round % 11};` +
          ` INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES (${1000 + round}, 'kill${round}', 'K', '', '2025-06-01 00:00:00', 1, 'active');`,
      );
      buildTo(site.db, site.out);
      const before = proxy.log.length;
      const uploading = () => proxy.log.slice(before).some((r) => r.method === 'PUT' && r.path.includes('/v1/users/'));
      // Even rounds are killed at a random moment (the lock, the intent, the upload or after it);
      // odd ones a random moment after their first profile went up, however slow the machine is
      // to start the publish, so the kills mid-upload this test needs do not depend on its load.
      const delay = 100 + Math.floor(random() * 900);
      const killLater = (child: ChildProcess) => setTimeout(() => child.kill('SIGKILL'), delay);
      const killMidUpload = (child: ChildProcess) => {
        const poll = setInterval(() => {
          if (child.exitCode !== null || child.signalCode !== null) clearInterval(poll);
          else if (uploading()) {
            clearInterval(poll);
            setTimeout(() => child.kill('SIGKILL'), Math.floor(random() * 200));
          }
        }, 5);
      };
      const run = await runCliAsync(args, { env: s3Env(), onSpawn: round % 2 === 0 ? killLater : killMidUpload });
      if (run.signal === 'SIGKILL') {
        // Killed mid-publish: some profile went up (it got past the lock and its intent).
        if (uploading()) killedUploading++;
        killed++;
        await new Promise((r) => setTimeout(r, 4000));
      } else expect(run.code, run.stderr).toBe(0);
      expectListCovered(publicObjects(await readBucket(site.endpoint, site.bucket, PREFIX)));
    }
    expect(killed).toBeGreaterThan(2);
    expect(killedUploading).toBeGreaterThan(1);
    const final = await runCliAsync(args, { env: s3Env() });
    expect(final.code, final.stderr).toBe(0);
    await proxy.close();
    await expectExact(site);
  }, 120_000);
});
