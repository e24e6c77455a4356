/**
 * Every exposition the tool serves passes Prometheus' own linter, `promtool check metrics`: a real
 * `watch --metrics` that publishes (to s3rver), one that publishes a shard (to moto_server, where the
 * shard's families appear), and a real `serve --metrics` with one process and with several workers,
 * each scraped after real work so that every family it declares has samples. The linter bites: the
 * same scrape with the publish gauge under its old counter-like name fails it.
 *
 * Without promtool (Debian's `prometheus` package) the checks skip, unless
 * PROFILE_SNAPSHOT_REQUIRE_PROMTOOL=1 (CI), where a missing promtool fails them.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hasMoto, s3Env, startMoto, startS3rver, type S3Server } from '../helpers/s3.js';
import { tempDir } from '../helpers/store.js';
import { toolsPresent } from '../helpers/tools.js';
import { buildSampleSnapshot, type Snapshot } from '../hosting/fixture.js';
import { ensureCompiled, makeStore, type Proc, sql, startCli, status, waitFor } from '../watch/helpers.js';

const hasPromtool = toolsPresent({ promtool: ['--version'] }, 'PROFILE_SNAPSHOT_REQUIRE_PROMTOOL', 'apt-get install prometheus');

/** The linter's verdict on one exposition: its exit code and every line it printed (its problems). */
function promtool(text: string): { code: number | null; problems: string } {
  const result = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
  if (result.error) throw result.error;
  return { code: result.status, problems: `${result.stdout}${result.stderr}` };
}

