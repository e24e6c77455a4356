#!/usr/bin/env node
/**
 * The current CLI on the Node it runs under against a baseline commit's CLI on the baseline's own
 * Node (and that commit's own node_modules, native modules built for that Node), in the same run, as
 * whole processes, alternating which side goes first; medians, and the ratios current / baseline.
 * For a change of runtime (a Node major, a native module's new major) rather than of code:
 *
 *   - a cold `build` of the seeded store into a new out dir, every round: the wall time of the whole
 *     process, and its peak RSS (GNU time's %M, when /usr/bin/time is there);
 *   - with --serve: each side's own scripts/bench-serve.mjs under its own Node, `--serve-runs` times
 *     each, alternating. Each run measures serve against nginx on the same machine in the same run,
 *     so serve's ratio to nginx is the figure that compares across runs; serve's p99 is taken as is;
 *   - with --suite: the wall time of `npx vitest run` in each checkout, once each, current first
 *     (long; a failing test is reported, not fatal).
 *
 *   node scripts/bench-runtime.mjs --baseline <git ref> --baseline-node <path to node> [--users 100000] [--rounds 5]
 *        [--serve] [--serve-runs 2] [--serve-args "--users 20000 --rounds 3 --seconds 5"] [--suite]
 *        [--name runtime] [--report BENCHMARKS.md]
 *
 * Run it with the Node to measure (e.g. .runtimes/node-26.12.1/bin/node): the current side is this
 * checkout, compiled, under process.execPath. The baseline is checked out into a temporary worktree
 * (on /dev/shm when there is one), gets its own `npm ci` and `npm run compile` under the baseline
 * Node, and is removed at the end, whatever happens. Both sides build the same seeded store, made
 * by this checkout's `seed`; each side's bench-serve builds its own tree with its own CLI.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { BENCH_ENV, machine, median, seededStore, workingStore } from './bench-common.mjs';
import { writeSection } from './report-section.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const USERS = Number(value('--users', '100000'));
const ROUNDS = Number(value('--rounds', '5'));
const BASELINE = value('--baseline', undefined);
const BASELINE_NODE = value('--baseline-node', undefined);
const SERVE = args.includes('--serve');
const SERVE_RUNS = Number(value('--serve-runs', '2'));
const SERVE_ARGS = value('--serve-args', '').split(/\s+/).filter(Boolean);
const SUITE = args.includes('--suite');
const NAME = value('--name', 'runtime');
const REPORT = value('--report', undefined);
if (BASELINE === undefined || BASELINE_NODE === undefined) {
  throw new Error('usage: node scripts/bench-runtime.mjs --baseline <git ref> --baseline-node <path to node> [...]');
}
if (!existsSync(BASELINE_NODE)) throw new Error(`--baseline-node ${BASELINE_NODE}: no such file`);
const log = (line) => process.stdout.write(`${line}\n`);

const commit = git('rev-parse', '--verify', '--short', `${BASELINE}^{commit}`);
// tmpfs when there is one: the baseline's node_modules and both sides' trees then cost no disk I/O.
const work = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'profile-snapshot-runtime-'));
const baselineDir = join(work, 'baseline');
const sides = {
  current: { dir: repo, node: process.execPath },
  baseline: { dir: baselineDir, node: BASELINE_NODE },
};
/** Child processes still running, stopped on an interrupt before the worktree goes. */
const running = new Set();

let cleanedUp = false;
function cleanUp() {
  if (cleanedUp) return;
  cleanedUp = true;
  for (const child of running) child.kill('SIGTERM');
  spawnSync('git', ['-C', repo, 'worktree', 'remove', '--force', baselineDir], { stdio: 'ignore' });
  rmSync(work, { recursive: true, force: true });
  // A worktree whose checkout never finished is gone from disk but still registered.
  spawnSync('git', ['-C', repo, 'worktree', 'prune'], { stdio: 'ignore' });
}
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    cleanUp();
    process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
  });
}

try {
  await main();
} finally {
  cleanUp();
}

