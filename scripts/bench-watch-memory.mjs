/**
 * A watcher's memory for a cycle after 1% of a large store changed, as whole processes: a million
 * users (by default) on tmpfs, a fixed snapshot time (so only the change moves the tree), the
 * in-memory S3 server (bench-s3-memory.mjs), a fresh one each run.
 *
 *   - `watch --publish` (its publish and renewal threads included): once its first publish is done,
 *     its peak RSS is reset (Linux: `echo 5 > /proc/PID/clear_refs`), 1% of the users change, and its
 *     peak RSS (VmHWM) is read once the cycle that carried the change has published it;
 *   - the same without --publish, the same way: the baseline of the watcher's own cycle.
 *
 * `--clock`: the store gets the change clock first (`store track`), so both watchers follow it and
 * keep the lean copy of the store (store/shadow.ts); its report is a section of its own.
 *
 * BENCH_WORK names another work folder than /dev/shm/ps-watch-memory (a 1M tree holds 1.76M files:
 * two side by side pass the inode limit of a default /dev/shm).
 *
 * `--bin` names another build of the tool (a commit before a change, say) to measure instead.
 * `--watchers publishing` (or `local`) measures that watcher alone, half the time at 1M; the report
 * then has its row only.
 *
 *   node scripts/bench-watch-memory.mjs [--users 1000000] [--runs 1] [--clock] [--watchers both|publishing|local]
 *     [--bin <profile-snapshot.js>] [--report BENCHMARKS.md]
 */
