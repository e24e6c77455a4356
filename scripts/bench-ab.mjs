/**
 * The current CLI against a baseline commit's, in the same run, on the same store, alternating, as
 * whole processes: a cold build into a new out dir, then per round 1% of the users' view counts
 * change and each side runs an incremental build into its own tree. Medians, and the ratios
 * current / baseline. For a change that must not cost anything (a restructure).
 *
 * With --publish, each side also publishes: its cold tree into a new prefix of its own bucket (a
 * cold publish), and after the 1% change its rebuilt tree into the same prefix (a 1% publish), to
 * s3rver on 127.0.0.1 (which ignores conditional writes: --single-writer).
 *
 *   node scripts/bench-ab.mjs --baseline <git ref> [--users 100000] [--rounds 7] [--publish] [--name <section>] [--report BENCHMARKS.md]
 *
 * The baseline is checked out into a temporary worktree and compiled there with this checkout's
 * node_modules. The stores and trees live in /dev/shm/profile-snapshot-ab-bench, or in BENCH_WORK.
 */
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { abTable, BENCH_ENV, machine, withBaseline, workingStore } from './bench-common.mjs';
import { writeSection } from './report-section.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const USERS = Number(value('--users', '100000'));
const ROUNDS = Number(value('--rounds', '7'));
const BASELINE = value('--baseline', undefined);
const NAME = value('--name', 'ab');
const REPORT = value('--report', undefined);
const PUBLISH = args.includes('--publish');
if (BASELINE === undefined) throw new Error('--baseline <git ref> is required');
/** BENCH_WORK: another folder (at 1M, two trees side by side pass the inode limit of a default /dev/shm). */
const work = process.env.BENCH_WORK ?? '/dev/shm/profile-snapshot-ab-bench';
const log = (line) => process.stdout.write(`${line}\n`);

const db = workingStore(repo, work, USERS);

const baselineDir = join(work, 'baseline');
try {
  withBaseline(repo, BASELINE, baselineDir, run);
} finally {
  rmSync(work, { recursive: true, force: true });
}

/**
 * s3rver in a child process with one bucket per side; its port is read from the file it prints to,
 * synchronously, since the whole run is (each step a whole process, waited for).
 */
function startS3() {
  const dir = join(work, 's3');
  mkdirSync(dir, { recursive: true });
  const portFile = join(work, 's3-port');
  const fd = openSync(portFile, 'w');
  const child = spawn(
    process.execPath,
    ['--openssl-legacy-provider', join(repo, 'scripts/bench-s3-server.mjs'), dir, 'current', 'baseline'],
    {
      stdio: ['ignore', fd, 'inherit'],
    },
  );
  closeSync(fd);
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let waited = 0; waited < 30_000; waited += 50) {
    const port = Number(readFileSync(portFile, 'utf8').trim());
    if (port > 0) return { endpoint: `http://127.0.0.1:${port}`, close: () => child.kill('SIGKILL') };
    Atomics.wait(pause, 0, 0, 50);
  }
  child.kill('SIGKILL');
  throw new Error('s3rver did not start within 30 s');
}

function run() {
  const s3 = PUBLISH ? startS3() : undefined;
  try {
    measure(s3);
  } finally {
    s3?.close();
  }
}

function measure(s3) {
  const sides = { current: repo, baseline: baselineDir };
  const publish = (side, out, round) => {
    const started = performance.now();
    const to = `s3://${side}/r${round}`;
    execFileSync(
      process.execPath,
      [join(sides[side], 'bin/profile-snapshot.js'), 'publish', '--out', out, '--to', to, '--endpoint', s3.endpoint, '--single-writer'],
      { env: { ...BENCH_ENV, AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' }, stdio: 'ignore' },
    );
    return performance.now() - started;
  };
  const build = (side, out) => {
    const started = performance.now();
    execFileSync(process.execPath, [join(sides[side], 'bin/profile-snapshot.js'), 'build', '--db', db, '--out', out], {
      env: BENCH_ENV,
      stdio: 'ignore',
    });
    return performance.now() - started;
  };
  log(`${NAME}: current against ${BASELINE}, ${USERS.toLocaleString('en-US')} users, ${ROUNDS} rounds; ${machine()}`);
  const kinds = () => ({ cold: [], incremental: [], coldPublish: [], publish: [] });
  const times = { current: kinds(), baseline: kinds() };
  const store = new Database(db);
  const bump = store.prepare('UPDATE users SET views = views + 1 WHERE id % 100 = ?');
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating which side goes first, so neither always meets a warmer cache.
    const order = round % 2 === 0 ? ['current', 'baseline'] : ['baseline', 'current'];
    for (const side of order) {
      const out = join(work, `cold-${side}`);
      rmSync(out, { recursive: true, force: true });
      times[side].cold.push(build(side, out));
      if (s3) times[side].coldPublish.push(publish(side, out, round));
    }
    bump.run(round % 100);
    for (const side of order) {
      times[side].incremental.push(build(side, join(work, `cold-${side}`)));
      if (s3) times[side].publish.push(publish(side, join(work, `cold-${side}`), round));
    }
  }
  store.close();
  const table = abTable(times, [
    ['cold build (new out dir)', 'cold'],
    ['incremental build (1% changed)', 'incremental'],
    ...(s3
      ? [
          ['cold publish (new prefix)', 'coldPublish'],
          ['publish of the 1% changed build', 'publish'],
        ]
      : []),
  ]);
  for (const line of table) log(line);
  // Every run, for the spread behind each median.
  for (const [side, kindsOf] of Object.entries(times))
    for (const [kind, runs] of Object.entries(kindsOf))
      if (runs.length > 0) log(`runs (s), ${side} ${kind}: ${runs.map((ms) => (ms / 1000).toFixed(2)).join(', ')}`);
  if (REPORT) {
    const section = [
      `<!-- ${NAME}:start -->`,
      `## A/B "${NAME}": this commit against ${BASELINE}`,
      '',
      `\`node scripts/bench-ab.mjs --baseline ${BASELINE} --users ${USERS} --rounds ${ROUNDS}${PUBLISH ? ' --publish' : ''} --name ${NAME}\`: whole processes, the`,
      'same store, alternating, medians.',
      '',
      machine(),
      '',
      ...table,
      `<!-- ${NAME}:end -->`,
    ].join('\n');
    writeSection(REPORT, NAME, section);
  }
}
