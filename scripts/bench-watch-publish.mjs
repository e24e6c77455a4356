/**
 * `watch --publish` on a live store at scale, as whole processes: a million users (by default), the
 * in-memory S3 server (bench-s3-memory.mjs) 25 ms away, the wall clock as snapshot time, the
 * default interval, and a writer changing 1% of the users per minute while the watcher runs (as a
 * live platform does, from the watcher's start):
 *
 *   - baseline, same run: a cold `build` and a cold `publish` of the same store into an empty prefix;
 *   - the watcher's first publish (its tree pinned while its cycles keep committing): seconds, against
 *     the cold publish's own time plus one cycle;
 *   - then, for --minutes: each cycle's publish (seconds, objects), and the change-to-bucket latency
 *     of marked changes (a user's bio set, then its object's ETag polled until it moves), median
 *     and worst, against the bound interval + cycle + the publish of what changed;
 *   - the watcher's peak RSS (VmHWM), and the requests the server saw fail or reset.
 *
 *   node scripts/bench-watch-publish.mjs [--users 1000000] [--minutes 10] [--interval 30] [--delay-ms 25]
 *        [--change-per-minute 0.01] [--sample-every 15] [--report BENCHMARKS.md] [--clock]
 *
 * Trees and the working store live on tmpfs (/dev/shm/ps-watch-publish); the seeded store is
 * seededStore()'s (cached in .bench/stores).
 */