import { fork, spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { BENCH_ENV, machine, median, trackStore, workingStore } from './bench-common.mjs';
import { writeSection } from './report-section.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const USERS = Number(value('--users', '1000000'));
const RUNS = Number(value('--runs', '1'));
const REPORT = value('--report', undefined);
const CLOCK = args.includes('--clock');
const WATCHERS = value('--watchers', 'both');
if (!['both', 'publishing', 'local'].includes(WATCHERS)) throw new Error(`--watchers takes both, publishing or local, not ${WATCHERS}`);
// Issue 62's targets: a publishing watcher at 1M in 450 MB, at 100k in 160 MB.
const TARGET_MB = USERS <= 100_000 ? 160 : 450;
const bin = resolve(value('--bin', join(repo, 'bin/profile-snapshot.js')));
const work = process.env.BENCH_WORK ?? '/dev/shm/ps-watch-memory';
const env = { ...BENCH_ENV, AWS_ACCESS_KEY_ID: 'bench', AWS_SECRET_ACCESS_KEY: 'bench', AWS_REGION: 'us-east-1' };

const log = (line) => process.stderr.write(`[bench-watch-memory ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const statusMb = (pid, field) =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;

function startServer() {
  const child = fork(join(repo, 'scripts/bench-s3-memory.mjs'), ['--delay-ms', '0'], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.stdout.once('data', (d) => resolve({ port: JSON.parse(String(d)).port, close: () => child.kill('SIGKILL') }));
    child.once('exit', (code) => reject(new Error(`the S3 server exited (${code})`)));
  });
}

/** Waits until `stderr()` holds `pattern` `count` times; the watcher must stay alive. */
async function waitFor(watcher, stderr, pattern, count, what) {
  while ((stderr().match(pattern) ?? []).length < count) {
    if (watcher.exitCode !== null) throw new Error(`the watcher exited while waiting for ${what}: ${stderr().slice(-2000)}`);
    await sleep(250);
  }
}

/** One watcher: its first cycle (and publish), then the peak RSS of the cycle after 1% changed. */
async function measure(db, publish, port) {
  const out = join(work, publish ? 'publishing' : 'local');
  rmSync(out, { recursive: true, force: true });
  const remote = publish ? ['--publish', 's3://profiles/memory', '--endpoint', `http://127.0.0.1:${port}`, '--path-style'] : [];
  const watcher = spawn(process.execPath, [bin, 'watch', '--db', db, '--out', out, '--interval', '5', ...remote], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  watcher.stderr.on('data', (d) => (stderr += d));
  const done = publish ? /publish \(cycle \d+\): (?!FAILED).*; [\d.]+ s$/gm : /: cycle \d+: .*; [\d.]+ s; next in/gm;
  try {
    await waitFor(watcher, () => stderr, done, 1, 'the first cycle');
    const firstPeak = statusMb(watcher.pid, 'VmHWM');
    const before = (stderr.match(done) ?? []).length;
    writeFileSync(`/proc/${watcher.pid}/clear_refs`, '5');
    const store = new Database(db);
    store.prepare("UPDATE users SET bio = bio || '.' WHERE id % 100 = 7").run();
    store.close();
    // Publishing, the next publish carries the change (nothing else moves the tree); else two more
    // cycles, in case the change landed just as one was reading.
    await waitFor(watcher, () => stderr, done, before + (publish ? 1 : 2), 'the cycle after the change');
    const peak = statusMb(watcher.pid, 'VmHWM');
    // What the resident set is made of now, the peak just passed: the heaps (anonymous) and the mapped files (code).
    const anonymous = statusMb(watcher.pid, 'RssAnon');
    const line = [...stderr.matchAll(done)].at(publish ? -1 : -2)?.[0] ?? '';
    log(
      `${publish ? 'watch --publish' : 'watch'}: first cycle peak ${firstPeak.toFixed(0)} MB; after 1% changed ${peak.toFixed(0)} MB, ${anonymous.toFixed(0)} MB of it anonymous now (${line.trim()})`,
    );
    return { firstPeak, peak, anonymous };
  } finally {
    watcher.kill('SIGKILL');
    rmSync(out, { recursive: true, force: true });
  }
}

const db = workingStore(repo, work, USERS);
if (CLOCK) trackStore(repo, db);
const runs = [];
for (let run = 1; run <= RUNS; run++) {
  log(`run ${run} of ${RUNS}`);
  // An empty bucket each run: one that already held the tree made the first publish a quiet check,
  // and the change then came while the watcher was still at its first cycle's peak.
  const server = await startServer();
  try {
    runs.push({
      local: WATCHERS === 'publishing' ? undefined : await measure(db, false, server.port),
      publishing: WATCHERS === 'local' ? undefined : await measure(db, true, server.port),
    });
  } finally {
    server.close();
  }
}
const peak = (kind) => median(runs.map((r) => r[kind].peak));
const cell = (kind, field) => `${median(runs.map((r) => r[kind][field])).toFixed(0)} MB`;
const versus = (kind) =>
  `target ${TARGET_MB} MB (${(peak(kind) / TARGET_MB).toFixed(2)}x)${WATCHERS === 'both' ? `; ${(peak(kind) / peak('local')).toFixed(2)}x the baseline` : ''}`;
const rows = [
  WATCHERS !== 'publishing' &&
    `| \`watch\` (baseline, same run) | ${cell('local', 'firstPeak')} | ${cell('local', 'peak')} | ${cell('local', 'anonymous')} | |`,
  WATCHERS !== 'local' &&
    `| \`watch --publish\` (publish and renewal threads included) | ${cell('publishing', 'firstPeak')} | ${cell('publishing', 'peak')} | ${cell('publishing', 'anonymous')} | ${versus('publishing')} |`,
].filter(Boolean);
const text = [
  `\`node scripts/bench-watch-memory.mjs --users ${USERS} --runs ${RUNS}${CLOCK ? ' --clock' : ''}${WATCHERS === 'both' ? '' : ` --watchers ${WATCHERS}`}${args.includes('--bin') ? ' --bin ...' : ''}\`, ${new Date().toISOString().slice(0, 10)}:`,
  '',
  `${machine()}; ${USERS.toLocaleString('en')} users on tmpfs${CLOCK ? ', tracked (`store track`)' : ''}, a fixed snapshot time, the in-memory S3 server; the peak RSS (VmHWM, reset after the first cycle's publish) of the cycle after 1% of the users changed and of its publish, median of ${RUNS}; the anonymous part of the RSS (heaps, not code) once that cycle is done.`,
  '',
  '| watcher | first cycle (and publish) peak | peak of the cycle after 1% changed | anonymous after it | against |',
  '|---|---|---|---|---|',
  ...rows,
].join('\n');
process.stdout.write(`${text}\n`);
if (REPORT !== undefined) {
  const name = CLOCK ? 'bench-watch-memory-clock' : 'bench-watch-memory';
  const title = CLOCK ? "A publishing watcher's memory on a tracked store" : "A publishing watcher's memory";
  writeSection(REPORT, name, `<!-- ${name}:start -->\n## ${title} (bench-watch-memory)\n\n${text}\n<!-- ${name}:end -->`);
}
