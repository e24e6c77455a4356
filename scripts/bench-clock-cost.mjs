/**
 * What the change clock (`store track`) costs the platform's own writes: the same workloads on two
 * copies of a seeded store (a million users by default), one untracked and one tracked, both in WAL
 * mode with `synchronous = NORMAL`, as a platform would run them.
 *
 *   - single-row update: 5,000 autocommit `UPDATE users SET views = views + 1 WHERE id = ?`;
 *   - profile edit: 1,000 transactions, each a user's display_name and bio, and their socials
 *     deleted and 3 new ones inserted;
 *   - bulk: 20 transactions of 1,000 views updates;
 *   - control: 5,000 autocommit updates of a private column (last_login_ip), which the clock must not
 *     record: its rows and version are printed before and after.
 *
 * Each run is a whole child process on a fresh copy of the pristine store (its WAL checkpointed and
 * removed), timed inside the child around the writes only; fixed seeds give both copies the same ids.
 * Runs alternate untracked and tracked; the tables show medians.
 *
 *   node scripts/bench-clock-cost.mjs [--users 1000000] [--runs 5] [--work /tmp/ps-clock-cost]
 */
import { execFileSync } from 'node:child_process';
import { closeSync, copyFileSync, fsyncSync, mkdirSync, openSync, rmSync, statfsSync, statSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { machine, median, seededStore, trackStore } from './bench-common.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const script = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const log = (line) => process.stderr.write(`[bench-clock-cost ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

/** mulberry32, as the seeder uses: the same seed picks the same ids on both copies. */
function mulberry32(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Each workload prepares its statements and ids (untimed) and returns the writes to time. `ops` is
 * what its per-op figure divides by.
 */
const WORKLOADS = {
  'single-row update': {
    ops: 5000,
    unit: 'txn',
    prepare: (db, pick) => {
      const update = db.prepare('UPDATE users SET views = views + 1 WHERE id = ?');
      const ids = pick(5000);
      return () => ids.forEach((id) => update.run(id));
    },
  },
  'profile edit with socials': {
    ops: 1000,
    unit: 'txn',
    prepare: (db, pick) => {
      const update = db.prepare('UPDATE users SET display_name = ?, bio = ? WHERE id = ?');
      const drop = db.prepare('DELETE FROM socials WHERE user_id = ?');
      const insert = db.prepare('INSERT INTO socials (user_id, platform, url, position) VALUES (?, ?, ?, ?)');
      const edit = db.transaction((id, k) => {
        update.run(`edited ${k}`, `A bio rewritten for the benchmark, edit ${k}.`, id);
        drop.run(id);
        ['github', 'Twitch', 'youtube'].forEach((p, i) => insert.run(id, p, `https://${p.toLowerCase()}.example/edit_${k}`, i));
      });
      const ids = pick(1000);
      return () => ids.forEach((id, k) => edit(id, k));
    },
  },
  'bulk (20 txns x 1,000 rows)': {
    ops: 20000,
    unit: 'row',
    prepare: (db, pick) => {
      const update = db.prepare('UPDATE users SET views = views + 1 WHERE id = ?');
      const batch = db.transaction((ids) => ids.forEach((id) => update.run(id)));
      const batches = Array.from({ length: 20 }, () => pick(1000));
      return () => batches.forEach((ids) => batch(ids));
    },
  },
  'control: private column (last_login_ip)': {
    ops: 5000,
    unit: 'txn',
    prepare: (db, pick) => {
      const update = db.prepare('UPDATE users SET last_login_ip = ? WHERE id = ?');
      const ids = pick(5000);
      return () => ids.forEach((id, k) => update.run(`10.9.${(k >> 8) & 255}.${k & 255}`, id));
    },
  },
};

/** The clock's recorded users and version, or undefined on an untracked store. */
function clockState(db) {
  const tracked = db.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'profile_snapshot_clock'").get();
  if (!tracked) return undefined;
  const rows = db.prepare('SELECT count(*) FROM profile_snapshot_users_changed').pluck().get();
  return { rows, version: db.prepare('SELECT max(version) FROM profile_snapshot_users_changed').pluck().get() ?? 0 };
}

/** The child: one workload on `file`, its writes timed; prints {ms, before, after} as JSON. */
function child(name, file) {
  const db = new Database(file, { fileMustExist: true });
  if (db.pragma('journal_mode', { simple: true }) !== 'wal') throw new Error(`${file} is not in WAL mode`);
  db.pragma('synchronous = NORMAL'); // per connection: the platform's writer would set it so
  const all = db.prepare('SELECT id FROM users ORDER BY id').pluck().all();
  const rand = mulberry32(Object.keys(WORKLOADS).indexOf(name) + 1);
  const pick = (n) => Array.from({ length: n }, () => all[Math.floor(rand() * all.length)]);
  const writes = WORKLOADS[name].prepare(db, pick);
  const before = clockState(db);
  const start = performance.now();
  writes();
  const ms = performance.now() - start;
  const after = clockState(db);
  db.close();
  process.stdout.write(JSON.stringify({ ms, before, after }));
}

const removeWal = (file) => ['-wal', '-shm'].forEach((s) => rmSync(`${file}${s}`, { force: true }));

/** Checkpoints and removes the WAL, so every copy starts from the main file alone. */
function settle(file) {
  const db = new Database(file);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  removeWal(file);
}

/** A copy of the seeded store switched to WAL (persisted in the file), tracked if asked. */
function pristine(seed, work, name, track) {
  const file = join(work, name);
  copyFileSync(seed, file);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.close();
  if (track) trackStore(repo, file);
  settle(file);
  return file;
}

/** One run: a fresh copy of `from`, flushed to disk so the copy's writeback is not timed, then the child. */
function runOnce(from, work, name) {
  const file = join(work, 'run.db');
  rmSync(file, { force: true });
  removeWal(file);
  copyFileSync(from, file);
  const fd = openSync(file, 'r+');
  fsyncSync(fd);
  closeSync(fd);
  const out = execFileSync(process.execPath, [script, '--child', name, file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return JSON.parse(out);
}

function bench(users, runs, work) {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const seed = seededStore(join(repo, '.bench/stores'), users);
  const stores = { untracked: pristine(seed, work, 'untracked.db', false), tracked: pristine(seed, work, 'tracked.db', true) };
  const results = Object.fromEntries(Object.keys(WORKLOADS).map((name) => [name, { untracked: [], tracked: [] }]));
  for (let run = 1; run <= runs; run++) {
    // Alternate, and swap which goes first each run, so drift (caches, thermals) falls on both.
    const order = run % 2 ? ['untracked', 'tracked'] : ['tracked', 'untracked'];
    for (const name of Object.keys(WORKLOADS)) {
      for (const kind of order) results[name][kind].push(runOnce(stores[kind], work, name));
      log(`run ${run}/${runs} ${name}: ${order.map((k) => `${k} ${results[name][k].at(-1).ms.toFixed(1)} ms`).join(', ')}`);
    }
  }
  return { seed, stores, results };
}

function report({ users, runs, work, seed, stores, results }) {
  const db = new Database(seed, { readonly: true });
  const sqlite = db.prepare('SELECT sqlite_version()').pluck().get();
  db.close();
  const mb = (file) => `${(statSync(file).size / 2 ** 20).toFixed(0)} MB`;
  const tmpfs = statfsSync(work).type === 0x01021994 ? 'tmpfs' : 'not tmpfs';
  const us = (ms, ops) => ((ms * 1000) / ops).toFixed(1);
  const rows = Object.entries(WORKLOADS).map(([name, { ops, unit }]) => {
    const [u, t] = [median(results[name].untracked.map((r) => r.ms)), median(results[name].tracked.map((r) => r.ms))];
    const clock = median(results[name].tracked.map((r) => r.after.rows));
    return `| ${name} | ${u.toFixed(1)} | ${t.toFixed(1)} | ${(t / u).toFixed(2)}x | ${us(u, ops)} | ${us(t, ops)} | ${unit} | ${clock} |`;
  });
  const control = results['control: private column (last_login_ip)'].tracked;
  const grew = control.some((r) => r.after.rows !== r.before.rows || r.after.version !== r.before.version);
  if (grew) process.exitCode = 1;
  return [
    `\`node scripts/bench-clock-cost.mjs --users ${users} --runs ${runs}\`, ${new Date().toISOString().slice(0, 10)}:`,
    '',
    `Machine: ${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores (${machine()}); SQLite ${sqlite} (better-sqlite3).`,
    `Store: ${users.toLocaleString('en')} users, ${mb(seed)} seeded (${mb(stores.tracked)} tracked), copied to ${work} (${tmpfs}) for every run; journal_mode = WAL set on the copies, synchronous = NORMAL on each writer's connection.`,
    `Each figure is the median of ${runs} runs, each a fresh child process on a fresh copy (WAL checkpointed and removed), timed around the writes only.`,
    '',
    '| workload | untracked (ms, median) | tracked (ms, median) | ratio | untracked µs/op | tracked µs/op | op | clock rows after (tracked, median) |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    `Control: \`SELECT count(*) FROM profile_snapshot_users_changed\` before→after the private-column workload, per tracked run: ${control.map((r) => `${r.before.rows}→${r.after.rows}`).join(', ')}; clock version ${control.map((r) => `${r.before.version}→${r.after.version}`).join(', ')} (${grew ? 'GREW: the clock recorded a private column' : 'unchanged, as it must be'}).`,
  ].join('\n');
}

if (args[0] === '--child') {
  child(args[1], args[2]);
} else {
  const users = Number(value('--users', '1000000'));
  const runs = Number(value('--runs', '5'));
  const work = value('--work', join(tmpdir(), 'ps-clock-cost'));
  const outcome = bench(users, runs, work);
  process.stdout.write(`${report({ users, runs, work, ...outcome })}\n`);
  rmSync(work, { recursive: true, force: true });
}