import { fork, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { BENCH_ENV, machine, median, trackStore, workingStore } from './bench-common.mjs';
import { writeSection } from './report-section.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const USERS = Number(value('--users', '1000000'));
const MINUTES = Number(value('--minutes', '10'));
const INTERVAL_S = Number(value('--interval', '30'));
const DELAY_MS = Number(value('--delay-ms', '25'));
const CHANGE_PER_MINUTE = Number(value('--change-per-minute', '0.01'));
const SAMPLE_EVERY_S = Number(value('--sample-every', '15'));
const REPORT = value('--report', undefined);
/** `--clock`: the working store gets the change clock (`store track`) first, so cycles follow it. */
const CLOCK = args.includes('--clock');
const bin = join(repo, 'bin/profile-snapshot.js');
const work = '/dev/shm/ps-watch-publish';
// The wall clock: ages turn as they do in production (no SOURCE_DATE_EPOCH).
const env = { ...BENCH_ENV, AWS_ACCESS_KEY_ID: 'bench', AWS_SECRET_ACCESS_KEY: 'bench', AWS_REGION: 'us-east-1' };
delete env.SOURCE_DATE_EPOCH;

const log = (line) => process.stderr.write(`[bench-watch-publish ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function startServer() {
  const child = fork(join(repo, 'scripts/bench-s3-memory.mjs'), ['--delay-ms', String(DELAY_MS)], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const pending = [];
  child.on('message', (message) => pending.shift()?.(message));
  const ask = (message) => new Promise((resolve) => (pending.push(resolve), child.send(message)));
  return new Promise((resolve, reject) => {
    child.stdout.once('data', (d) => resolve({ port: JSON.parse(String(d)).port, ask, close: () => child.kill('SIGKILL') }));
    child.once('exit', (code) => reject(new Error(`the S3 server exited (${code})`)));
  });
}

/** Runs the CLI to its end under /usr/bin/time: wall seconds and peak RSS. */
function timed(cliArgs) {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/time', ['-f', 'TIME %e %M', process.execPath, bin, ...cliArgs], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => {
      const m = /TIME ([\d.]+) (\d+)/.exec(stderr);
      if (code !== 0 || !m) return reject(new Error(`${cliArgs[0]} failed (${code}): ${stderr.slice(-2000)}`));
      resolve({ seconds: Number(m[1]), rssMb: Number(m[2]) / 1024, stderr });
    });
  });
}

/** The ETag of `key` in the bucket (HEAD), or undefined. */
function etagOf(port, key) {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, method: 'HEAD', path: `/profiles/${key}` }, (res) => {
      res.resume();
      resolve(res.statusCode === 200 ? res.headers.etag : undefined);
    });
    req.on('error', () => resolve(undefined));
    req.end();
  });
}

/** A random user whose profile is in the bucket (not a banned or deleted one), and its object's ETag. */
async function publishedUser(port, writer) {
  for (;;) {
    const id = 1 + Math.floor(Math.random() * USERS);
    const key = `live/api/v1/users/${String(writer.username(id)).toLowerCase()}`;
    const before = await etagOf(port, key);
    if (before !== undefined) return { id, key, before };
  }
}

const peakRssMb = (pid) => {
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
  } catch {
    return NaN;
  }
};

/** The platform: 1% of the users a minute, in batches every second, their view counts changed. */
function startWriter(db) {
  const store = new Database(db);
  // The platform runs its store in WAL mode: its writes never wait for the watcher's reads.
  store.pragma('journal_mode = WAL');
  store.pragma('busy_timeout = 5000');
  const update = store.prepare('UPDATE users SET views = views + 1 WHERE id = ?');
  const perSecond = Math.max(1, Math.round((USERS * CHANGE_PER_MINUTE) / 60));
  let written = 0;
  let busy = 0;
  const timer = setInterval(() => {
    try {
      store.transaction(() => {
        for (let i = 0; i < perSecond; i++) update.run(1 + Math.floor(Math.random() * USERS));
      })();
      written += perSecond;
    } catch (error) {
      if (error.code !== 'SQLITE_BUSY') throw error;
      busy++; // a checkpoint held the store past the busy timeout: this second's batch is skipped
    }
  }, 1000);
  return {
    mark: (id, bio) => store.prepare('UPDATE users SET bio = ? WHERE id = ?').run(bio, id),
    username: (id) => store.prepare('SELECT username FROM users WHERE id = ?').get(id)?.username,
    stop: () => (clearInterval(timer), store.close(), { written, busy }),
  };
}

async function main() {
  // A tree left by an interrupted run would use up the tmpfs's inodes (a 1M tree is 2M files).
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  log(`store of ${USERS} users`);
  const db = workingStore(repo, join(work, 'store'), USERS);
  if (CLOCK) trackStore(repo, db);
  const server = await startServer();
  const endpoint = ['--endpoint', `http://127.0.0.1:${server.port}`, '--path-style'];
  try {
    log('baseline: cold build, then cold publish into an empty prefix');
    const coldOut = join(work, 'cold');
    rmSync(coldOut, { recursive: true, force: true });
    const coldBuild = await timed(['build', '--db', db, '--out', coldOut]);
    const coldPublish = await timed(['publish', '--out', coldOut, '--to', 's3://profiles/cold', ...endpoint]);
    log(`cold build ${coldBuild.seconds} s, cold publish ${coldPublish.seconds} s (${coldPublish.rssMb.toFixed(0)} MB)`);
    rmSync(coldOut, { recursive: true, force: true });
    await server.ask({ op: 'drop', prefix: 'cold/' });
    return await watch(db, server, endpoint, coldBuild, coldPublish);
  } finally {
    server.close();
  }
}

async function watch(db, server, endpoint, coldBuild, coldPublish) {
  const out = join(work, 'watch');
  rmSync(out, { recursive: true, force: true });
  const writer = startWriter(db);
  const startedAt = Date.now();
  const watcher = spawn(
    process.execPath,
    [bin, 'watch', '--db', db, '--out', out, '--interval', String(INTERVAL_S), '--publish', 's3://profiles/live', ...endpoint],
    {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  watcher.stderr.on('data', (d) => (stderr += d));
  const publishes = () =>
    [...stderr.matchAll(/publish \(cycle (\d+)\): (FAILED)?(?:([\d,]+) objects put)?.*; ([\d.]+) s$/gm)].map((m) => ({
      cycle: Number(m[1]),
      failed: m[2] !== undefined,
      put: Number((m[3] ?? '0').replaceAll(',', '')),
      seconds: Number(m[4]),
    }));
  const cycles = () =>
    [...stderr.matchAll(/: cycle (\d+): .*; ([\d.]+) s; next in/gm)].map((m) => ({ cycle: Number(m[1]), seconds: Number(m[2]) }));
  try {
    while (publishes().length === 0) {
      if (watcher.exitCode !== null) throw new Error(`the watcher exited: ${stderr.slice(-2000)}`);
      await sleep(1000);
    }
    const firstAt = Date.now();
    const first = publishes()[0];
    log(
      `first publish: ${first.seconds} s${first.failed ? ' FAILED' : ''}; ${((firstAt - startedAt) / 1000).toFixed(0)} s after the watcher started`,
    );
    const latencies = [];
    for (let sample = 0; Date.now() - firstAt < MINUTES * 60_000; sample++) {
      const { id, key, before } = await publishedUser(server.port, writer);
      const changedAt = Date.now();
      writer.mark(id, `marked ${sample} at ${changedAt}`);
      while ((await etagOf(server.port, key)) === before && Date.now() - changedAt < 300_000) await sleep(250);
      latencies.push((Date.now() - changedAt) / 1000);
      log(`change ${sample} (user ${id}): in the bucket after ${latencies.at(-1).toFixed(1)} s`);
      await sleep(Math.max(0, SAMPLE_EVERY_S * 1000 - (Date.now() - changedAt)));
    }
    const rss = peakRssMb(watcher.pid);
    return { coldBuild, coldPublish, first, publishes: publishes(), cycles: cycles(), latencies, rss, written: writer.stop() };
  } finally {
    watcher.kill('SIGKILL');
  }
}

function report(result) {
  const { coldBuild, coldPublish, first, latencies } = result;
  const later = result.publishes.slice(1);
  const firstCycle = result.cycles[0]?.seconds ?? NaN;
  const cycleSeconds = result.cycles.slice(1).map((c) => c.seconds);
  const laterSeconds = later.map((p) => p.seconds);
  const bound = INTERVAL_S + Math.max(...cycleSeconds) + Math.max(...laterSeconds);
  const lines = [
    `${machine()}; ${USERS.toLocaleString('en-US')} users, the in-memory S3 ${DELAY_MS} ms away, \`watch --publish\` with the wall clock and --interval ${INTERVAL_S}, a writer changing ${CHANGE_PER_MINUTE * 100}% of the users a minute from the watcher's start (${result.written.written.toLocaleString('en-US')} changes in all, ${result.written.busy} one-second batches skipped on a busy store).`,
    '',
    '| measure | figure | against |',
    '|---|---|---|',
    `| cold build (baseline, same run) | ${coldBuild.seconds.toFixed(1)} s, ${coldBuild.rssMb.toFixed(0)} MB | |`,
    `| cold publish (baseline, same run) | ${coldPublish.seconds.toFixed(1)} s, ${coldPublish.rssMb.toFixed(0)} MB | |`,
    `| the watcher's first cycle (build) | ${firstCycle.toFixed(1)} s | |`,
    `| the watcher's first publish (its cycles committing meanwhile) | ${first.seconds.toFixed(1)} s${first.failed ? ', FAILED' : ''} | cold publish + one cycle: ${(coldPublish.seconds + INTERVAL_S).toFixed(1)} s (${(first.seconds / (coldPublish.seconds + INTERVAL_S)).toFixed(2)}x) |`,
    `| later publishes (${later.length}) | median ${median(laterSeconds).toFixed(1)} s, worst ${Math.max(...laterSeconds).toFixed(1)} s; median ${median(later.map((p) => p.put)).toLocaleString('en-US')} objects put; ${later.filter((p) => p.failed).length} failed | |`,
    `| later cycles (${cycleSeconds.length}) | median ${median(cycleSeconds).toFixed(2)} s, worst ${Math.max(...cycleSeconds).toFixed(2)} s | |`,
    `| change to bucket (${latencies.length} marked changes over ${MINUTES} min) | median ${median(latencies).toFixed(1)} s, worst ${Math.max(...latencies).toFixed(1)} s | interval + worst cycle + worst publish: ${bound.toFixed(1)} s |`,
    `| the watcher's peak RSS | ${result.rss.toFixed(0)} MB | cold publish ${coldPublish.rssMb.toFixed(0)} MB |`,
  ];
  return lines.join('\n');
}

const result = await main();
const text = report(result);
process.stdout.write(`${text}\n`);
const section = [
  '<!-- bench-watch-publish:start -->',
  '## Publishing from the watcher while the store changes (bench-watch-publish)',
  '',
  `\`node scripts/bench-watch-publish.mjs --users ${USERS} --minutes ${MINUTES}\`, at ${new Date().toISOString().slice(0, 10)}:`,
  '',
  text,
  '<!-- bench-watch-publish:end -->',
].join('\n');
if (REPORT) writeSection(REPORT, 'bench-watch-publish', section);
