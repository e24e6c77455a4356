/**
 * `watch --shard i/n --publish` on moto_server: a watcher per shard keeps the joined API fresh (a
 * store change in one shard reaches the live list), a standby of a shard stands by under that
 * shard's leader only, and /metrics and /healthz say which shard each is and what became of the list.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CREATORS_FILE } from '../../src/core/layout.js';
import { sliceOf } from '../../src/core/slice.js';
import { clientFor, hasMoto, s3Env, startMoto } from '../helpers/s3.js';
import { s3Workspace } from '../publish/helpers.js';
import { cyclesOf, ensureCompiled, makeStore, sql, startCli, status, userName, waitFor, type Proc } from './helpers.js';

const PREFIX = 'sharded';
const SHARDS = 2;
const INTERVAL_S = 0.5;
/** This test's own looks at the live list (every 50 ms, each a GET of moto's), with room for a loaded machine. */
const LOOKS_S = 0.5;

/**
 * The phases of `proc`'s watcher after a store change at `changedAt`, in seconds: what was under way
 * then (a cycle that did not read the change, a publish), the first cycle that changed the tree, and the publish of
 * that cycle (or a later one's), which ends with the join. From its --json cycle lines and its
 * publish lines; undefined until that publish has ended.
 */
function phasesAfter(proc: Proc, changedAt: number): { underWay: number; reading: number; publishing: number } | undefined {
  const cycles = cyclesOf(proc);
  // The change may land in a cycle under way that still reads it; otherwise that cycle only delays.
  const reading = cycles.find((c) => Date.parse(c.finishedAt) > changedAt && c.changed);
  if (reading === undefined) return undefined;
  const underWay = cycles.find((c) => c !== reading && Date.parse(c.startedAt) < changedAt && Date.parse(c.finishedAt) > changedAt);
  const all = publishes(proc);
  const publish = all.find((p) => p.cycle >= reading.number);
  if (publish === undefined) return undefined;
  // An earlier publish still running when the change landed: the next waits for it.
  const before = all.find((p) => p.cycle < reading.number && p.endedAt > changedAt);
  return {
    underWay: ((underWay?.durationMs ?? 0) + (before?.seconds ?? 0) * 1000) / 1000,
    reading: reading.durationMs / 1000,
    publishing: publish.seconds,
  };
}

/** `proc`'s publishes as its log lines say them. */
function publishes(proc: Proc): { cycle: number; seconds: number; endedAt: number }[] {
  return [...proc.stderr().matchAll(/^(\S+) profile-snapshot watch: publish \(cycle (\d+)\): [^\n]*; ([\d.]+) s$/gm)].map((match) => ({
    endedAt: Date.parse(match[1]!),
    cycle: Number(match[2]),
    seconds: Number(match[3]),
  }));
}

