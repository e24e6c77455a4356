// What the benchmark scripts share: the pinned environment of every run, the seeded stores they
// measure on, and the machine line of their reports.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../bin/profile-snapshot.js', import.meta.url));

/**
 * A fixed snapshot time: between two runs minutes apart some accounts would otherwise turn a day
 * older, and "no change" would rewrite their profiles. Every scenario then changes exactly what it says.
 */
export const SNAPSHOT_EPOCH = '1767225600';

/**
 * The environment of every run: the caller's, with the settings a build reads from it pinned, so the
 * figures never depend on them (a BASE_URL, PROFILE_OUT or PROFILE_DB set for other work).
 */
export const BENCH_ENV = { ...process.env, BASE_URL: 'http://localhost:3000', SOURCE_DATE_EPOCH: SNAPSHOT_EPOCH }; // the CLI's default
for (const name of ['URL', 'PROFILE_OUT', 'PROFILE_DB']) delete BENCH_ENV[name];

/** The seeded store of `users` users in `storeDir`, seeded once and kept between runs (1M takes a while). */
export function seededStore(storeDir, users) {
  mkdirSync(storeDir, { recursive: true });
  const file = join(storeDir, `seed-${users}.db`);
  if (!existsSync(file)) {
    const r = spawnSync(process.execPath, [bin, 'seed', '--db', file, '--users', String(users)], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error('seed failed');
  }
  return file;
}

/**
 * A new work folder `work` (emptied) holding a copy of the seeded store of `users` users, which a
 * benchmark may change: returns the copy's path.
 */
export function workingStore(repo, work, users) {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const db = join(work, 'store.db');
  copyFileSync(seededStore(join(repo, '.bench/stores'), users), db);
  return db;
}

/**
 * Installs the change clock in the store `db` (`store track`, the CLI of `repo`); throws when that
 * fails, so that a benchmark never measures an untracked store as a tracked one.
 */
export function trackStore(repo, db) {
  execFileSync(process.execPath, [join(repo, 'bin/profile-snapshot.js'), 'store', 'track', '--db', db], {
    env: BENCH_ENV,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** The middle value of `values` (the upper one of the two for an even count). */
export const median = (values) => values.toSorted((a, b) => a - b)[values.length >> 1];

/**
 * Runs `run(dir)` with commit `ref` of `repo` checked out in `dir`, a temporary worktree compiled
 * with this checkout's node_modules, and removes the worktree afterwards, whatever happens.
 */
export function withBaseline(repo, ref, dir, run) {
  execFileSync('git', ['-C', repo, 'worktree', 'add', '--detach', dir, ref], { stdio: 'ignore' });
  try {
    symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'));
    execFileSync('npm', ['run', 'compile'], { cwd: dir, stdio: 'ignore' });
    return run(dir);
  } finally {
    execFileSync('git', ['-C', repo, 'worktree', 'remove', '--force', dir], { stdio: 'ignore' });
  }
}

/**
 * The table of an A/B run: per row [label, kind], the medians of `times.current[kind]` and
 * `times.baseline[kind]` (milliseconds) and their ratio.
 */
export function abTable(times, rows) {
  const seconds = (ms) => `${(ms / 1000).toFixed(3)} s`;
  return [
    '| build | current | baseline | current / baseline |',
    '|---|---|---|---|',
    ...rows.map(([label, kind]) => {
      const [current, baseline] = [median(times.current[kind]), median(times.baseline[kind])];
      return `| ${label} | ${seconds(current)} | ${seconds(baseline)} | ${(current / baseline).toFixed(2)}x |`;
    }),
  ];
}

/** e.g. "2 x AMD EPYC, 24 GiB RAM, Linux 6.1, Node v20.20.2" */
export function machine() {
  const model = cpus()[0]?.model ?? 'unknown CPU';
  return `${cpus().length} x ${model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Linux ${release()}, Node ${process.version}`;
}
