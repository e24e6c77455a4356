/**
 * What healing costs (`build --full` checks every file it would otherwise trust), and that a plain
 * build does not pay for it: the current CLI against a baseline commit's, in the same run, on the
 * same store, alternating, as whole processes. Per round, 1% of the users' view counts change, then
 * each side runs an incremental build and a no-change build into its own tree; afterwards each runs
 * `build --full` on its intact tree (the baseline's reads every row but checks no file). Medians, and
 * the ratios current / baseline.
 *
 *   node scripts/bench-heal.mjs [--users 100000] [--rounds 7] [--baseline <git ref>] [--report BENCHMARKS.md]
 *
 * The baseline (default: the commit before the healing build) is checked out into a temporary
 * worktree and compiled there with this checkout's node_modules.
 */
import { execFileSync } from 'node:child_process';
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
const BASELINE = value('--baseline', '1849c24~1');
const REPORT = value('--report', undefined);
const work = '/dev/shm/profile-snapshot-heal-bench';
const log = (line) => process.stdout.write(`${line}\n`);

const db = workingStore(repo, work, USERS);

const baselineDir = join(work, 'baseline');
withBaseline(repo, BASELINE, baselineDir, run);

function run() {
  const sides = { current: repo, baseline: baselineDir };
  const out = (side) => join(work, `dist-${side}`);
  const build = (side, ...flags) => {
    const started = performance.now();
    execFileSync(process.execPath, [join(sides[side], 'bin/profile-snapshot.js'), 'build', '--db', db, '--out', out(side), ...flags], {
      env: BENCH_ENV,
      stdio: 'ignore',
    });
    return performance.now() - started;
  };
  log(`healing cost, ${USERS.toLocaleString('en-US')} users, ${ROUNDS} rounds, baseline ${BASELINE}; ${machine()}`);
  for (const side of Object.keys(sides)) build(side);
  const store = new Database(db);
  const userCount = store.prepare('SELECT count(*) AS n FROM users').get().n;
  const bump = store.prepare('UPDATE users SET views = views + 1 WHERE id % 100 = ?');
  const times = { current: { incremental: [], unchanged: [], full: [] }, baseline: { incremental: [], unchanged: [], full: [] } };
  for (let round = 0; round < ROUNDS; round++) {
    bump.run(round % 100);
    // Alternating which side goes first, so neither always meets a warmer cache.
    const order = round % 2 === 0 ? ['current', 'baseline'] : ['baseline', 'current'];
    for (const side of order) times[side].incremental.push(build(side));
    for (const side of order) times[side].unchanged.push(build(side));
  }
  // Apart from the rounds, so that both sides' plain builds always follow the same kind of build.
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 === 0 ? ['current', 'baseline'] : ['baseline', 'current']) times[side].full.push(build(side, '--full'));
  }
  store.close();
  const table = abTable(times, [
    ['incremental build (1% changed)', 'incremental'],
    ['no-change build', 'unchanged'],
    ['`build --full`, intact tree (the baseline reads every row, checks no file)', 'full'],
  ]);
  for (const line of table) log(line);
  log(`(${userCount.toLocaleString('en-US')} users in the store)`);
  if (REPORT) {
    const section = [
      '<!-- heal:start -->',
      '## Healing (`build --full`) and the plain build',
      '',
      `\`node scripts/bench-heal.mjs --users ${USERS} --rounds ${ROUNDS}\`: this commit against ${BASELINE} (before healing), in`,
      'the same run, alternating, whole processes, medians. A plain build checks nothing on disk, so it',
      'should cost what it did; `build --full` reads every profile once to check it.',
      '',
      `${machine()}`,
      '',
      ...table,
      '<!-- heal:end -->',
    ].join('\n');
    writeSection(REPORT, 'heal', section);
  }
}
