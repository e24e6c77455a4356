/**
 * What reading a tree through a pin (src/output/pin.ts) costs a watcher's publish, against reading the
 * out dir itself, in the same run: a tree of --users built on tmpfs, then readers that open, read and
 * close every profile document, each reader a process of its own, --runs times in turn:
 *
 *   - live: the out dir as it is (what `publish` reads);
 *   - pinned: through a pin that holds nothing yet (a first publish, before cycles commit);
 *   - pinned, 1% kept: through a pin holding 1% of the documents (as a cycle's commit leaves it).
 *
 * With --baseline <dir> (another commit's compiled `build/`), the pinned readers run its pin too.
 * Medians of the read loop's time, per document, and each against live.
 *
 *   node scripts/bench-pin-read.mjs [--users 200000] [--runs 5] [--baseline DIR] [--report BENCHMARKS.md]
 */
import { execFileSync } from 'node:child_process';
import { closeSync, linkSync, mkdirSync, readdirSync, readSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BENCH_ENV, machine, median, workingStore } from './bench-common.mjs';
import { writeSection } from './report-section.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const USERS_DIR = 'api/v1/users';

if (args[0] === '--child') await child(args[1], args[2], args[3]);
else await main();

/** One reader: every profile document through `mode`'s tree, timed; prints {seconds, files}. */
async function child(buildDir, mode, out) {
  const { liveTree, TreePin } = await import(pathToFileURL(join(buildDir, 'output/pin.js')).href);
  const tree = mode === 'live' ? liveTree(out) : TreePin.attach(out);
  const paths = readdirSync(join(out, USERS_DIR)).map((name) => `${USERS_DIR}/${name}`);
  const buffer = Buffer.alloc(1 << 16);
  const started = process.hrtime.bigint();
  for (const path of paths) {
    const fd = tree.open(path);
    if (fd === undefined) throw new Error(`${path}: not found`);
    readSync(fd, buffer, 0, buffer.length, 0);
    closeSync(fd);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  process.stdout.write(JSON.stringify({ seconds, files: paths.length }));
}

/** Links every 100th profile document into the pin, as commits keep what they replace. */
function keepOnePercent(out, pinRoot) {
  const names = readdirSync(join(out, USERS_DIR));
  for (let i = 0; i < names.length; i += 100) {
    const path = join(USERS_DIR, names[i]);
    mkdirSync(dirname(join(pinRoot, path)), { recursive: true });
    linkSync(join(out, path), join(pinRoot, path));
  }
}

async function main() {
  const users = Number(value('--users', '200000'));
  const runs = Number(value('--runs', '5'));
  const baseline = value('--baseline', undefined);
  const report = value('--report', undefined);
  const work = '/dev/shm/ps-pin-read';
  rmSync(work, { recursive: true, force: true });
  const db = workingStore(repo, join(work, 'store'), users);
  const out = join(work, 'out');
  execFileSync(process.execPath, [join(repo, 'bin/profile-snapshot.js'), 'build', '--db', db, '--out', out], {
    env: BENCH_ENV,
    stdio: 'ignore',
  });
  const builds = [['this commit', join(repo, 'build')], ...(baseline ? [['baseline', baseline]] : [])];
  const { TreePin } = await import(pathToFileURL(join(repo, 'build/output/pin.js')).href);
  const read = (buildDir, mode) =>
    JSON.parse(execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', buildDir, mode, out], { encoding: 'utf8' }));
  const rows = [];
  for (const kept of [false, true]) {
    const pin = TreePin.take(out);
    if (kept) keepOnePercent(out, pin.root);
    const readers = [
      ['live', builds[0][1], 'live'],
      ...builds.map(([name, dir]) => [`pinned${kept ? ', 1% kept' : ''} (${name})`, dir, 'pinned']),
    ];
    const times = readers.map(() => []);
    let files = 0;
    for (let run = 0; run < runs; run++)
      readers.forEach(([, dir, mode], i) => {
        const result = read(dir, mode);
        times[i].push(result.seconds);
        files = result.files;
      });
    const live = median(times[0]);
    readers.forEach(([name], i) => {
      if (kept && i === 0) return; // live once is enough
      const seconds = median(times[i]);
      rows.push(`| ${name} | ${seconds.toFixed(3)} s | ${((seconds / files) * 1e6).toFixed(2)} µs | ${(seconds / live).toFixed(2)}x |`);
    });
    pin.release();
  }
  rmSync(work, { recursive: true, force: true });
  const text = [
    `${machine()}; ${users.toLocaleString('en-US')} users' profile documents, each opened, read and closed; medians of ${runs} runs, each reader a process of its own.`,
    '',
    '| reader | read loop | per document | against live |',
    '|---|---:|---:|---:|',
    ...rows,
  ].join('\n');
  process.stdout.write(`${text}\n`);
  if (report) {
    const title = '## Reading through a pin (bench-pin-read)';
    writeSection(report, 'bench-pin-read', `<!-- bench-pin-read:start -->\n${title}\n\n${text}\n<!-- bench-pin-read:end -->`);
  }
}