describe.skipIf(!hasMoto)('watchers of shards (moto_server)', () => {
  const workspace = s3Workspace(startMoto, 'ps-watch-shards-');
  beforeAll(() => ensureCompiled(), 120_000);

  it('keep the joined list fresh, a standby per shard, metrics and /healthz per shard', async () => {
    const bucket = await workspace.server.bucket();
    const db = join(workspace.dir, 'store.db');
    makeStore(db, 300);
    const out = (name: string) => join(workspace.dir, name);
    const start = (name: string, shard: number) =>
      startCli(
        [
          'watch',
          ...['--db', db, '--out', out(name), '--shard', `${shard}/${SHARDS}`, '--json'],
          ...['--interval', String(INTERVAL_S), '--lease-ttl', '4'],
          ...['--publish', `s3://${bucket}/${PREFIX}`, '--endpoint', workspace.server.endpoint, '--path-style', '--metrics', '127.0.0.1:0'],
        ],
        { env: s3Env({ SOURCE_DATE_EPOCH: '1767225600' }) },
      );
    const publish = (name: string) => status(out(name))?.publish;
    const leads = (name: string) => publish(name)?.role === 'leader' && publish(name)?.lastSuccessAt;
    const watchers: Proc[] = [];
    try {
      watchers.push(start('a0', 0));
      await waitFor('shard 0 to lead and publish', () => leads('a0'), 120_000);
      // Alone, shard 0's part waits for shard 1's: past --health-max-age, /healthz says the list lacks it.
      const [, port0] = await watchers[0]!.waitForStderr(/metrics on http:\/\/[\d.]+:(\d+)\/metrics\n/, 15_000);
      type Health = { ok: boolean; list?: { holdsShard: boolean; missingShards: number } };
      let lacking: Health | undefined;
      for (const started = Date.now(); lacking === undefined; await new Promise((resolve) => setTimeout(resolve, 100))) {
        if (Date.now() - started > 20_000) throw new Error("shard 0's /healthz did not say the list lacks its part in 20 s");
        const answer = await fetch(`http://127.0.0.1:${port0}/healthz`);
        const body = (await answer.json()) as Health;
        if (answer.status === 503 && body.list?.holdsShard === false) lacking = body;
      }
      expect(lacking).toMatchObject({ ok: false, list: { shard: `0/${SHARDS}`, holdsShard: false, missingShards: 1 } });
      expect(await (await fetch(`http://127.0.0.1:${port0}/metrics`)).text()).toMatch(/profile_snapshot_list_missing_shards 1/);
      watchers.push(start('a1', 1));
      // Its cold publish, on a machine the other test files load too.
      await waitFor('shard 1 to lead and publish', () => leads('a1'), 120_000);
      // A standby of shard 1 stands by under shard 1's leader, not shard 0's.
      watchers.push(start('b1', 1));
      await waitFor(
        'the standby of shard 1',
        () => publish('b1')?.role === 'standby' && publish('b1')?.leader?.pid === watchers[1]!.pid,
        20_000,
      );
      // A user arrives in shard 1: the live list names them within the interval, shard 1's cycle and
      // its publish, which joins the list (and a cycle already under way when the row landed).
      const id = [...Array(200).keys()].map((k) => 5000 + k).find((k) => sliceOf(userName(k), SHARDS) === 1)!;
      sql(
        db,
        `INSERT INTO users (id, username, display_name, bio, created_at, views, status) VALUES (${id}, '${userName(id)}', 'N', '', '2025-06-01 00:00:00', 1, 'active')`,
      );
      const insertedAt = Date.now();
      for (; !(await liveList(bucket)).includes(`"${userName(id)}"`); await new Promise((resolve) => setTimeout(resolve, 50))) {
        if (Date.now() - insertedAt > 60_000) throw new Error('the new user did not reach the live list in 60 s');
      }
      const seconds = (Date.now() - insertedAt) / 1000;
      // The list is live before the publish that joined it ends and logs its time.
      const { underWay, reading, publishing } = await waitFor(
        'the publish that joined the list to end',
        () => phasesAfter(watchers[1]!, insertedAt),
        60_000,
      );
      const bound = INTERVAL_S + underWay + reading + publishing + LOOKS_S;
      console.log(
        `a change in shard 1 reached the live list in ${seconds.toFixed(2)} s: bound ${bound.toFixed(2)} s ` +
          `(interval ${INTERVAL_S}, under way ${underWay}, cycle ${reading}, publish and join ${publishing}, looks ${LOOKS_S})`,
      );
      expect(seconds).toBeLessThan(bound);
      for (const [name, shard] of [
        ['a0', 0],
        ['a1', 1],
      ] as const) {
        const proc = watchers[shard]!;
        const [, port] = await proc.waitForStderr(/metrics on http:\/\/[\d.]+:(\d+)\/metrics\n/, 15_000);
        const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        expect(metrics, name).toContain(`profile_snapshot_shard_info{shard="${shard}/${SHARDS}"} 1`);
        expect(metrics, name).toMatch(/profile_snapshot_list_holds_shard 1/);
        expect(metrics, name).toMatch(/profile_snapshot_list_missing_shards 0/);
        const health = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as { ok: boolean; list: unknown };
        expect(health.ok, name).toBe(true);
        expect(health.list).toMatchObject({ shard: `${shard}/${SHARDS}`, holdsShard: true, missingShards: 0 });
      }
    } finally {
      await Promise.all(watchers.map((proc) => proc.stop(30_000)));
    }
  }, 300_000);

  async function liveList(bucket: string): Promise<string> {
    const client = clientFor(workspace.server.endpoint);
    try {
      const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `${PREFIX}/${CREATORS_FILE}` }));
      return await object.Body!.transformToString();
    } catch {
      return '';
    } finally {
      client.destroy();
    }
  }
});