/** The families an exposition declares (`# TYPE name type`). */
const families = (text: string): string[] => [...text.matchAll(/^# TYPE (\S+) \S+$/gm)].map((m) => m[1]!);

/**
 * Families with no sample: promtool lints only what it is shown, and a family without samples (a
 * labelled gauge never set) would hide how its samples are named.
 */
function familiesWithoutSamples(text: string): string[] {
  const sampled = new Set(
    text
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => /^[a-zA-Z_:][\w:]*/.exec(line)![0].replace(/_(bucket|sum|count)$/, '')),
  );
  return families(text).filter((name) => !sampled.has(name));
}

/** Scrapes `base`/metrics and checks it: 200, every family sampled, and promtool says nothing. */
async function scrapeAndLint(base: string): Promise<string> {
  const response = await fetch(`${base}/metrics`);
  expect(response.status).toBe(200);
  const text = await response.text();
  expect(familiesWithoutSamples(text)).toEqual([]);
  expect(promtool(text)).toEqual({ code: 0, problems: '' });
  return text;
}

const metricsBase = async (proc: Proc): Promise<string> =>
  (await proc.waitForStderr(/metrics on (http:\/\/[\d.]+:\d+)\/metrics\n/, 15_000))[1]!;

describe.skipIf(!hasPromtool)(`promtool check metrics${hasPromtool ? '' : ' (skipped: promtool is not installed)'}`, () => {
  const procs: Proc[] = [];
  beforeAll(() => ensureCompiled(), 120_000);
  afterEach(async () => {
    await Promise.all(procs.splice(0).map((proc) => proc.stop()));
  });

  describe('watch --metrics', () => {
    let work: ReturnType<typeof tempDir>;
    let db: string;
    let s3rver: S3Server;
    beforeAll(async () => {
      work = tempDir('ps-promtool-');
      db = join(work.path, 'store.db');
      makeStore(db, 40);
      s3rver = await startS3rver();
    });
    afterAll(async () => {
      await s3rver?.close();
      work?.cleanup();
    });

    const watch = (out: string, args: string[]): Proc => {
      const proc = startCli(
        ['watch', '--db', db, '--out', join(work.path, out), '--interval', '0.5', '--metrics', '127.0.0.1:0', ...args],
        {
          env: s3Env({ SOURCE_DATE_EPOCH: '1767225600' }),
        },
      );
      procs.push(proc);
      return proc;
    };
    /** Waits for a successful publish after `after` (an ISO time; undefined: any). */
    const published = (out: string, after?: string) =>
      waitFor(
        'a successful publish',
        () => {
          const at = status(join(work.path, out))?.publish?.lastSuccessAt;
          return at && (after === undefined || at > after) ? at : undefined;
        },
        60_000,
      );

    it('publishing: passes after publishes and a change, and fails with the old gauge name', async () => {
      const bucket = await s3rver.bucket();
      const watcher = watch('dist', ['--publish', `s3://${bucket}/site`, '--endpoint', s3rver.endpoint, '--single-writer']);
      const base = await metricsBase(watcher);
      const first = await published('dist');
      await scrapeAndLint(base);
      sql(db, 'UPDATE users SET views = views + 1 WHERE id = 7');
      await published('dist', first);
      const text = await scrapeAndLint(base);
      expect(families(text)).toContain('profile_snapshot_publish_objects');

      // The control: the gauge under the counter's suffix it had before is what promtool flags.
      const old = text.replace(/\bprofile_snapshot_publish_objects(?= |\{)/g, 'profile_snapshot_publish_objects_total');
      expect(old).not.toBe(text);
      const verdict = promtool(old);
      expect(verdict.code).not.toBe(0);
      expect(verdict.problems).toContain('profile_snapshot_publish_objects_total non-counter metrics should not have "_total" suffix');
    }, 90_000);

    // A shard's watcher needs a store that honours conditional writes: moto_server, not s3rver.
    describe.skipIf(!hasMoto)('a shard (moto_server)', () => {
      let moto: S3Server;
      beforeAll(async () => {
        moto = await startMoto();
      });
      afterAll(async () => {
        await moto?.close();
      });

      it('passes with the shard and joined-list families too', async () => {
        const bucket = await moto.bucket();
        const endpoint = ['--endpoint', moto.endpoint, '--path-style'];
        const watcher = watch('dist-shard', ['--shard', '0/2', '--publish', `s3://${bucket}/sharded`, ...endpoint]);
        const base = await metricsBase(watcher);
        await published('dist-shard');
        const text = await scrapeAndLint(base);
        expect(families(text)).toEqual(expect.arrayContaining(['profile_snapshot_shard_info', 'profile_snapshot_list_joins_total']));
      }, 90_000);
    });
  });

  describe('serve --metrics', () => {
    let snapshot: Snapshot;
    beforeAll(() => {
      snapshot = buildSampleSnapshot();
    });
    afterAll(() => snapshot?.cleanup());

    /** Answers counted in a scrape, all workers and statuses. */
    const answered = async (metrics: string) =>
      [...(await (await fetch(`${metrics}/metrics`)).text()).matchAll(/^profile_snapshot_serve_answers_total\{[^}]*\} (\d+)$/gm)].reduce(
        (sum, m) => sum + Number(m[1]),
        0,
      );

    for (const workers of ['1', '2']) {
      it(`passes with --workers ${workers}, after answers of several statuses`, async () => {
        const proc = startCli(['serve', '--out', snapshot.out, '--port', '0', '--metrics', '0', '--workers', workers]);
        procs.push(proc);
        const base = (await proc.waitForStderr(/serving .* on (http:\/\/\S+)/))[1]!;
        const metrics = await metricsBase(proc);
        const targets = ['/api/v1/users/alice', '/api/v1/users/nobody-by-this-name', '/api/v1/users?username=alice'];
        for (const target of targets) await (await fetch(`${base}${target}`, { headers: { connection: 'close' } })).arrayBuffer();
        // Workers report their answers every second.
        for (const deadline = Date.now() + 10_000; (await answered(metrics)) < targets.length;) {
          if (Date.now() > deadline) throw new Error(`answers not counted: ${await answered(metrics)} of ${targets.length}`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        await scrapeAndLint(metrics);
      });
    }
  });
});
