/**
 * Load and soak of the origin server (issue 7.3), over real HTTP on 127.0.0.1 with real processes.
 *
 * Load: autocannon at 100 connections runs the hosting request table (hits, misses, every letter
 * case, the query form, the alias, errors, preflights, other methods) against `serve`: zero socket
 * errors, zero timeouts, zero answers with a status the table does not expect, nosniff on every
 * answer. The router's cost is measured against plain serve-handler on the same tree in the same run
 * (same canonical paths on both); the figures are reported, never asserted (no timing assertions).
 *
 * Soak: `watch` regenerates the tree every 0.3 s from a store a writer keeps changing, while `serve`
 * answers 100 connections: every profile answer is whole JSON of the right user, the server's open
 * descriptors return to their idle count, and (in a soak long enough to pass the warm-up ramp, as
 * `npm run load` runs it) neither process's memory grows (read from /proc). `npm run load` runs both longer
 * and writes the figures into BENCHMARKS.md.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildArgs, cli, makeStore, tempDir } from '../faults/helpers.js';
import { buildSampleSnapshot, type Snapshot } from '../hosting/fixture.js';
import { requestTable } from '../hosting/request-table.js';
import { userName } from '../helpers/store.js';
import { liveHeap, load, plainServer, procStats, serve, fixture, watch, type LoadFigures, type LoadRequest, type Proc } from './harness.js';

const LOAD_SECONDS = Number(process.env.LOAD_SECONDS ?? 2);
const SOAK_SECONDS = Number(process.env.SOAK_SECONDS ?? 8);
const REPORT = process.env.LOAD_REPORT;
const report: Record<string, unknown> = { loadSeconds: LOAD_SECONDS, soakSeconds: SOAK_SECONDS, connections: 100 };
afterAll(() => {
  if (REPORT) writeFileSync(REPORT, JSON.stringify(report, null, 2));
});

const procs: Proc[] = [];
afterAll(async () => {
  for (const p of procs.splice(0)) await p.stop();
});
const track = <T extends Proc>(p: T) => (procs.push(p), p);

describe('load: the request table at 100 connections', () => {
  let snapshot: Snapshot;
  beforeAll(() => {
    snapshot = buildSampleSnapshot();
  });
  afterAll(() => snapshot?.cleanup());

  it('serve answers every row as the table says, with no socket error; the router costs little against plain serve-handler', async () => {
    // HEAD is left out: autocannon's parser waits for a body a HEAD answer never has.
    const table: LoadRequest[] = requestTable()
      .filter((r) => r.method !== 'HEAD')
      .map((r) => ({ method: r.method, path: r.target, statuses: [r.expected.status] }));
    expect(table.length).toBeGreaterThan(150);
    expect(new Set(table.map((r) => r.statuses[0]))).toEqual(new Set([200, 204, 400, 404, 405]));
    // The canonical files, which both servers can answer: the fair comparison of the router's cost.
    const canonical = requestTable()
      .filter(
        (r) =>
          r.method === 'GET' &&
          'user' in r.expected &&
          r.target.startsWith('/api/v1/users/') &&
          r.target === r.target.toLowerCase() &&
          !r.target.includes('?'),
      )
      .map((r) => ({ method: 'GET', path: r.target, statuses: [200] }));
    canonical.push({ method: 'GET', path: '/service-api/v1/creators', statuses: [200] });
    expect(canonical.length).toBeGreaterThan(5);

    const origin = track(await serve(snapshot.out));
    const plain = track(await plainServer(snapshot.out));
    const routerBase = `http://127.0.0.1:${origin.match}`;
    const plainBase = `http://127.0.0.1:${plain.match}`;

    const figures: Record<string, LoadFigures> = {};
    figures.routerCanonical = await load(routerBase, canonical, { seconds: LOAD_SECONDS, nosniff: true });
    figures.plainCanonical = await load(plainBase, canonical, { seconds: LOAD_SECONDS });
    figures.routerTable = await load(routerBase, table, { seconds: LOAD_SECONDS, nosniff: true });
    report.load = figures;
    report.rows = { table: table.length, canonical: canonical.length };
    for (const [name, f] of Object.entries(figures)) {
      expect({
        name,
        errors: f.errors,
        timeouts: f.timeouts,
        unexpected: f.unexpected,
        withoutNosniff: f.withoutNosniff,
        examples: f.examples,
      }).toEqual({ name, errors: 0, timeouts: 0, unexpected: 0, withoutNosniff: 0, examples: [] });
      expect(f.requests).toBeGreaterThan(table.length);
    }
    expect(origin.stderr()).not.toMatch(/internal error|Error:/);
  }, 120_000);
});

describe('soak: serve under load while watch regenerates', () => {
  it(
    'every answer is right and whole; open descriptors come back to idle; memory does not grow past the warm-up (long soak)',
    async () => {
      const dir = tempDir();
      try {
        const db = join(dir.path, 'profiles.db');
        const out = join(dir.path, 'out');
        makeStore(db, 300);
        expect(cli(buildArgs(db, out)).code).toBe(0);
        track(fixture('writer.mjs', [db]));
        const watcher = track(await watch(['--db', db, '--out', out, '--base-url', 'https://p.example.com', '--interval', '0.3']));
        const origin = track(await serve(out));
        const base = `http://127.0.0.1:${origin.match}`;

        const whole = (id: number) => (body: string) => {
          try {
            const json = JSON.parse(body);
            return json.data?.username === userName(id) ? undefined : `another user: ${json.data?.username}`;
          } catch {
            return `not whole JSON (${body.length} bytes)`;
          }
        };
        const requests: LoadRequest[] = [];
        for (let id = 1; id <= 300; id += 7) {
          const statuses = id > 250 ? [200, 404] : [200]; // 251-300 come and go
          const upper = userName(id).toUpperCase();
          requests.push({ method: 'GET', path: `/api/v1/users/${userName(id)}`, statuses, checkBody: whole(id) });
          requests.push({ method: 'GET', path: `/service-api/v1/users/${upper}`, statuses, checkBody: whole(id) });
          requests.push({ method: 'GET', path: `/api/v1/users?username=${upper}`, statuses, checkBody: whole(id) });
        }
        requests.push({ method: 'GET', path: '/api/v1/users/nobody-here', statuses: [404] });
        requests.push({
          method: 'GET',
          path: '/service-api/v1/creators',
          statuses: [200],
          checkBody: (b) => {
            try {
              JSON.parse(b);
              return undefined;
            } catch {
              return 'creators list not whole JSON';
            }
          },
        });

        // Warm up (lazy allocations, JIT), then take the idle baseline.
        await load(base, requests, { seconds: 1 });
        const settled = async () => {
          // Until the descriptor count has stopped falling for a second (the warm-up's or the soak's
          // connections closing): on a busy machine (other test files run beside this one) the server
          // can take longer than one 100 ms look to close the next batch. At most 10 s.
          let now = procStats(origin.pid);
          for (let i = 0, still = 0; i < 100 && still < 10; i++) {
            await new Promise((r) => setTimeout(r, 100));
            const next = procStats(origin.pid);
            still = next.fds < now.fds ? 0 : still + 1;
            now = next;
          }
          return now;
        };
        const start = { server: await settled(), watch: procStats(watcher.pid) };
        const heapStart = { server: await liveHeap(origin), watch: await liveHeap(watcher) };
        const samples: { t: number; server: ReturnType<typeof procStats>; watch: ReturnType<typeof procStats> }[] = [];
        const sampler = setInterval(
          () => samples.push({ t: samples.length, server: procStats(origin.pid), watch: procStats(watcher.pid) }),
          1000,
        );
        const figures = await load(base, requests, { seconds: SOAK_SECONDS, nosniff: true });
        clearInterval(sampler);
        // Idle again: every connection closed, so any descriptor still open is a leak.
        const end = await settled();
        const watchEnd = procStats(watcher.pid);
        const heapEnd = { server: await liveHeap(origin), watch: await liveHeap(watcher) };
        const thirds = (pick: (s: (typeof samples)[number]) => number) => {
          const third = Math.max(1, Math.floor(samples.length / 3));
          const peakOf = (part: typeof samples) => (part.length === 0 ? null : Math.max(...part.map(pick)));
          return {
            peakRssKb: peakOf(samples),
            middleThirdPeakRssKb: peakOf(samples.slice(third, 2 * third)),
            lastThirdPeakRssKb: peakOf(samples.slice(2 * third)),
          };
        };
        const cycles = Number(
          /cycle (\d+)/g.exec(
            watcher
              .stderr()
              .split('\n')
              .filter((l) => /cycle \d+/.test(l))
              .at(-1) ?? '',
          )?.[1] ?? 0,
        );
        report.soak = {
          ...figures,
          cycles,
          heapStart,
          heapEnd,
          server: { start: start.server, end, ...thirds((s) => s.server.rssKb), peakFds: Math.max(...samples.map((s) => s.server.fds)) },
          watch: {
            start: start.watch,
            end: watchEnd,
            ...thirds((s) => s.watch.rssKb),
            peakFds: Math.max(...samples.map((s) => s.watch.fds)),
          },
          samples: samples.map((s) => [s.server.rssKb, s.server.fds, s.watch.rssKb, s.watch.fds]),
        };

        expect({
          errors: figures.errors,
          timeouts: figures.timeouts,
          unexpected: figures.unexpected,
          withoutNosniff: figures.withoutNosniff,
          examples: figures.examples,
        }).toEqual({ errors: 0, timeouts: 0, unexpected: 0, withoutNosniff: 0, examples: [] });
        expect(cycles, 'watch regenerated under the load').toBeGreaterThanOrEqual(3);
        expect(watcher.stderr()).not.toMatch(/FAILED/);
        // No descriptor leaks: back to the idle baseline once the connections are gone.
        expect(end.fds, `server descriptors ${start.server.fds} -> ${end.fds}`).toBeLessThanOrEqual(start.server.fds + 2);
        expect(watchEnd.fds, `watch descriptors ${start.watch.fds} -> ${watchEnd.fds}`).toBeLessThanOrEqual(start.watch.fds + 8);
        // No leak: the live heap after a full collection is what it was before the soak (+20 %, +4 MB
        // for caches that fill once). A leak of a few hundred bytes a request shows at once.
        for (const who of ['server', 'watch'] as const) {
          expect(heapEnd[who], `${who} live heap ${heapStart[who]} -> ${heapEnd[who]} bytes`).toBeLessThanOrEqual(
            heapStart[who] * 1.2 + 4 * 1024 * 1024,
          );
        }
        // No RSS growth either. Under 100 connections the server's heap grows to a plateau in its first
        // 20-30 s (V8 sizing its heap, socket buffers): measured then, the last third's peak stays within
        // the middle third's. Only a soak long enough to pass the ramp can tell (npm run load: 180 s);
        // the short one in npm test records the figures and checks descriptors and answers.
        if (samples.length >= 45) {
          const third = Math.floor(samples.length / 3);
          const peak = (from: number, to: number, pick: (s: (typeof samples)[number]) => number) =>
            Math.max(...samples.slice(from, to).map(pick));
          for (const who of ['server', 'watch'] as const) {
            const middle = peak(third, 2 * third, (s) => s[who].rssKb);
            const last = peak(2 * third, samples.length, (s) => s[who].rssKb);
            expect(last, `${who} RSS peak ${middle} kB in the middle third, ${last} kB in the last`).toBeLessThanOrEqual(
              middle * 1.1 + 8192,
            );
          }
        }
      } finally {
        for (const p of procs.splice(0)) await p.stop();
        dir.cleanup();
      }
    },
    Math.max(60_000, SOAK_SECONDS * 1000 + 60_000),
  );
});