async function main() {
  for (const [name, side] of Object.entries(sides)) side.env = sideEnv(name, side.node);
  await prepareBaseline();
  for (const side of Object.values(sides)) {
    side.version = spawnSync(side.node, ['-v'], { encoding: 'utf8' }).stdout.trim();
    side.sqlite = JSON.parse(readFileSync(join(side.dir, 'node_modules/better-sqlite3/package.json'), 'utf8')).version;
  }
  const versions = `current: Node ${sides.current.version}, better-sqlite3 ${sides.current.sqlite}; baseline ${commit}: Node ${sides.baseline.version}, better-sqlite3 ${sides.baseline.sqlite}`;
  log(`${NAME}: current against ${BASELINE}${BASELINE === commit ? '' : ` (${commit})`}; ${machine()}; ${versions}`);

  const rows = [];
  rows.push(...(await buildRows()));
  if (SERVE) rows.push(...(await serveRows()));
  if (SUITE) rows.push(...(await suiteRows()));

  const table = [
    `| measure | current (Node ${sides.current.version}) | baseline ${commit} (Node ${sides.baseline.version}) | current / baseline |`,
    '|---|---|---|---|',
    ...rows.map(
      ([label, current, baseline, show]) => `| ${label} | ${show(current)} | ${show(baseline)} | ${(current / baseline).toFixed(2)}x |`,
    ),
  ];
  log('');
  for (const line of table) log(line);
  if (REPORT) {
    const flags = [
      `--baseline ${BASELINE} --baseline-node ${BASELINE_NODE} --users ${USERS} --rounds ${ROUNDS}`,
      SERVE ? ` --serve --serve-runs ${SERVE_RUNS} --serve-args "${SERVE_ARGS.join(' ')}"` : '',
      SUITE ? ' --suite' : '',
      ` --name ${NAME}`,
    ].join('');
    const section = [
      `<!-- ${NAME}:start -->`,
      `## Runtime "${NAME}": this commit on Node ${sides.current.version} against ${BASELINE} on Node ${sides.baseline.version}`,
      '',
      `\`${process.execPath.startsWith(repo) ? process.execPath.slice(repo.length) : 'node'} scripts/bench-runtime.mjs ${flags}\`: whole processes, the`,
      'same store, alternating, medians; each side with its own node_modules, installed and compiled under its own Node.',
      SERVE
        ? "serve's req/s is its ratio to nginx's in the same bench-serve run (nginx is the yardstick that cancels the machine's drift)."
        : '',
      '',
      `${machine()}; ${versions}`,
      '',
      ...table,
      `<!-- ${NAME}:end -->`,
    ]
      .filter((line, i, lines) => line !== '' || lines[i - 1] !== '')
      .join('\n');
    writeSection(REPORT, NAME, section);
    log(`${NAME}: figures written to ${REPORT}`);
  }
}

/** The rows of the cold builds: wall time, and peak RSS when GNU time can tell it. */
async function buildRows() {
  const db = workingStore(repo, join(work, 'store'), USERS);
  const gnuTime =
    existsSync('/usr/bin/time') && spawnSync('/usr/bin/time', ['-f', '%M', '-o', '/dev/null', 'true'], { stdio: 'ignore' }).status === 0;
  if (!gnuTime) log(`${NAME}: no GNU /usr/bin/time, so no peak RSS`);
  const figures = { current: { ms: [], rssKb: [] }, baseline: { ms: [], rssKb: [] } };
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating which side goes first, so neither always meets a warmer cache.
    for (const name of round % 2 === 0 ? ['current', 'baseline'] : ['baseline', 'current']) {
      const side = sides[name];
      const out = join(work, `out-${name}`);
      rmSync(out, { recursive: true, force: true });
      const rssFile = join(work, 'rss');
      const command = [side.node, join(side.dir, 'bin/profile-snapshot.js'), 'build', '--db', db, '--out', out];
      const started = performance.now();
      await run(gnuTime ? '/usr/bin/time' : command[0], gnuTime ? ['-f', '%M', '-o', rssFile, ...command] : command.slice(1), {
        cwd: side.dir,
        env: side.env,
      });
      const ms = performance.now() - started;
      figures[name].ms.push(ms);
      // GNU time's last line is %M (a child killed by a signal would have a line of its own before it).
      const rssKb = gnuTime ? Number(readFileSync(rssFile, 'utf8').trim().split('\n').at(-1)) : undefined;
      if (gnuTime) figures[name].rssKb.push(rssKb);
      log(
        `  round ${round + 1} ${name.padEnd(8)} cold build ${(ms / 1000).toFixed(3)} s${gnuTime ? `, peak RSS ${(rssKb / 1024).toFixed(0)} MiB` : ''}`,
      );
    }
    rmSync(join(work, 'out-current'), { recursive: true, force: true });
    rmSync(join(work, 'out-baseline'), { recursive: true, force: true });
  }
  const users = USERS.toLocaleString('en-US');
  const rows = [
    [`cold build, ${users} users (wall, median of ${ROUNDS})`, ...medians(figures, 'ms'), (ms) => `${(ms / 1000).toFixed(3)} s`],
  ];
  if (gnuTime)
    rows.push([`cold build peak RSS (median of ${ROUNDS})`, ...medians(figures, 'rssKb'), (kb) => `${(kb / 1024).toFixed(0)} MiB`]);
  return rows;
}

