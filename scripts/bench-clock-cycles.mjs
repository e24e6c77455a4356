/**
 * What the change clock (`store track`) does to a watcher's cycles: the same seeded store, on tmpfs,
 * watched untracked and tracked, in the same run. The wall clock is the snapshot time, as in
 * production, so account ages turn between cycles. Per mode, one watcher process:
 * - its first cycle (every row read, the copy taken);
 * - ages-only cycles: nothing written to the store since the last cycle (its files settled), only
 *   ages turning;
 * - 1%-changed cycles: right after 1% of the store's users had their views bumped (one transaction);
 * then the watcher's peak RSS (VmHWM). Medians of --runs cycles each.
 *
 * Usage: node scripts/bench-clock-cycles.mjs [--users 1000000] [--shard i/n] [--runs 3] [--modes untracked,tracked]
 */
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { machine, median, seededStore, trackStore } from './bench-common.mjs';

const repo = new URL('..', import.meta.url).pathname;
const bin = join(repo, 'bin/profile-snapshot.js');
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const USERS = Number(value('--users', '1000000'));
const SHARD = value('--shard', undefined);
const RUNS = Number(value('--runs', '3'));
/** `--modes tracked`: one of the two only (a quicker look after a change). */
const MODES = value('--modes', 'untracked,tracked').split(',');
const WORK = '/dev/shm/ps-bench-clock';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Bumps the views of 1% of the users (a different 1% each round), in one transaction. */
function touch(db, round) {
  const handle = new Database(db);
  handle.prepare('UPDATE users SET views = views + 1 WHERE (id + ?) % 100 = 0').run(round);
  handle.close();
}

async function waitForCycle(statusFile, number) {
  for (;;) {
    try {
      const status = JSON.parse(readFileSync(statusFile, 'utf8'));
      if (status.lastCycle?.number >= number && status.state === 'idle') return status.lastCycle;
    } catch {
      // not written yet, or being replaced
    }
    await sleep(20);
  }
}

/** One watcher over a fresh copy of the store, tracked or not; its cycles and peak RSS. */
async function measure(seeded, tracked) {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const db = join(WORK, 'profiles.db');
  const out = join(WORK, 'dist');
  copyFileSync(seeded, db);
  if (tracked) trackStore(repo, db);
  const env = { ...process.env, BASE_URL: 'http://localhost:3000' };
  delete env.SOURCE_DATE_EPOCH;
  const shard = SHARD === undefined ? [] : ['--shard', SHARD];
  const watcher = spawn(process.execPath, [bin, 'watch', '--db', db, '--out', out, '--interval', '3600', ...shard], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  watcher.stderr.on('data', () => {});
  const statusFile = join(out, '.profile-snapshot/status.json');
  try {
    let number = 1;
    const first = await waitForCycle(statusFile, number);
    const agesOnly = [];
    const changed = [];
    for (let round = 0; round < RUNS; round++) {
      await sleep(2500); // the store's files settle: the untracked watcher's best case
      watcher.kill('SIGHUP');
      agesOnly.push(await waitForCycle(statusFile, ++number));
      touch(db, round);
      watcher.kill('SIGHUP');
      changed.push(await waitForCycle(statusFile, ++number));
    }
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${watcher.pid}/status`, 'utf8'));
    return { first, agesOnly, changed, rssMb: Number(hwm[1]) / 1024 };
  } finally {
    watcher.kill('SIGTERM');
    await new Promise((resolve) => watcher.once('exit', resolve));
    rmSync(WORK, { recursive: true, force: true });
  }
}

const seconds = (cycles) => median(cycles.map((c) => c.durationMs / 1000));
const fmt = (n, digits = 2) => n.toFixed(digits);

const seeded = seededStore(join(repo, '.bench/stores'), USERS);
console.log(`change clock, watch cycles: ${USERS.toLocaleString('en')} users${SHARD ? `, shard ${SHARD}` : ''}; ${machine()}`);
const results = {};
for (const mode of MODES) results[mode] = await measure(seeded, mode === 'tracked');
console.log('\n| mode | first cycle | ages-only cycle | rows read | 1% changed cycle | rows read | found by | peak RSS |');
console.log('|---|---|---|---|---|---|---|---|');
for (const [mode, r] of Object.entries(results)) {
  const last = r.changed.at(-1);
  console.log(
    `| ${mode} | ${fmt(r.first.durationMs / 1000)} s | ${fmt(seconds(r.agesOnly))} s | ${r.agesOnly.at(-1).rowsRead.toLocaleString('en')} | ` +
      `${fmt(seconds(r.changed))} s | ${last.rowsRead.toLocaleString('en')} | ${last.changes?.by ?? '?'} | ${fmt(r.rssMb, 0)} MB |`,
  );
}
const ratio = (key) => seconds(results.tracked[key]) / seconds(results.untracked[key]);
if (results.tracked && results.untracked)
  console.log(`\ntracked/untracked: ages-only ${fmt(ratio('agesOnly'))}x, 1% changed ${fmt(ratio('changed'))}x (medians of ${RUNS})`);
for (const [mode, r] of Object.entries(results))
  console.log(
    `${mode}: ages-only ${r.agesOnly.map((c) => fmt(c.durationMs / 1000)).join(', ')} s; 1% ${r.changed.map((c) => fmt(c.durationMs / 1000)).join(', ')} s`,
  );
