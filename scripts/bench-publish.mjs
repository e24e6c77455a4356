/**
 * The publish benchmark: `profile-snapshot publish` against `rclone sync` (Debian's rclone) doing the
 * same job, at 100k profiles, into a local S3 server (s3rver, on tmpfs), in the same run:
 *
 *   - cold: an empty bucket, the whole tree;
 *   - quiet: nothing changed since;
 *   - 1% changed: 1% of the users' view counts changed, rebuilt, published;
 *   - then two watchers on the same prefix at the defaults (a leader and a standby, the store
 *     unchanged), for three cycles: what the leases cost per cycle.
 *
 * Each tool publishes into its own bucket through a proxy that counts the requests by method (LIST
 * apart from GET). Each publish is a whole process, timed by wall clock; the quiet and 1% figures
 * are medians of several runs. rclone runs as a careful sync does: `--checksum` (size and MD5 from
 * the listing, no HEAD per object), `--fast-list`, 32 transfers and checkers like publish's
 * concurrency, the contract's headers on upload. Writes its section of BENCHMARKS.md.
 *
 *   node scripts/bench-publish.mjs [--users 100000] [--repeats 3] [--report BENCHMARKS.md]
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { machine as machineLine } from './bench-common.mjs';
import { writeSection } from './report-section.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const bin = join(repo, 'bin/profile-snapshot.js');
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const USERS = Number(value('--users', '100000'));
const REPEATS = Number(value('--repeats', '3'));
const REPORT = value('--report', join(repo, 'BENCHMARKS.md'));
const work = value('--work-dir', '/dev/shm/profile-snapshot-publish-bench');
const storeDir = value('--store-dir', join(repo, '.bench/stores'));
const PREFIX = 'snap';
const HEADERS = { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'public, s-maxage=30, stale-while-revalidate=60' };
const log = (line) => process.stdout.write(`${line}\n`);
const CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };

function ensureRclone() {
  if (spawnSync('rclone', ['version'], { stdio: 'ignore' }).status === 0) return true;
  log("rclone is not installed: installing Debian's package (apt-get install -y rclone)");
  spawnSync('apt-get', ['install', '-y', 'rclone'], { stdio: 'inherit' });
  return spawnSync('rclone', ['version'], { stdio: 'ignore' }).status === 0;
}

/**
 * Runs a command to its end, timed. Never spawnSync: the counting proxy lives in this process and
 * must keep answering while a tool publishes through it.
 */
function run(command, commandArgs, env = {}) {
  const started = performance.now();
  const child = spawn(command, commandArgs, { env: { PATH: process.env.PATH, HOME: work, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) =>
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`${command} ${commandArgs.join(' ')} failed (${code}):\n${stderr}`));
      else resolve({ seconds: (performance.now() - started) / 1000 });
    }),
  );
}

/** The leases and the probe of conditional writes, under <prefix>/.profile-snapshot/. */
const LEASE_KEY = /\/\.profile-snapshot\/(lock|leader|precondition-probe)(\?|$)/;

/** A proxy in front of the S3 server that counts requests by method (LIST apart), and the leases' apart too. */
function countingProxy(port) {
  const counts = {};
  const server = createServer((req, res) => {
    // A listing is a GET of the bucket itself (path-style: /<bucket>?...), v1 or v2.
    const list = req.method === 'GET' && /^\/[^/?]+\/?(\?|$)/.test(req.url ?? '');
    const kind = list ? 'LIST' : req.method;
    counts[kind] = (counts[kind] ?? 0) + 1;
    if (LEASE_KEY.test(req.url ?? '')) counts.lease = (counts.lease ?? 0) + 1;
    const forward = httpRequest({ host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ port: server.address().port, counts, close: () => server.close() })),
  );
}