/**
 * The rows of bench-serve: each side's own script under its own Node, on the same seeded store (this
 * checkout's), each with its own work dir (its tree built by its own CLI), never writing a report.
 */
async function serveRows() {
  const serveUsers = Number(SERVE_ARGS.includes('--users') ? SERVE_ARGS[SERVE_ARGS.indexOf('--users') + 1] : '100000'); // bench-serve's default
  const storeDir = SERVE_ARGS.includes('--store-dir') ? [] : ['--store-dir', join(repo, '.bench/stores')];
  // Seeded here, by this checkout's `seed`, so the baseline's bench-serve never seeds one of its own.
  if (storeDir.length > 0) seededStore(storeDir[1], serveUsers);
  const figures = { current: { ratio: [], p99: [], failures: 0 }, baseline: { ratio: [], p99: [], failures: 0 } };
  for (let i = 0; i < SERVE_RUNS; i++) {
    for (const name of i % 2 === 0 ? ['current', 'baseline'] : ['baseline', 'current']) {
      const side = sides[name];
      const workDir = ['--work-dir', join(work, `serve-${name}`)];
      log(`  serve run ${i + 1} ${name} (Node ${side.version}): bench-serve ${SERVE_ARGS.join(' ')}`);
      // --no-report last: bench-serve writes BENCHMARKS.md by default, and --no-report wins over any --report.
      const { stdout, code } = await run(
        side.node,
        [join(side.dir, 'scripts/bench-serve.mjs'), ...SERVE_ARGS, ...storeDir, ...workDir, '--no-report'],
        { cwd: side.dir, env: side.env, echo: `    ${name.padEnd(8)} ` },
        [0, 1], // 1: bench-serve saw socket errors or unexpected answers; counted below
      );
      const figure = parseBenchServe(stdout);
      figures[name].ratio.push(figure.ratio);
      figures[name].p99.push(figure.p99Ms);
      figures[name].failures += figure.failures;
      if (code !== 0 || figure.failures > 0) log(`  serve run ${i + 1} ${name}: ${figure.failures} socket errors or unexpected answers`);
    }
  }
  for (const name of ['current', 'baseline']) {
    if (figures[name].failures > 0)
      log(`${NAME}: ${name}'s bench-serve runs had ${figures[name].failures} failures: its serve figures are suspect`);
  }
  const runs = `median of ${SERVE_RUNS} bench-serve run${SERVE_RUNS === 1 ? '' : 's'}`;
  return [
    [`serve req/s / nginx's req/s (${runs})`, ...medians(figures, 'ratio'), (r) => `${r.toFixed(2)}x`],
    [`serve p99 (${runs})`, ...medians(figures, 'p99'), (ms) => `${ms} ms`],
  ];
}

/**
 * From bench-serve's summary: serve's req/s as a ratio to nginx's (the `serve/nginx:` line), serve's
 * p99 (its line after `medians of`), and its socket errors and unexpected answers, both servers'.
 */
function parseBenchServe(stdout) {
  const summary = stdout.slice(stdout.indexOf('bench-serve: medians of'));
  const ratio = /serve\/nginx: req\/s ([\d.]+)x/.exec(summary);
  const serve = /^\s+serve\s+\d+ req\/s\s+p50 \S+ ms\s+p99 ([\d.]+) ms/m.exec(summary);
  if (!summary || !ratio || !serve) throw new Error(`bench-serve printed no summary this script can read:\n${stdout}`);
  const failures = [...summary.matchAll(/(\d+) socket errors, (\d+) unexpected answers/g)].reduce(
    (n, [, errors, unexpected]) => n + Number(errors) + Number(unexpected),
    0,
  );
  return { ratio: Number(ratio[1]), p99Ms: Number(serve[1]), failures };
}

