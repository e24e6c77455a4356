#!/usr/bin/env node
/**
 * `npm run bench`: how fast profile-snapshot is, against the physical floor, on this machine.
 *
 * For each size (10k and 100k users; add 1M with --1m) and each filesystem (tmpfs /dev/shm to measure
 * the software; disk to show the real picture) it measures, each in a new process unless said:
 *   cold build, no-change build (with and without --full), 1% changed, 10% changed, a store written
 *   moments before (a build, then a no-change build), and watch cycles (idle and 1% changed, in the
 *   long-lived watcher); seconds, user and system CPU, files written, rows rendered, peak RSS.
 * In the same run it measures the floor: a separate process (bench-floor.mjs) that writes the cold
 * build's tree, the same bytes in the same layout (a file per profile, a hard link per other alias),
 * from one blob, and does nothing else. The floor and the cold build run interleaved, each into a
 * new out dir; their medians count, and every figure is printed as a ratio to the floor. Results go
 * to stdout and BENCHMARKS.md. Then bench-publish.mjs measures `publish` against rclone (skip it
 * with --no-publish), and bench-serve.mjs measures `serve` against nginx on the 100k tree (skip it
 * with --no-serve).
 *
 * Usage: npm run bench [-- --1m] [-- --1m-disk] [-- --sizes 10000,100000] [-- --disk-dir <dir>] [-- --no-disk]
 *        [-- --shard i/n] [-- --watch-only] [-- --no-publish] [-- --no-serve] [-- --repeats <n>]
 *        [-- --tmpfs-dir <dir>] [-- --store-dir <dir>] [-- --report <file>] [-- --clock]
 * (--repeats: runs of the cold build and of the floor, 5 by default; their medians count. The last
 * three let a test run it small, away from the real stores and BENCHMARKS.md.)
 */
import Database from 'better-sqlite3';
import { spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BENCH_ENV, machine as machineLine, seededStore, trackStore } from './bench-common.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const bin = join(repo, 'bin/profile-snapshot.js');
const child = join(repo, 'scripts/bench-child.mjs');
const floorScript = join(repo, 'scripts/bench-floor.mjs');
const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);

const sizes = value('--sizes', flag('--1m') ? '10000,100000,1000000' : '10000,100000')
  .split(',')
  .map(Number);
const storeDir = value('--store-dir', join(repo, '.bench/stores'));
/** `--watch-only`: after the cold build, only the watcher's cycles (a large store's other builds take long). */
const WATCH_ONLY = flag('--watch-only');
/** `--shard i/n`: every build and watcher works on that shard of the store (one machine's load of n). */
const shardArgs = value('--shard', undefined) === undefined ? [] : ['--shard', value('--shard')];
/** `--clock`: the store copy gets the change clock (`store track`) before anything is measured. */
const CLOCK = flag('--clock');
const targets = [{ name: 'tmpfs', root: value('--tmpfs-dir', '/dev/shm/profile-snapshot-bench') }];
if (!flag('--no-disk')) targets.push({ name: 'disk', root: value('--disk-dir', join(repo, '.bench/disk')) });
if (!existsSync(dirname(targets[0].root))) targets.shift();

const fmt = (n, digits = 2) => n.toFixed(digits);
const log = (line) => process.stdout.write(`${line}\n`);
const ENV = BENCH_ENV;
const store = (users) => seededStore(storeDir, users);

/** The figures a child prints on stderr after "BENCH " (bench-child.mjs, bench-floor.mjs). */
function usageOf(stderr) {
  const bench = JSON.parse(stderr.split('\nBENCH ').at(-1));
  return { rssMb: bench.maxRssKb / 1024, userS: bench.userMs / 1000, systemS: bench.systemMs / 1000 };
}

/** Runs `script` in a new process; returns its wall seconds (start-up included), stdout and usage. */
function timed(script, scriptArgs, what) {
  const started = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [script, ...scriptArgs], { encoding: 'utf8', maxBuffer: 1 << 26, env: ENV });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (r.status !== 0) throw new Error(`${what} ${scriptArgs.join(' ')} failed: ${r.stderr}`);
  return { seconds, stdout: r.stdout, ...usageOf(r.stderr) };
}