async function startS3(directory, buckets) {
  mkdirSync(directory, { recursive: true });
  const child = spawn(process.execPath, ['--openssl-legacy-provider', join(repo, 'scripts/bench-s3-server.mjs'), directory, ...buckets], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise((resolve, reject) => {
    child.stdout.once('data', (d) => resolve(Number(String(d).trim())));
    child.once('exit', (code) => reject(new Error(`the S3 server exited (${code})`)));
  });
  return { port, close: () => child.kill('SIGKILL') };
}

async function seededStore() {
  mkdirSync(storeDir, { recursive: true });
  const file = join(storeDir, `seed-${USERS}.db`);
  if (!existsSync(file)) await run(process.execPath, [bin, 'seed', '--db', file, '--users', String(USERS)]);
  const copy = join(work, 'profiles.db');
  copyFileSync(file, copy);
  return copy;
}

const BUILD_ENV = { BASE_URL: 'http://localhost:3000', SOURCE_DATE_EPOCH: '1767225600' };

function build(db, out) {
  return run(process.execPath, [bin, 'build', '--db', db, '--out', out, '--full'], BUILD_ENV);
}

/** Changes the view counts of `share` of the users (a different 1% each round). */
function touch(db, share, round) {
  const store = new Database(db);
  const every = Math.round(1 / share);
  store.prepare(`UPDATE users SET views = views + ? WHERE id % ${every} = ?`).run(round, round % every);
  store.close();
}

const median = (values) => values.toSorted((a, b) => a - b)[values.length >> 1];

const WATCH_WINDOW_S = Number(value('--watch-seconds', '90'));

/**
 * A leader and a standby `watch --publish` on the bucket `publish` filled, each through its own
 * counting proxy, at the defaults (--interval 30, --lease-ttl 60), the store unchanged: the requests
 * each makes over WATCH_WINDOW_S once both have settled (the leader published, the standby stood by).
 */
async function measureWatchers(db, s3Port) {
  const roles = {};
  for (const name of ['leader', 'standby']) {
    const proxy = await countingProxy(s3Port);
    const out = join(work, `watch-${name}`);
    const args = [
      bin,
      'watch',
      '--db',
      db,
      '--out',
      out,
      '--publish',
      `s3://ours/${PREFIX}`,
      '--endpoint',
      `http://127.0.0.1:${proxy.port}`,
    ];
    const child = spawn(process.execPath, [...args, '--single-writer'], {
      env: { PATH: process.env.PATH, HOME: work, ...CREDENTIALS, ...BUILD_ENV },
      stdio: 'ignore',
    });
    roles[name] = { proxy, out, child };
    await settled(out, name);
  }
  const cyclesBefore = Object.fromEntries(Object.entries(roles).map(([name, r]) => [name, watchStatus(r.out).cycles]));
  for (const { proxy } of Object.values(roles)) for (const key of Object.keys(proxy.counts)) delete proxy.counts[key];
  await new Promise((resolve) => setTimeout(resolve, WATCH_WINDOW_S * 1000));
  const measured = {};
  for (const [name, { proxy, out, child }] of Object.entries(roles)) {
    measured[name] = { requests: { ...proxy.counts }, cycles: watchStatus(out).cycles - cyclesBefore[name] };
    log(`watch --publish, ${name}: ${JSON.stringify(measured[name])} in ${WATCH_WINDOW_S} s`);
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    proxy.close();
  }
  return measured;
}

const watchStatus = (out) => JSON.parse(readFileSync(join(out, '.profile-snapshot/status.json'), 'utf8'));

/** Waits until the watcher has found its role (and, as leader, published once). */
async function settled(out, role) {
  for (;;) {
    try {
      const publish = watchStatus(out).publish;
      if (publish?.role === role && (role === 'standby' ? publish.leader : publish.lastSuccessAt)) return;
    } catch {
      // no status yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function main() {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const hasRclone = ensureRclone();
  const db = await seededStore();
  const out = join(work, 'dist');
  await build(db, out);
  const s3 = await startS3(join(work, 's3'), ['ours', 'rclone']);
  const proxy = await countingProxy(s3.port);
  const endpoint = `http://127.0.0.1:${proxy.port}`;
  const tools = {
    'profile-snapshot publish': () =>
      run(
        process.execPath,
        [bin, 'publish', '--out', out, '--to', `s3://ours/${PREFIX}`, '--endpoint', endpoint, '--single-writer'],
        CREDENTIALS,
      ),
    'rclone sync': () =>
      run(
        'rclone',
        [
          'sync',
          out,
          `bench:rclone/${PREFIX}`,
          '--exclude',
          '.profile-snapshot/**',
          '--checksum',
          '--fast-list',
          '--transfers',
          '32',
          '--checkers',
          '32',
          '--s3-no-check-bucket',
          ...Object.entries(HEADERS).flatMap(([k, v]) => ['--header-upload', `${k}: ${v}`]),
        ],
        {
          RCLONE_CONFIG_BENCH_TYPE: 's3',
          RCLONE_CONFIG_BENCH_PROVIDER: 'Other',
          RCLONE_CONFIG_BENCH_ENDPOINT: endpoint,
          RCLONE_CONFIG_BENCH_ACCESS_KEY_ID: 'S3RVER',
          RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY: 'S3RVER',
          RCLONE_CONFIG_BENCH_FORCE_PATH_STYLE: 'true',
          RCLONE_CONFIG_BENCH_REGION: 'us-east-1',
        },
      ),
  };
  if (!hasRclone) delete tools['rclone sync'];
  const results = [];
  const measure = async (tool, scenario) => {
    for (const key of Object.keys(proxy.counts)) delete proxy.counts[key];
    const { seconds } = await tools[tool]();
    const requests = { ...proxy.counts };
    log(`${tool}, ${scenario}: ${seconds.toFixed(2)} s, requests ${JSON.stringify(requests)}`);
    return { seconds, requests };
  };
  const record = (tool, scenario, runs) => {
    const seconds = median(runs.map((r) => r.seconds));
    const middle = runs.find((r) => r.seconds === seconds);
    results.push({ tool, scenario, seconds, runs: runs.map((r) => r.seconds), requests: middle.requests });
  };
  for (const tool of Object.keys(tools)) record(tool, 'cold (empty bucket)', [await measure(tool, 'cold')]);
  for (const tool of Object.keys(tools)) {
    const quiet = [];
    for (let i = 0; i < REPEATS; i++) quiet.push(await measure(tool, 'quiet'));
    record(tool, 'quiet (nothing changed)', quiet);
  }
  const changed = Object.fromEntries(Object.keys(tools).map((tool) => [tool, []]));
  for (let round = 1; round <= REPEATS; round++) {
    touch(db, 0.01, round);
    await build(db, out);
    for (const tool of Object.keys(tools)) changed[tool].push(await measure(tool, '1% changed'));
  }
  for (const tool of Object.keys(tools)) record(tool, '1% of users changed', changed[tool]);
  proxy.close();
  const watchers = await measureWatchers(db, s3.port);
  s3.close();
  report(results, hasRclone, watchers);
  rmSync(work, { recursive: true, force: true });
}

function report(results, hasRclone, watchers) {
  const kinds = ['GET', 'HEAD', 'PUT', 'POST', 'DELETE', 'LIST'];
  const total = (r) => Object.values(r.requests).reduce((a, b) => a + b, 0);
  const peer = (r) => results.find((p) => p.tool === 'rclone sync' && p.scenario === r.scenario);
  const rows = results.map((r) => {
    const p = r.tool === 'rclone sync' ? undefined : peer(r);
    const ratio = p
      ? ` (${(r.seconds / p.seconds).toPrecision(2)}x rclone's time, ${(total(r) / total(p)).toPrecision(2)}x its requests)`
      : '';
    const lease = r.tool === 'rclone sync' ? '' : (r.requests.lease ?? 0).toLocaleString('en-US');
    return `| ${r.scenario} | ${r.tool} | ${r.seconds.toFixed(2)}${ratio} | ${kinds.map((k) => (r.requests[k] ?? 0).toLocaleString('en-US')).join(' | ')} | ${total(r).toLocaleString('en-US')} | ${lease} |`;
  });
  const perCycle = (name) => {
    const { requests, cycles } = watchers[name];
    const all = kinds.reduce((sum, k) => sum + (requests[k] ?? 0), 0);
    const byKind =
      kinds
        .filter((k) => requests[k])
        .map((k) => `${requests[k]} ${k}`)
        .join(', ') || 'none';
    return `the ${name} made ${all} requests (${byKind}; ${requests.lease ?? 0} of them on the leases) in ${cycles} cycles: ${(all / Math.max(1, cycles)).toFixed(2)} per cycle`;
  };
  const machine = machineLine();
  const section = `<!-- publish:start -->
## Publishing to object storage

Written by \`npm run bench:publish\` (scripts/bench-publish.mjs) on ${new Date().toISOString().slice(0, 10)}. Machine: ${machine}.

${USERS.toLocaleString('en-US')} users (the bench's seeded store), the tree built once, then published into a local S3 server
(s3rver 3.7.1 on tmpfs) by \`profile-snapshot publish\` and by \`rclone sync\` (${hasRclone ? spawnSync('rclone', ['version'], { encoding: 'utf8' }).stdout.split('\n')[0] : 'not installed'}),
each into its own bucket, through a proxy that counts requests. rclone: \`--checksum --fast-list --transfers 32
--checkers 32\` and the contract's two headers on upload. Whole processes, wall-clock seconds; quiet and 1%
figures are medians of ${REPEATS} runs (1%: a different 1% of the users each round, rebuilt before both tools
publish the same tree). Requests by method; LIST is counted apart from GET.

| scenario | tool | seconds | GET | HEAD | PUT | POST | DELETE | LIST | requests | of which on the leases |
|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}

Runs (seconds): ${results.map((r) => `${r.tool}, ${r.scenario}: ${r.runs.map((s) => s.toFixed(2)).join(', ')}`).join('; ')}.

The S3 server (one Node process) is the bottleneck here, so these are the two tools' costs against
the same server, not S3's speed. rclone's quiet and 1% runs are dominated by listing every object
and comparing each with the MD5 of its local file; publish reads the two state objects instead.

What the leases cost (docs/publish.md, "Several publishers"): the last column counts the requests on
\`.profile-snapshot/lock\`, \`leader\` and the precondition probe. A quiet publish takes no lease. A
writing one looks at the lock, takes it and releases it (a GET and two PUTs), plus a renewal per
quarter TTL while it runs; its record is read again once the lock is held, as conditional GETs (304).
The first publish to a prefix also probes the store (three PUTs and a DELETE; s3rver ignores
conditional writes, so these runs pass \`--single-writer\`). Per watch cycle, two watchers at the
defaults (\`--interval 30 --lease-ttl 60\`) on this tree, the store unchanged, over ${WATCH_WINDOW_S} s: ${perCycle('leader')}; ${perCycle('standby')}.
<!-- publish:end -->`;
  writeSection(REPORT, 'publish', section);
  log(`publish: figures written to ${REPORT}`);
}

await main();
