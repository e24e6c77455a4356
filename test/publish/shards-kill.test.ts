/**
 * Shards published into one prefix on moto_server (see shards.test.ts): kill -9 of a shard publisher
 * and of a composer at random moments over rounds of changes, and every refusal with its exit code
 * and nothing changed. A file of its own so that a second worker can run it beside the others.
 */
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CREATORS_FILE } from '../../src/core/layout.js';
import { prng } from '../../src/seed/synthetic.js';
import { buildTo } from '../helpers/build.js';
import { runCliAsync } from '../helpers/process.js';
import { hasMoto, readBucket, s3Env, startMoto, startProxy } from '../helpers/s3.js';
import { PREFIX, s3Workspace } from './helpers.js';
import { buildShards, change, expectShardedExact, newShardedSite, sampleReader, shardArgs } from './shard-helpers.js';

const workspace = s3Workspace(startMoto, 'profile-snapshot-shards-kill-');

describe.skipIf(!hasMoto)('shards published into one prefix: kill -9 and refusals', () => {
  it('survives kill -9 of a shard publisher and of a composer; a lone publish of each shard makes the prefix exact', async () => {
    const site = await newShardedSite(workspace.server, workspace.dir, 300, 3);
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
      // The killed holder's leases (3 s) run out; HTTP dates are whole seconds. A publish that
      // ended by itself released its leases: nothing to wait for.
      if (run.signal === 'SIGKILL') await new Promise((r) => setTimeout(r, 5500));
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
