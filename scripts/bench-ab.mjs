/**
 * The current CLI against a baseline commit's, in the same run, on the same store, alternating, as
 * whole processes: a cold build into a new out dir, then per round 1% of the users' view counts
 * change and each side runs an incremental build into its own tree. Medians, and the ratios
 * current / baseline. For a change that must not cost anything (a restructure).
 *
 *   node scripts/bench-ab.mjs --baseline <git ref> [--users 100000] [--rounds 7] [--name <section>] [--report BENCHMARKS.md]
 *
 * The baseline is checked out into a temporary worktree and compiled there with this checkout's
 * node_modules.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
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
if (BASELINE === undefined) throw new Error('--baseline <git ref> is required');
const work = '/dev/shm/profile-snapshot-ab-bench';
const log = (line) => process.stdout.write(`${line}\n`);

const db = workingStore(repo, work, USERS);

const baselineDir = join(work, 'baseline');
try {
  withBaseline(repo, BASELINE, baselineDir, run);
} finally {
  rmSync(work, { recursive: true, force: true });
}

function run() {
  const sides = { current: repo, baseline: baselineDir };
  const build = (side, out) => {
    const started = performance.now();
    execFileSync(process.execPath, [join(sides[side], 'bin/profile-snapshot.js'), 'build', '--db', db, '--out', out], {
      env: BENCH_ENV,
      stdio: 'ignore',
    });
    return performance.now() - started;
  };
  log(`${NAME}: current against ${BASELINE}, ${USERS.toLocaleString('en-US')} users, ${ROUNDS} rounds; ${machine()}`);
  const times = { current: { cold: [], incremental: [] }, baseline: { cold: [], incremental: [] } };
  const store = new Database(db);
  const bump = store.prepare('UPDATE users SET views = views + 1 WHERE id % 100 = ?');
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating which side goes first, so neither always meets a warmer cache.
    const order = round % 2 === 0 ? ['current', 'baseline'] : ['baseline', 'current'];
    for (const side of order) {
      const out = join(work, `cold-${side}`);
      rmSync(out, { recursive: true, force: true });
      times[side].cold.push(build(side, out));
    }
    bump.run(round % 100);
    for (const side of order) times[side].incremental.push(build(side, join(work, `cold-${side}`)));
  }
  store.close();
  const table = abTable(times, [
    ['cold build (new out dir)', 'cold'],
    ['incremental build (1% changed)', 'incremental'],
  ]);
  for (const line of table) log(line);
  if (REPORT) {
    const section = [
      `<!-- ${NAME}:start -->`,
      `## A/B "${NAME}": this commit against ${BASELINE}`,
      '',
      `\`node scripts/bench-ab.mjs --baseline ${BASELINE} --users ${USERS} --rounds ${ROUNDS} --name ${NAME}\`: whole processes, the`,
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