/** Runs the CLI in a new process: seconds, CPU, its JSON report and peak RSS. */
function cli(cliArgs) {
  const { stdout, ...run } = timed(child, [...cliArgs, ...shardArgs], 'profile-snapshot');
  return { ...run, report: JSON.parse(stdout) };
}

/** The floor process (bench-floor.mjs) writing `layout` into `out`, a new folder. */
const floor = (layout, out, ...mode) => timed(floorScript, [layout, out, ...mode], 'the floor');

/** Every published file of a tree (not the tool's dot folder), with its stats. */
function publishedFiles(tree) {
  const entries = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (dir === tree && e.name === '.profile-snapshot') continue; // the build's records, not served
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else entries.push({ path, ...statSync(path) });
    }
  };
  walk(tree);
  return entries;
}

/** Files, bytes and distinct inodes (files less hard links) of published files: a tree's shape. */
function shapeOf(entries) {
  return `${entries.length} files, ${entries.reduce((n, e) => n + e.size, 0)} bytes, ${new Set(entries.map((e) => e.ino)).size} inodes`;
}

/**
 * The layout of a built tree for the floor: every distinct published file's bytes in one blob, and
 * an index that writes each once and then hard-links its other paths, as the build does (files
 * sharing an inode are one profile under its aliases). Returns the tree's file count, bytes and shape.
 */
function writeLayout(tree, layout) {
  const entries = publishedFiles(tree);
  const byInode = new Map();
  for (const entry of entries) byInode.set(entry.ino, [...(byInode.get(entry.ino) ?? []), relative(tree, entry.path)]);
  const blob = openSync(`${layout}.blob`, 'w');
  const index = [];
  try {
    for (const [first, ...links] of byInode.values()) {
      const bytes = readFileSync(join(tree, first));
      writeSync(blob, bytes);
      index.push(`w ${bytes.length} ${first}`, ...links.map((path) => `l ${path} ${first}`));
    }
  } finally {
    closeSync(blob);
  }
  writeFileSync(`${layout}.index`, `${index.join('\n')}\n`);
  return { fileCount: entries.length, bytes: entries.reduce((n, e) => n + e.size, 0), shape: shapeOf(entries) };
}

/**
 * A build trusts the store's stamp (and so may skip an unchanged store next time) only when the
 * store's files were last written at least 2 s earlier (src/store/stamp.ts, racy-git's rule). A real
 * store between two CI builds is older than that; the bench writes it moments before building, so
 * after each write it lets the store settle for as long: `settledSince` waits until the store written
 * at `writtenAt` (Date.now()) has settled, however long has passed since.
 */
const settledSince = (writtenAt) => new Promise((r) => setTimeout(r, Math.max(0, writtenAt + 2100 - Date.now())));
const settle = () => settledSince(Date.now());

/**
 * Changes `share` of the users' view counts (a write like the platform's own), then lets it settle,
 * unless `settled` is false (a store written moments before the next build). Returns when it wrote.
 */
async function touch(db, share, round, { settled = true } = {}) {
  const handle = new Database(db);
  const step = Math.round(1 / share);
  handle.prepare(`UPDATE users SET views = views + ? WHERE (id + ?) % ? = 0`).run(round, round, step);
  handle.close();
  const writtenAt = Date.now();
  if (settled) await settle();
  return writtenAt;
}

function waitFor(predicate, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const poll = () => {
      const v = predicate();
      if (v) return resolve(v);
      if (Date.now() > deadline) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(poll, 20);
    };
    poll();
  });
}

/**
 * Runs `use` against a watcher of `out` (its arguments after --out, its environment), which is stopped
 * afterwards; `use` reads cycles from the watcher's status file.
 */
