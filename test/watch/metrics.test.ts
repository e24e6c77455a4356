/**
 * `watch --metrics`: real watchers (the bin) scraped over HTTP. The figures move with the cycles and
 * agree with status.json; /healthz turns 503 once the tree is older than --health-max-age (cycles too
 * far apart, or failing) and 200 again on recovery; the server listens on 127.0.0.1 only unless told
 * otherwise; nothing private (a path, the bucket, the endpoint, a credential) reaches a scraper.
 */
import { renameSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { assessHealth, WatchMetrics } from '../../src/watch/metrics.js';
import type { WatchEvent } from '../../src/watch/loop.js';
import type { PublishStatus, WatchStatus } from '../../src/watch/status.js';
import { s3Env, startS3rver, type S3Server } from '../helpers/s3.js';
import { eachTestWorkspace, type Workspace } from '../helpers/store.js';
import {
  cycleAfter,
  ensureCompiled,
  lastCycle,
  makeStore,
  type Proc,
  publishedFiles,
  runCliAsync,
  sql,
  startCli,
  status,
  waitFor,
} from './helpers.js';

let dir: Workspace['dir'];
let db: string;
let out: string;
const watchers: Proc[] = [];

beforeAll(() => ensureCompiled(), 120_000);
eachTestWorkspace((w) => ({ dir, db, out } = w), { fill: (file) => makeStore(file, 40), prefix: 'ps-metrics-' });
afterEach(async () => {
  await Promise.all(watchers.splice(0).map((w) => w.stop()));
});

const EPOCH = { SOURCE_DATE_EPOCH: '1767225600' };

function watch(args: string[], options: { out?: string; env?: Record<string, string> } = {}): Proc {
  const proc = startCli(['watch', '--db', db, '--out', options.out ?? out, ...args], { env: { ...EPOCH, ...options.env } });
  watchers.push(proc);
  return proc;
}

/** The base URL the watcher logged ("metrics on http://host:port/metrics"). */
async function metricsBase(proc: Proc): Promise<{ host: string; port: number }> {
  const [, host, port] = await proc.waitForStderr(/metrics on http:\/\/([\d.]+):(\d+)\/metrics\n/, 15_000);
  return { host: host!, port: Number(port) };
}

const url = ({ host, port }: { host: string; port: number }, path: string) => `http://${host}:${port}${path}`;

/** The samples of a scrape: "name{labels}" -> value. */
async function scrape(base: { host: string; port: number }): Promise<{ text: string; samples: Map<string, number> }> {
  const response = await fetch(url(base, '/metrics'));
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return { text, samples };
}

function sample(samples: Map<string, number>, series: string): number {
  const value = samples.get(series);
  if (value === undefined) throw new Error(`no sample ${series} in: ${[...samples.keys()].join(', ')}`);
  return value;
}

const cyclesCounted = (s: Map<string, number>) =>
  sample(s, 'profile_snapshot_cycle_duration_seconds_count{outcome="ok"}') +
  sample(s, 'profile_snapshot_cycle_duration_seconds_count{outcome="failed"}');

const BUILD_METRICS = [
  'profile_snapshot_cycle_duration_seconds histogram',
  'profile_snapshot_rows_read_total counter',
  'profile_snapshot_files_written_total counter',
  'profile_snapshot_seconds_since_last_cycle gauge',
  'profile_snapshot_consecutive_failures gauge',
];
const PUBLISH_METRICS = [
  'profile_snapshot_publishes_total counter',
  'profile_snapshot_seconds_since_last_publish gauge',
  'profile_snapshot_publish_behind gauge',
  'profile_snapshot_leader gauge',
  'profile_snapshot_leader_lease_age_seconds gauge',
  'profile_snapshot_leader_info gauge',
  'profile_snapshot_publish_running gauge',
  'profile_snapshot_publish_objects_done gauge',
  'profile_snapshot_publish_objects gauge',
  'profile_snapshot_publish_bytes_sent gauge',
  'profile_snapshot_publish_eta_seconds gauge',
  'profile_snapshot_seconds_since_progress gauge',
  'profile_snapshot_stall_timeout_seconds gauge',
];
const types = (text: string) => [...text.matchAll(/^# TYPE (\S+ \S+)$/gm)].map((m) => m[1]);

/**
 * Every label of every sample is `le` or `outcome`, every outcome one of the fixed set; or the
 * leader's `host` and `pid` (this machine's host name and `leaderPid`).
 */
function labelsAreFixed(text: string, leaderPid?: number): void {
  for (const [, name, value] of text.matchAll(/[{,](\w+)="([^"]*)"/g)) {
    expect(['le', 'outcome', ...(leaderPid === undefined ? [] : ['host', 'pid'])]).toContain(name);
    if (name === 'outcome') expect(['ok', 'failed', 'success', 'failure']).toContain(value);
    if (name === 'host') expect(value).toBe(hostname());
    if (name === 'pid') expect(value).toBe(String(leaderPid));
  }
}

async function health(base: { host: string; port: number }, method = 'GET'): Promise<{ status: number; body: any }> {
  const response = await fetch(url(base, '/healthz'), { method });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}

describe('watch --metrics', () => {
  it('serves the figures in the Prometheus text format, and they move with the cycles', async () => {
    const watcher = watch(['--interval', '1', '--metrics', '127.0.0.1:0']);
    const base = await metricsBase(watcher);
    await cycleAfter(out, 0);
    const first = await scrape(base);
    expect(types(first.text)).toEqual(BUILD_METRICS);
    // The first cycle reads every user and writes the whole tree.
    const rows = sample(first.samples, 'profile_snapshot_rows_read_total');
    const written = sample(first.samples, 'profile_snapshot_files_written_total');
    expect(rows).toBe(40);
    expect(written).toBe(publishedFiles(out).length);
    expect(sample(first.samples, 'profile_snapshot_consecutive_failures')).toBe(0);
    expect(sample(first.samples, 'profile_snapshot_seconds_since_last_cycle')).toBeGreaterThanOrEqual(0);
    expect(sample(first.samples, 'profile_snapshot_seconds_since_last_cycle')).toBeLessThan(1.5);

    // One changed user: one more row read, its two alias files, the creators list and its gzip variant written.
    const before = lastCycle(out);
    sql(db, 'UPDATE users SET views = views + 1 WHERE id = 7');
    await cycleAfter(out, before + 1);
    const second = await scrape(base);
    expect(sample(second.samples, 'profile_snapshot_rows_read_total')).toBe(rows + 1);
    expect(sample(second.samples, 'profile_snapshot_files_written_total')).toBe(written + 4);

    // The histogram counts every finished cycle (two scrapes around the status read: no cycle ended between).
    for (let attempt = 0; ; attempt++) {
      const a = cyclesCounted((await scrape(base)).samples);
      const s = status(out)!;
      const b = cyclesCounted((await scrape(base)).samples);
      if (a === b && s.state === 'idle') {
        expect(a).toBe(s.lastCycle!.number);
        expect(a).toBeGreaterThanOrEqual(3);
        break;
      }
      if (attempt > 10) throw new Error('cycles kept ending during the scrapes');
    }
    expect(sample(second.samples, 'profile_snapshot_cycle_duration_seconds_count{outcome="failed"}')).toBe(0);

    // Nothing private: no path of the store or the tree, labels from fixed sets only.
    for (const text of [first.text, second.text]) {
      expect(text).not.toContain(dir.path);
      expect(text).not.toContain('profiles.db');
      labelsAreFixed(text);
    }
  });

  it('/healthz is 200 while the tree is fresh and 503 once the last cycle is older than --health-max-age', async () => {
    // Cycles 30 s apart, healthy for 1.5 s: the tree goes stale right after the first cycle.
    const watcher = watch(['--interval', '30', '--health-max-age', '1.5', '--metrics', '127.0.0.1:0']);
    const base = await metricsBase(watcher);
    await cycleAfter(out, 0);
    const fresh = await health(base);
    expect(fresh.status).toBe(200);
    expect(fresh.body).toMatchObject({ ok: true, role: null, consecutiveFailures: 0 });
    expect(fresh.body.lastCycleAgeSeconds).toBeLessThan(1.5);
    expect((await health(base, 'HEAD')).status).toBe(200);

    const stale = await waitForHealth(base, 503, 10_000);
    expect(stale.body).toMatchObject({ ok: false, role: null });
    expect(stale.body.lastCycleAgeSeconds).toBeGreaterThan(1.5);
    expect(await health(base, 'HEAD')).toEqual({ status: 503, body: undefined });
    // The gauge tells the same age.
    expect(sample((await scrape(base)).samples, 'profile_snapshot_seconds_since_last_cycle')).toBeGreaterThan(1.5);

    for (const [method, path] of [
      ['GET', '/'],
      ['GET', '/metrics/x'],
      ['GET', '/healthz/'],
      ['POST', '/metrics'],
      ['DELETE', '/healthz'],
    ] as const) {
      expect((await fetch(url(base, path), { method })).status, `${method} ${path}`).toBe(404);
    }
  });

  it('counts failed cycles, turns 503 while cycles keep failing, and 200 again once one succeeds', async () => {
    const watcher = watch(['--interval', '0.5', '--health-max-age', '1.5', '--metrics', '127.0.0.1:0']);
    const base = await metricsBase(watcher);
    await cycleAfter(out, 0);
    expect((await health(base)).status).toBe(200);

    renameSync(db, `${db}.away`); // the store is gone: every cycle fails
    const stale = await waitForHealth(base, 503, 10_000);
    expect(stale.body.consecutiveFailures).toBeGreaterThanOrEqual(2);
    const { samples } = await scrape(base);
    expect(sample(samples, 'profile_snapshot_consecutive_failures')).toBeGreaterThanOrEqual(2);
    expect(sample(samples, 'profile_snapshot_cycle_duration_seconds_count{outcome="failed"}')).toBeGreaterThanOrEqual(2);
    expect(sample(samples, 'profile_snapshot_seconds_since_last_cycle')).toBeGreaterThan(1.5);

    renameSync(`${db}.away`, db);
    const recovered = await waitForHealth(base, 200, 10_000);
    expect(recovered.body).toMatchObject({ ok: true, consecutiveFailures: 0 });
    expect(sample((await scrape(base)).samples, 'profile_snapshot_consecutive_failures')).toBe(0);
  });

  it.skipIf(process.platform !== 'linux')('listens on 127.0.0.1 only unless a host is given', async () => {
    // Linux routes all of 127/8 to the loopback: a server on 127.0.0.1 alone refuses 127.0.0.2.
    const local = watch(['--interval', '30', '--metrics', '0']);
    const localBase = await metricsBase(local);
    expect(localBase.host).toBe('127.0.0.1');
    expect((await fetch(url(localBase, '/healthz'))).status).toBeLessThan(600);
    await expect(fetch(url({ host: '127.0.0.2', port: localBase.port }, '/healthz'))).rejects.toThrow();

    // The control: a watcher told 0.0.0.0 answers there too (so the refusal above means something).
    const open = watch(['--interval', '30', '--metrics', '0.0.0.0:0'], { out: join(dir.path, 'dist-open') });
    const [, port] = await open.waitForStderr(/metrics on http:\/\/0\.0\.0\.0:(\d+)\/metrics\n/);
    expect((await fetch(url({ host: '127.0.0.2', port: Number(port) }, '/metrics'))).status).toBe(200);
  });

  it('refuses a bad --metrics or --health-max-age with a usage error (exit 2) before it starts', async () => {
    for (const args of [
      ['--metrics', 'nonsense'],
      ['--metrics', '70000'],
      ['--metrics', '127.0.0.1:'],
      ['--metrics', '9464', '--health-max-age', '0'],
      ['--health-max-age', '5'],
    ]) {
      const result = await runCliAsync(['watch', '--db', db, '--out', out, ...args], { env: EPOCH });
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(/--metrics|--health-max-age/);
      expect(status(out), args.join(' ')).toBeUndefined();
    }
    expect((await runCliAsync(['watch', '--db', db, '--out', out, '--metrics', 'nonsense'], { env: EPOCH })).stderr).toContain(
      '--metrics must be [host:]port',
    );
  });

  describe('with --publish', () => {
    const SECRET = 'metrics-secret-never-scraped';
    const PREFIX = 'prefix-never-scraped';
    let server: S3Server;
    beforeAll(async () => {
      server = await startS3rver();
    });
    afterAll(async () => {
      await server?.close();
    });

    it('counts publishes and shows the bucket lag and role, with no bucket, endpoint or credential', async () => {
      const bucket = await server.bucket();
      const watcher = watch(
        [
          '--interval',
          '0.5',
          '--metrics',
          '127.0.0.1:0',
          '--publish',
          `s3://${bucket}/${PREFIX}`,
          '--endpoint',
          server.endpoint,
          '--single-writer',
        ],
        { env: s3Env({ AWS_SECRET_ACCESS_KEY: SECRET }) },
      );
      const base = await metricsBase(watcher);
      await waitFor('a first publish', () => status(out)?.publish?.lastSuccessAt, 30_000);
      const { text, samples } = await scrape(base);
      expect(types(text)).toEqual([...BUILD_METRICS, ...PUBLISH_METRICS]);
      expect(sample(samples, 'profile_snapshot_publishes_total{outcome="success"}')).toBeGreaterThanOrEqual(1);
      expect(sample(samples, 'profile_snapshot_publishes_total{outcome="failure"}')).toBe(0);
      expect(sample(samples, 'profile_snapshot_publish_behind')).toBe(status(out)!.publish!.behind ? 1 : 0);
      expect(sample(samples, 'profile_snapshot_seconds_since_last_publish')).toBeGreaterThanOrEqual(0);
      expect(sample(samples, 'profile_snapshot_leader')).toBe(status(out)!.publish!.role === 'leader' ? 1 : 0);
      expect(sample(samples, `profile_snapshot_leader_info{host="${hostname()}",pid="${watcher.pid}"}`)).toBe(1);
      expect(sample(samples, 'profile_snapshot_leader_lease_age_seconds')).toBe(0);
      // The default --stall-timeout; a watcher between cycles beats every second.
      expect(sample(samples, 'profile_snapshot_stall_timeout_seconds')).toBe(300);
      expect(sample(samples, 'profile_snapshot_seconds_since_progress')).toBeGreaterThanOrEqual(0);
      expect(sample(samples, 'profile_snapshot_seconds_since_progress')).toBeLessThan(30);

      const healthText = JSON.stringify((await health(base)).body);
      for (const privateText of [SECRET, bucket, server.endpoint, new URL(server.endpoint).host, dir.path, PREFIX]) {
        expect(text).not.toContain(privateText);
        expect(healthText).not.toContain(privateText);
      }
      labelsAreFixed(text, watcher.pid);
    }, 40_000);
  });
});

describe('assessHealth', () => {
  const NOW = Date.parse('2026-01-01T00:10:00Z');
  const at = (secondsAgo: number) => new Date(NOW - secondsAgo * 1000).toISOString();
  const publish = (over: Partial<PublishStatus>): PublishStatus => ({
    to: 's3://b/p',
    running: false,
    runs: 1,
    consecutiveFailures: 0,
    behind: false,
    lastSuccessAt: at(500),
    lastFailureAt: null,
    lastError: null,
    last: null,
    total: { put: 0, deleted: 0 },
    role: 'leader',
    leader: null,
    leaseAgeSeconds: null,
    progress: null,
    ...over,
  });
  const watcher = (over: Partial<WatchStatus>): WatchStatus =>
    ({ startedAt: at(600), lastSuccessAt: at(10), consecutiveFailures: 0, publish: null, ...over }) as WatchStatus;
  const ok = (status: WatchStatus, behindSecondsAgo: number | null = null) =>
    assessHealth(status, behindSecondsAgo === null ? null : NOW - behindSecondsAgo * 1000, 90_000, NOW).ok;

  it('a leader answers for the bucket: current after an idle spell, stale once it lags too long', () => {
    // Idle store: no publish for 500 s, but the bucket holds the current tree.
    expect(ok(watcher({ publish: publish({}) }))).toBe(true);
    // A change 30 s ago not yet published (a publish under way): fine; 100 s ago: stale.
    expect(ok(watcher({ publish: publish({ behind: true }) }), 30)).toBe(true);
    expect(ok(watcher({ publish: publish({ behind: true }) }), 100)).toBe(false);
    // Current bucket, but cycles failing for 100 s: the bucket is as stale as the tree.
    expect(ok(watcher({ lastSuccessAt: at(100), publish: publish({}) }))).toBe(false);
    // Never published, up for 600 s: stale; up for 60 s: its first publish is under way.
    expect(ok(watcher({ publish: publish({ behind: true, lastSuccessAt: null }) }), 600)).toBe(false);
    expect(ok(watcher({ startedAt: at(60), lastSuccessAt: null, publish: publish({ behind: true, lastSuccessAt: null }) }), 60)).toBe(true);
  });

  it('a leader whose long publish keeps moving is healthy however far behind; one that stopped moving is not', () => {
    const progress = (movedSecondsAgo: number) => ({
      cycle: 1,
      startedAt: at(600),
      phase: 'upload' as const,
      done: 1000,
      total: 2_000_000,
      bytes: 1e6,
      etaSeconds: 3000,
      movedAt: at(movedSecondsAgo),
    });
    const behind = (moved: number) => publish({ behind: true, running: true, lastSuccessAt: null, progress: progress(moved) });
    expect(ok(watcher({ publish: behind(2) }), 600)).toBe(true);
    expect(ok(watcher({ publish: behind(100) }), 600)).toBe(false);
    // The tree itself too old: no publish makes up for it.
    expect(ok(watcher({ lastSuccessAt: at(100), publish: behind(2) }), 600)).toBe(false);
  });

  it('a standby, or a watcher that only builds, answers for its tree', () => {
    const standby = publish({ role: 'standby', behind: true, lastSuccessAt: null });
    expect(ok(watcher({ publish: standby }), 600)).toBe(true);
    expect(ok(watcher({ lastSuccessAt: at(100), publish: standby }), 600)).toBe(false);
    expect(ok(watcher({}))).toBe(true);
    expect(ok(watcher({ lastSuccessAt: at(100) }))).toBe(false);
    expect(ok(watcher({ startedAt: at(60), lastSuccessAt: null }))).toBe(true);
    expect(ok(watcher({ lastSuccessAt: null }))).toBe(false);
  });
});

describe('WatchMetrics: how long the bucket has lagged', () => {
  const T0 = Date.parse('2026-01-01T00:00:00Z');
  afterEach(() => vi.useRealTimers());
  const clock = (seconds: number) => vi.setSystemTime(T0 + seconds * 1000);
  const cycle = (number: number, changed: boolean): WatchEvent =>
    ({
      type: 'cycle',
      cycle: { number, ok: true, changed, durationMs: 10, finishedAt: new Date().toISOString(), rowsRead: 1, files: { written: 1 } },
    }) as unknown as WatchEvent;
  const published = (cycle: number, durationMs: number): WatchEvent =>
    ({
      type: 'publish-finish',
      result: { cycle, report: { objects: { put: 1, deleted: 0 } }, error: undefined, durationMs },
    }) as unknown as WatchEvent;
  const leader = { type: 'publish-role', status: { role: 'leader', leader: null, leaseAgeSeconds: null } } as WatchEvent;
  /** The leader's status now: the tree 1 s old, the bucket behind or not. */
  const leaderStatus = (behind: boolean) =>
    ({
      startedAt: new Date(T0).toISOString(),
      lastSuccessAt: new Date(Date.now() - 1000).toISOString(),
      consecutiveFailures: 0,
      publish: { role: 'leader', behind, lastSuccessAt: null } as Partial<PublishStatus>,
    }) as WatchStatus;

  it('counts from the first unpublished change, not from the last publish', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    clock(0);
    const metrics = new WatchMetrics({ publishes: true, healthMaxAgeMs: 10_000 });
    clock(1);
    metrics.observe(leader);
    metrics.observe(cycle(1, true));
    clock(2);
    metrics.observe(published(1, 500));
    // An idle hour: no publish, the bucket current.
    clock(3600);
    metrics.observe(cycle(2000, false));
    expect(metrics.health(leaderStatus(false))).toMatchObject({ ok: true, behindSeconds: 0 });
    // A change, its publish under way for 5 s: fine; failing for 11 s: stale.
    metrics.observe(cycle(2001, true));
    clock(3605);
    expect(metrics.health(leaderStatus(true))).toMatchObject({ ok: true, behindSeconds: 5 });
    clock(3611);
    expect(metrics.health(leaderStatus(true))).toMatchObject({ ok: false, behindSeconds: 11 });
    // A publish of 2 s that a change overtook: the bucket lags since that publish started, no longer.
    metrics.observe(cycle(2002, true));
    clock(3612);
    metrics.observe(published(2001, 2000));
    expect(metrics.health(leaderStatus(true))).toMatchObject({ ok: true, behindSeconds: 2 });
  });

  it('a standby that takes over answers for the lag from then on', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    clock(0);
    const metrics = new WatchMetrics({ publishes: true, healthMaxAgeMs: 10_000 });
    metrics.observe(cycle(1, true));
    clock(600);
    expect(metrics.health(leaderStatus(true)).ok).toBe(false);
    metrics.observe(leader);
    clock(601);
    expect(metrics.health(leaderStatus(true))).toMatchObject({ ok: true, behindSeconds: 1 });
  });
});

/** Polls /healthz until it answers `code`. */
async function waitForHealth(base: { host: string; port: number }, code: number, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await health(base);
    if (answer.status === code) return answer;
    if (Date.now() > deadline) throw new Error(`/healthz still ${answer.status} ${JSON.stringify(answer.body)} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
