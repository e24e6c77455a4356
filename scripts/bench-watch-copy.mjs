/**
 * What a watcher's copy of the store costs to take (its first cycle, and after any fallback), as
 * whole processes: the whole copy a watcher compares an untracked store with, against the lean copy
 * it keeps of a tracked one (only what the change clock cannot say: names, ages, decorations). Each
 * run is a fresh child process that opens the seeded store (tracked), takes one copy in a read
 * transaction, and prints the time, the size of SQLite's temporary file and its resident set; whole
 * and lean alternate; medians of --runs.
 *
 *   node scripts/bench-watch-copy.mjs [--users 1000000] [--runs 5] [--report BENCHMARKS.md]
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BENCH_ENV, machine, median, trackStore, workingStore } from './bench-common.mjs';
import { writeSection } from './report-section.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const USERS = Number(value('--users', '1000000'));
const RUNS = Number(value('--runs', '5'));
const REPORT = value('--report', undefined);
const work = '/dev/shm/ps-watch-copy';

/** The child: one copy of `db` (`lean` or not), then its figures as JSON on stdout. */
const CHILD = `
import { readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { ProfileStore } from ${JSON.stringify(join(repo, 'build/store/read.js'))};
const [db, kind] = process.argv.slice(1);
const store = ProfileStore.open(db);
const started = performance.now();
const captured = store.inSnapshot(() => store.shadow.capture(undefined, { lean: kind === 'lean' }), { mark: false });
const ms = performance.now() - started;
// SQLite's temporary file is unlinked once opened: found among this process's descriptors.
let tempBytes = 0;
for (const fd of readdirSync('/proc/self/fd')) {
  try {
    if (/\\(deleted\\)$/.test(readlinkSync('/proc/self/fd/' + fd))) tempBytes += statSync('/proc/self/fd/' + fd).size;
  } catch {}
}
const rssMb = Number(/^VmHWM:\\s+(\\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
console.log(JSON.stringify({ captured, ms, tempBytes, rssMb }));
store.close();
`;

const log = (line) => process.stderr.write(`[bench-watch-copy ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

function once(db, kind) {
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', CHILD, db, kind], { env: BENCH_ENV, encoding: 'utf8' });
  const result = JSON.parse(out);
  if (!result.captured) throw new Error(`the ${kind} copy was not taken`);
  return result;
}

const db = workingStore(repo, work, USERS);
trackStore(repo, db);
const runs = { whole: [], lean: [] };
for (let run = 1; run <= RUNS; run++) {
  for (const kind of run % 2 ? ['whole', 'lean'] : ['lean', 'whole']) {
    const result = once(db, kind);
    runs[kind].push(result);
    log(
      `run ${run} ${kind}: ${(result.ms / 1000).toFixed(2)} s, temp file ${(result.tempBytes / 1048576).toFixed(0)} MB, peak RSS ${result.rssMb.toFixed(0)} MB`,
    );
  }
}
const med = (kind, key) => median(runs[kind].map((r) => r[key]));
const row = (kind) =>
  `| ${kind === 'whole' ? 'whole copy (an untracked store)' : 'lean copy (a tracked store)'} | ${(med(kind, 'ms') / 1000).toFixed(2)} s | ${(med(kind, 'tempBytes') / 1048576).toFixed(0)} MB | ${med(kind, 'rssMb').toFixed(0)} MB |`;
const ratio = (key) => (med('lean', key) === 0 ? 'none for lean' : `${(med('whole', key) / med('lean', key)).toFixed(2)}x`);
const section = [
  '<!-- bench-watch-copy:start -->',
  `\`node scripts/bench-watch-copy.mjs --users ${USERS} --runs ${RUNS}\`: ${machine()}; the seeded store of ${USERS.toLocaleString('en-US')} users, tracked, on tmpfs; each run a fresh process taking one copy; whole and lean alternating; medians of ${RUNS}.`,
  '',
  '| copy | time to take | SQLite temporary file | peak RSS of the process |',
  '|---|---:|---:|---:|',
  row('whole'),
  row('lean'),
  `| whole / lean | ${ratio('ms')} | ${ratio('tempBytes')} | ${ratio('rssMb')} |`,
  '<!-- bench-watch-copy:end -->',
].join('\n');
console.log(section);
if (REPORT) writeSection(REPORT, 'bench-watch-copy', section);