/** The row of the test suite: `npx vitest run` once per side, current first, after `npm run sample-db` as `npm test` does. */
async function suiteRows() {
  const figures = { current: { ms: [] }, baseline: { ms: [] } };
  for (const name of ['current', 'baseline']) {
    const side = sides[name];
    await run('npm', ['run', 'sample-db'], { cwd: side.dir, env: side.env });
    const started = performance.now();
    const { code } = await run('npx', ['vitest', 'run'], { cwd: side.dir, env: side.env }, null);
    const ms = performance.now() - started;
    figures[name].ms.push(ms);
    log(`  suite ${name.padEnd(8)} ${(ms / 1000).toFixed(1)} s${code === 0 ? '' : ` (vitest exited ${code}: failing tests)`}`);
  }
  return [['test suite, `npx vitest run` (one run)', ...medians(figures, 'ms'), (ms) => `${(ms / 1000).toFixed(1)} s`]];
}

/**
 * The baseline's worktree with its own node_modules and build, both made under the baseline's Node:
 * its native modules (better-sqlite3 12 compiles from source) are then built for that Node.
 */
async function prepareBaseline() {
  git('worktree', 'add', '--detach', baselineDir, commit);
  const env = { ...sides.baseline.env };
  // npm's nodedir (~/.npmrc may set one) must hold the headers of the Node that builds: that Node's own
  // prefix when it ships them (/usr for Debian's, .runtimes/node-<v> for ours), else none, and node-gyp fetches them.
  const prefix = dirname(dirname(realpathSync(BASELINE_NODE)));
  env.npm_config_nodedir = existsSync(join(prefix, 'include/node/node_version.h')) ? prefix : '';
  log(`${NAME}: npm ci in the baseline worktree under ${BASELINE_NODE} (nodedir ${env.npm_config_nodedir || 'none'})`);
  let started = performance.now();
  await run('npm', ['ci'], { cwd: baselineDir, env });
  log(`${NAME}: npm ci took ${((performance.now() - started) / 1000).toFixed(0)} s; npm run compile`);
  started = performance.now();
  await run('npm', ['run', 'compile'], { cwd: baselineDir, env });
  log(`${NAME}: npm run compile took ${((performance.now() - started) / 1000).toFixed(0)} s`);
  // Fails here, and clearly, when better-sqlite3 was built for some other Node.
  await run(BASELINE_NODE, ['-e', "new (require('better-sqlite3'))(':memory:').close()"], { cwd: baselineDir, env });
}

/**
 * The environment of one side's processes: BENCH_ENV with a folder holding only that side's `node`
 * first on PATH (npm, npx and anything spawning `node` then run under it), and without the npm_*
 * settings an outer `npm run` leaves, which would steer an inner npm to the outer one's Node and folders.
 */
function sideEnv(name, node) {
  const shim = join(work, `node-${name}`);
  mkdirSync(shim);
  symlinkSync(node, join(shim, 'node'));
  const env = Object.fromEntries(Object.entries(BENCH_ENV).filter(([key]) => !/^npm_/i.test(key) && key !== 'NODE' && key !== 'INIT_CWD'));
  return { ...env, PATH: `${shim}:${BENCH_ENV.PATH}` };
}

/**
 * Runs `command` to its end; rejects when its exit code is not in `codes` (null: any), with its
 * stderr. Its stdout is collected (and echoed line by line after `echo`, when given).
 */
function run(command, commandArgs, { cwd, env, echo }, codes = [0]) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, commandArgs, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    let stdout = '',
      stderr = '',
      pending = '';
    child.stdout.on('data', (data) => {
      stdout += data;
      if (echo === undefined) return;
      const lines = (pending + data).split('\n');
      pending = lines.pop();
      for (const line of lines) log(`${echo}${line}`);
    });
    child.stderr.on('data', (data) => (stderr += data));
    child.once('error', reject);
    child.once('close', (code, signal) => {
      running.delete(child);
      if (echo !== undefined && pending) log(`${echo}${pending}`);
      if (codes === null || codes.includes(code)) resolve({ code, stdout });
      else reject(new Error(`${command} ${commandArgs.join(' ')} (in ${cwd}) failed (${signal ?? code}):\n${stderr.slice(-4000)}`));
    });
  });
}

function git(...gitArgs) {
  const r = spawnSync('git', ['-C', repo, ...gitArgs], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${gitArgs.join(' ')} failed: ${r.stderr}`);
  return r.stdout.trim();
}

/** [current, baseline]: the medians of `figures.current[kind]` and `figures.baseline[kind]`. */
function medians(figures, kind) {
  return [median(figures.current[kind]), median(figures.baseline[kind])];
}