async function withWatcher(db, out, args, env, use) {
  const statusFile = join(out, '.profile-snapshot/status.json');
  const status = () => {
    try {
      return JSON.parse(readFileSync(statusFile, 'utf8'));
    } catch {
      return undefined;
    }
  };
  const watcher = spawn(process.execPath, [bin, 'watch', '--db', db, '--out', out, ...args, ...shardArgs], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env,
  });
  let stderr = '';
  watcher.stderr.on('data', (d) => {
    stderr += d;
  });
  try {
    return await use(watcher, status);
  } catch (error) {
    throw new Error(`${error.message}\n${stderr}`, { cause: error });
  } finally {
    watcher.kill('SIGTERM');
    await new Promise((r) => watcher.once('exit', r));
  }
}

/** Watch cycles in a long-lived watcher: the idle cycle and the 1%-changed cycle (status durations). */
function watchCycles(db, out) {
  return withWatcher(db, out, ['--interval', '3600'], ENV, async (watcher, status) => {
    const cycle = async (n) =>
      await waitFor(
        () => {
          const s = status();
          return s?.lastCycle?.number >= n && s.state === 'idle' ? s.lastCycle : undefined;
        },
        600_000,
        `watch cycle ${n}`,
      );
    await cycle(1); // warm-up: the first cycle after start
    watcher.kill('SIGHUP');
    const idle = await cycle(2);
    await touch(db, 0.01, 7);
    watcher.kill('SIGHUP');
    const changed = await cycle(3);
    // The watcher's peak resident set over its life (its first cycle read every row and copied the store).
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${watcher.pid}/status`, 'utf8'));
    return { idle, changed, rssMb: hwm ? Number(hwm[1]) / 1024 : undefined };
  });
}

/**
 * A quiet cycle as production sees it: the wall clock as snapshot time, the store untouched. Account
 * ages turn over all day (about one a second at 100k users), so such a cycle is rarely "no change":
 * it reads the users whose age turned and rewrites them and the list. The watcher's first cycle builds
 * the tree (from an empty out dir); the slowest of the third to fifth is reported.
 */
function wallClockCycle(db, out) {
  const env = { ...ENV };
  delete env.SOURCE_DATE_EPOCH;
  // From an empty out dir: moving a tree built at the bench's snapshot time to today would rewrite
  // every file beside the old ones, past tmpfs's inode limit at a million users.
  rmSync(out, { recursive: true, force: true });
  return withWatcher(db, out, ['--interval', '1'], env, async (_watcher, status) => {
    // The slowest of cycles 3 to 5: some find no age turned yet and take the unchanged-store shortcut.
    const seen = [];
    await waitFor(
      () => {
        const s = status();
        if (s?.lastCycle?.number >= 3 && !seen.some((c) => c.number === s.lastCycle.number)) seen.push(s.lastCycle);
        return seen.length >= 3 ? true : undefined;
      },
      900_000,
      'wall-clock watch cycles 3 to 5',
    );
    return seen.reduce((a, b) => (b.durationMs > a.durationMs ? b : a));
  });
}

/** Runs of the cold build and of the floor per size: their medians are the figures. */
const REPEATS = Number(value('--repeats', '5'));
if (!Number.isInteger(REPEATS) || REPEATS < 1)
  throw new Error(`--repeats must be a whole number of runs, 1 or more; got ${value('--repeats')}`);
/** The middle one of `items` by `key` (the upper middle of an even count). */
const medianBy = (items, key) => items.toSorted((a, b) => key(a) - key(b))[items.length >> 1];
/** Each size's separate runs, for the report. */
const runs = [];
const rows = [];
/** One figure: `run` has seconds, and may have user and system CPU seconds, peak RSS, and a build report. */
const row = (users, fs, scenario, floorSeconds, run) => {
  const written = run.written ?? run.report?.files.written;
  const rendered = run.rendered ?? run.report?.rendered;
  const { seconds, userS, systemS, rssMb } = run;
  const storeUnchanged = run.report?.storeUnchanged;
  rows.push({
    users,
    fs,
    scenario,
    seconds,
    userS,
    systemS,
    ratio: floorSeconds ? seconds / floorSeconds : undefined,
    written,
    rssMb,
    rendered,
    storeUnchanged,
  });
  const cpu = userS === undefined ? '' : `cpu ${fmt(userS)} user ${fmt(systemS)} sys`;
  log(
    `${String(users).padStart(8)} ${fs.padEnd(5)} ${scenario.padEnd(36)} ${fmt(seconds, 3).padStart(7)} s  ${floorSeconds ? `${fmt(seconds / floorSeconds)}x floor` : '         '}  ${cpu.padEnd(25)} ${String(written ?? '').padStart(9)} written  ${String(rendered ?? '').padStart(8)} rendered  ${rssMb ? `${fmt(rssMb, 0)} MB RSS` : ''}`,
  );
};
const cycle = (c) => ({ seconds: c.durationMs / 1000, written: c.files?.written, rendered: c.rendered });

/**
 * The cold build and the floor, interleaved, `REPEATS` times, each into a new out dir that nothing
 * else touches while it runs: each figure is the median of its runs, so one noisy minute on a shared
 * machine moves neither. Each tree goes once measured: tmpfs counts every file against its inode limit.
 * Returns the runs, and the tree's size.
 */
function coldAndFloor(db, root) {
  const layout = join(root, 'layout');
  const colds = [],
    floors = [];
  let tree;
  for (let i = 0; i < REPEATS; i++) {
    const coldOut = join(root, `cold-${i}`);
    colds.push(cli(['build', '--db', db, '--out', coldOut, '--json']));
    const first = tree === undefined;
    tree ??= writeLayout(coldOut, layout);
    rmSync(coldOut, { recursive: true, force: true });
    const floorOut = join(root, `floor-${i}`);
    floors.push(floor(layout, floorOut));
    // The floor must have written the build's tree: as many files, bytes and hard links.
    const floorShape = first ? shapeOf(publishedFiles(floorOut)) : tree.shape;
    if (floorShape !== tree.shape) throw new Error(`the floor wrote ${floorShape}; the build ${tree.shape}`);
    rmSync(floorOut, { recursive: true, force: true });
  }
  const asyncOut = join(root, 'floor-async');
  const asyncFloor = floor(layout, asyncOut, '--async');
  rmSync(asyncOut, { recursive: true, force: true });
  for (const file of [`${layout}.blob`, `${layout}.index`]) rmSync(file, { force: true });
  return { colds, floors, asyncFloor, ...tree };
}

const machine = machineLine();
log(`profile-snapshot benchmark: ${machine}`);
for (const users of sizes) {
  const seeded = store(users);
  // A million on disk takes many minutes per scenario: only with --1m-disk (tmpfs measures the software).
  for (const target of targets.filter((t) => t.name !== 'disk' || users < 1_000_000 || flag('--1m-disk'))) {
    rmSync(target.root, { recursive: true, force: true });
    mkdirSync(target.root, { recursive: true });
    const db = join(target.root, 'profiles.db');
    copyFileSync(seeded, db);
    if (CLOCK) trackStore(repo, db);
    await settle();
    const out = join(target.root, 'dist');
    const measured = coldAndFloor(db, target.root);
    const floorRun = medianBy(measured.floors, (f) => f.seconds);
    const floorSeconds = floorRun.seconds;
    // The median run's time and CPU, and the highest peak RSS of all of them (the memory target is a maximum).
    const cold = { ...medianBy(measured.colds, (c) => c.seconds), rssMb: Math.max(...measured.colds.map((c) => c.rssMb)) };
    const eachRun = `floor ${measured.floors.map((f) => fmt(f.seconds)).join(', ')} s; cold build ${measured.colds.map((c) => fmt(c.seconds)).join(', ')} s`;
    if (REPEATS > 1) runs.push(`${users.toLocaleString('en-US')} users, ${target.name}: ${eachRun}`);
    log(
      `${String(users).padStart(8)} ${target.name.padEnd(5)} floor: ${measured.fileCount} files, ${fmt(measured.bytes / 2 ** 20, 0)} MiB${REPEATS > 1 ? `; medians of ${REPEATS} runs: ${eachRun}` : ''}`,
    );
    row(users, target.name, 'floor', floorSeconds, { ...floorRun, written: measured.fileCount, rssMb: undefined });
    row(users, target.name, 'floor, async writes', floorSeconds, { ...measured.asyncFloor, written: measured.fileCount, rssMb: undefined });
    row(users, target.name, 'cold build', floorSeconds, cold);
    if (!WATCH_ONLY) {
      cli(['build', '--db', db, '--out', out, '--json']);
      row(users, target.name, 'no-change build', floorSeconds, cli(['build', '--db', db, '--out', out, '--json']));
      // The same, reading every row (as when the store's stamp cannot be trusted): rows are kept unrendered.
      row(users, target.name, 'no-change build, --full', floorSeconds, cli(['build', '--db', db, '--out', out, '--json', '--full']));
      // A target of its own (issue 18): the median of REPEATS builds, each after a different 1% changed.
      const changedRuns = [];
      for (let i = 0; i < REPEATS; i++) {
        await touch(db, 0.01, 1 + i * 10);
        changedRuns.push(cli(['build', '--db', db, '--out', out, '--json']));
      }
      if (REPEATS > 1)
        runs.push(
          `${users.toLocaleString('en-US')} users, ${target.name}, 1% changed build: ${changedRuns.map((r) => fmt(r.seconds)).join(', ')} s`,
        );
      row(
        users,
        target.name,
        '1% changed build',
        floorSeconds,
        medianBy(changedRuns, (r) => r.seconds),
      );
      await touch(db, 0.1, 2);
      row(users, target.name, '10% changed build', floorSeconds, cli(['build', '--db', db, '--out', out, '--json']));
      // A store written moments before a build, then built again with no write in between: the second
      // build may skip the store once its files have settled (src/store/stamp.ts). It waits for that if
      // the first build took less time: before, reading the store again is the right answer.
      const writtenAt = await touch(db, 0.01, 3, { settled: false });
      row(users, target.name, '1% changed build, store just written', floorSeconds, cli(['build', '--db', db, '--out', out, '--json']));
      await settledSince(writtenAt);
      row(users, target.name, 'no-change build after that', floorSeconds, cli(['build', '--db', db, '--out', out, '--json']));
    }
    await settle();
    const watch = await watchCycles(db, out);
    const quiet = await wallClockCycle(db, out);
    row(users, target.name, 'watch cycle, idle', floorSeconds, cycle(watch.idle));
    row(users, target.name, 'watch cycle, 1% changed', floorSeconds, { ...cycle(watch.changed), rssMb: watch.rssMb });
    row(users, target.name, 'watch cycle, quiet, wall clock', floorSeconds, cycle(quiet));
    rmSync(target.root, { recursive: true, force: true });
  }
}

/** The targets of issues 5, 14, 18 and 30, checked against this run's figures. */
const find = (users, fs, scenario) => rows.find((r) => r.users === users && r.fs === fs && r.scenario === scenario);
const goals = [];
const target = (what, goal, figure, ok) => goals.push({ what, goal, figure, ok });
const at = (users) => {
  const cold = find(users, 'tmpfs', 'cold build');
  if (!cold) return;
  const label = users.toLocaleString('en-US');
  if (users === 100_000) {
    target(`cold build, ${label}, tmpfs`, 'at most 0.85x the floor', `${fmt(cold.ratio)}x (${fmt(cold.seconds)} s)`, cold.ratio <= 0.85);
    const changed = find(users, 'tmpfs', '1% changed build');
    target(
      `1% changed build, ${label}, tmpfs`,
      'at most 1.5 s',
      `${fmt(changed.seconds)} s, ${changed.written} files`,
      changed.seconds <= 1.5,
    );
    const same = find(users, 'tmpfs', 'no-change build');
    target(
      `no-change build, ${label}, new process`,
      'at most 1.0 s, zero files rewritten',
      `${fmt(same.seconds)} s, ${same.written} rewritten`,
      same.seconds <= 1 && same.written === 0,
    );
    const afterWrite = find(users, 'tmpfs', 'no-change build after that');
    target(
      `no-change build, ${label}, after a build of a store just written`,
      'at most 1.0 s, the store not read',
      `${fmt(afterWrite.seconds)} s, ${afterWrite.storeUnchanged ? 'not read' : 'read'}`,
      afterWrite.seconds <= 1 && afterWrite.storeUnchanged,
    );
    const idle = find(users, 'tmpfs', 'watch cycle, idle');
    target(`watch cycle, nothing changed, ${label}`, 'at most 0.5 s', `${fmt(idle.seconds)} s`, idle.seconds <= 0.5);
    // The same with the wall clock, as in production: only account ages move.
    const quiet = find(users, 'tmpfs', 'watch cycle, quiet, wall clock');
    target(
      `watch cycle, nothing changed, ${label}, wall clock`,
      'at most 0.5 s',
      `${fmt(quiet.seconds)} s, ${quiet.written} files (ages turned)`,
      quiet.seconds <= 0.5,
    );
    const one = find(users, 'tmpfs', 'watch cycle, 1% changed');
    target(`watch cycle, 1% changed, ${label}`, 'at most 0.8 s', `${fmt(one.seconds)} s, ${one.written} files`, one.seconds <= 0.8);
  }
  if (users === 1_000_000) {
    target(`cold build, ${label}, tmpfs`, 'at most 1.0x the floor', `${fmt(cold.ratio)}x (${fmt(cold.seconds)} s)`, cold.ratio <= 1.0);
    // Issue 30: the cycles with the creators list's gzip variant included.
    const quiet = find(users, 'tmpfs', 'watch cycle, quiet, wall clock');
    target(`watch cycle, nothing changed, ${label}, wall clock`, 'at most 1.5 s', `${fmt(quiet.seconds)} s`, quiet.seconds <= 1.5);
    const one = find(users, 'tmpfs', 'watch cycle, 1% changed');
    target(`watch cycle, 1% changed, ${label}`, 'at most 5 s', `${fmt(one.seconds)} s, ${one.written} files`, one.seconds <= 5);
    target(`peak RSS of the watcher, ${label}`, 'at most 400 MB', `${fmt(one.rssMb, 0)} MB`, one.rssMb <= 400);
  }
  // Every build of the size counts (cold, no-change, --full, 1% and 10% changed), as at 100k.
  const builds = rows.filter((r) => r.users === users && r.rssMb && !r.scenario.startsWith('watch'));
  const peak = builds.reduce((a, b) => (b.rssMb > a.rssMb ? b : a), builds[0]);
  const limit = users === 100_000 ? 150 : users === 1_000_000 ? 400 : undefined;
  if (peak && limit)
    target(
      `peak RSS of build, ${label}`,
      `at most ${limit} MB`,
      `${fmt(peak.rssMb, 0)} MB (${peak.fs}, ${peak.scenario})`,
      peak.rssMb <= limit,
    );
};
for (const users of sizes) at(users);
for (const t of goals) log(`target ${t.ok ? 'MET   ' : 'MISSED'} ${t.what}: ${t.goal}; measured ${t.figure}`);

const cpuCell = (seconds) => (seconds === undefined ? '' : fmt(seconds));
const table = rows
  .map(
    (r) =>
      `| ${r.users.toLocaleString('en-US')} | ${r.fs} | ${r.scenario} | ${fmt(r.seconds, r.seconds < 0.1 ? 3 : 2)} | ${r.ratio === undefined ? '' : `${fmt(r.ratio)}x`} | ${cpuCell(r.userS)} | ${cpuCell(r.systemS)} | ${r.written ?? ''} | ${r.rendered ?? ''} | ${r.rssMb ? fmt(r.rssMb, 0) : ''} |`,
  )
  .join('\n');
// Other scripts' figures (serve, publish, load, gzip, ...) live in marked sections after this
// script's own part: everything from the first marker on is kept as it is, whatever its sections.
const benchmarksFile = value('--report', join(repo, 'BENCHMARKS.md'));
const previous = existsSync(benchmarksFile) ? readFileSync(benchmarksFile, 'utf8') : '';
const firstMarker = previous.search(/^<!-- /m);
const otherSections = firstMarker === -1 ? '' : previous.slice(firstMarker).replace(/\n*$/, '');
writeFileSync(
  benchmarksFile,
  `# Benchmarks

Written by \`npm run bench\` (scripts/bench.mjs) on ${new Date().toISOString().slice(0, 10)}.

Machine: ${machine}.

Each build runs in a new process: its seconds are wall time, start-up included, and its user and
system CPU seconds are the whole process's. Watch cycles are measured inside one long-lived watcher
(the status file's cycle duration; no CPU figures). "floor" is a separate process (bench-floor.mjs)
that writes the cold build's tree, the same bytes in the same layout (a file per profile, a hard link
for its other alias, the creators list, the error documents and the contract), from one blob read
into memory, and does nothing else: what writing that tree costs on this machine, counted the same
way as a build. The floor and the cold build run one after the other, each into a new out dir, and
each figure is the median of its runs (listed below); every ratio is to the floor's median. "floor,
async writes" is the same process writing through libuv's thread pool (fs.promises, 64 in flight),
one run, to check whether the build should write asynchronously (it writes synchronously).

Change scenarios update view counts of 1% / 10% of all users (so a share of them are unpublished
users). Every run uses the same snapshot time (SOURCE_DATE_EPOCH), so "no change" means no change.
A store that is unchanged since the last pass is not read at all (the no-change build and the idle
watch cycle), once its files are at least 2 s old (racy-git's rule, src/store/stamp.ts): after most
writes the bench waits that long. "1% changed build, store just written" builds right after a write,
and "no-change build after that" once the store's files are 2 s old (right after it, when it took
longer): the pass recorded the store's stamp, which has settled by then, so the store is not read.
"no-change build, --full" reads every row anyway: each is kept unrendered (its row signature is
unchanged), which is the cost of a rebuild when the stamp cannot vouch for the store. A watch cycle
reads only the users whose rows changed since the last cycle (SQLite compares the store with the
watcher's copy of the last snapshot); the watcher's peak RSS, shown on its 1% row, covers its whole
life, first cycle (which reads every row) included.
"watch cycle, quiet, wall clock" is a cycle of a watcher using the wall clock, as in production, on
an untouched store: account ages turn over all day, so it reads and rewrites the users whose age
turned (and the list), and it does not compare the store (its stamp has not moved); the slowest of
three such cycles is shown. "rows rendered" counts the rows that were rendered.

| users | filesystem | scenario | seconds | ratio to floor | user CPU (s) | system CPU (s) | files written | rows rendered | peak RSS (MB) |
|---|---|---|---|---|---|---|---|---|---|
${table}

${
  runs.length > 0
    ? `The floor and the cold build are each the median of ${REPEATS} runs, interleaved (the cold build's
peak RSS is the highest of them). Runs:
${runs.map((r) => `- ${r}`).join('\n')}

`
    : ''
}Targets (issues 5, 14, 18 and 30: 2-core machine, tmpfs, checked against the figures above):

| target | goal | measured | |
|---|---|---|---|
${goals.map((t) => `| ${t.what} | ${t.goal} | ${t.figure} | ${t.ok ? 'met' : '**missed**'} |`).join('\n')}

Reproduce: \`npm run build && npm run bench\` (add \`-- --1m\` for a million users; stores are cached
in .bench/stores).
${otherSections ? `\n${otherSections}\n` : ''}`,
);
log(`wrote ${relative(process.cwd(), benchmarksFile) || benchmarksFile}`);

// The origin server against nginx, on the 100k tree (its own script, importable).
if (!flag('--no-serve')) {
  const { benchServe } = await import('./bench-serve.mjs');
  const figures = await benchServe({ storeDir, report: benchmarksFile, command: 'npm run bench' });
  if (figures.failures > 0) process.exitCode = 1;
}

// Publishing to object storage, at the largest size up to 100k, against rclone (its own script).
if (!flag('--no-publish')) {
  const users = Math.min(100_000, Math.max(...sizes));
  const published = spawnSync(
    process.execPath,
    [join(repo, 'scripts/bench-publish.mjs'), '--users', String(users), '--store-dir', storeDir, '--report', benchmarksFile],
    { stdio: 'inherit' },
  );
  if (published.status !== 0) process.exitCode = 1;
}
