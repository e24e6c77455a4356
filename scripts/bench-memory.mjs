/**
 * What each part of the CLI's memory upkeep (src/core/memory.ts) is worth: peak resident memory and
 * seconds of whole `build` processes with every part on, with none, and with each part left out in
 * turn (PROFILE_SNAPSHOT_MEMORY_UPKEEP, src/cli/memory-upkeep.ts). Two builds per setting: a cold
 * build into a new out dir, and, once 1% of the users changed, a rebuild of that tree (every row
 * read again, the last build's manifest replaced entry by entry). The settings take turns within
 * each round, so none always meets a warmer cache; medians over the rounds.
 *
 *   node scripts/bench-memory.mjs [--users 1000000] [--rounds 3] [--threads 2] [--report BENCHMARKS.md]
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BENCH_ENV, machine, median, workingStore } from './bench-common.mjs';
import { writeSection } from './report-section.mjs';
import { BUILD_COLLECTION_POINTS } from '../build/core/memory.js';

const repo = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const USERS = Number(value('--users', '1000000'));
const ROUNDS = Number(value('--rounds', '3'));
const THREADS = value('--threads', '2');
const REPORT = value('--report', undefined);
const work = '/dev/shm/profile-snapshot-memory-bench';
const child = join(repo, 'scripts/bench-child.mjs');
const log = (line) => process.stdout.write(`${line}\n`);

/** The parts, as PROFILE_SNAPSHOT_MEMORY_UPKEEP names them. */
const PARTS = ['young-generation', ...BUILD_COLLECTION_POINTS];
const SETTINGS = [
  { name: 'all on', env: '' },
  { name: 'all off', env: 'off' },
  ...PARTS.map((part) => ({ name: `without ${part}`, env: `-${part}` })),
];

const db = workingStore(repo, work, USERS);
const store = new Database(db);
const bump = store.prepare('UPDATE users SET views = views + 1 WHERE id % 100 = ?');
let bumps = 0;

/** One `build` in a new process: wall seconds and peak RSS (MB). */
function build(setting, out) {
  const env = { ...BENCH_ENV, PROFILE_SNAPSHOT_MEMORY_UPKEEP: setting.env };
  const started = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [child, 'build', '--db', db, '--out', out, '--threads', THREADS], { encoding: 'utf8', env });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (r.status !== 0) throw new Error(`build (${setting.name}) failed: ${r.stderr}`);
  const bench = JSON.parse(r.stderr.split('\nBENCH ').at(-1));
  return { seconds, rssMb: bench.maxRssKb / 1024 };
}

log(`memory upkeep, ${USERS.toLocaleString('en-US')} users, ${ROUNDS} rounds, --threads ${THREADS}; ${machine()}`);
const results = new Map(SETTINGS.map((s) => [s.name, { cold: [], rebuild: [] }]));
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? SETTINGS : SETTINGS.toReversed();
  for (const setting of order) {
    const out = join(work, 'dist');
    rmSync(out, { recursive: true, force: true });
    const cold = build(setting, out);
    bump.run(bumps++ % 100);
    const rebuild = build(setting, out);
    results.get(setting.name).cold.push(cold);
    results.get(setting.name).rebuild.push(rebuild);
    log(
      `  round ${round + 1} ${setting.name}: cold ${cold.rssMb.toFixed(0)} MB ${cold.seconds.toFixed(1)} s, rebuild ${rebuild.rssMb.toFixed(0)} MB ${rebuild.seconds.toFixed(1)} s`,
    );
  }
}
store.close();
rmSync(work, { recursive: true, force: true });

const medians = (runs) => ({ rssMb: median(runs.map((r) => r.rssMb)), seconds: median(runs.map((r) => r.seconds)) });
const base = { cold: medians(results.get('all on').cold), rebuild: medians(results.get('all on').rebuild) };
const table = [
  '| upkeep | cold build: peak RSS | seconds | rebuild: peak RSS | seconds | peak RSS vs all on (cold, rebuild) |',
  '|---|---|---|---|---|---|',
];
for (const setting of SETTINGS) {
  const cold = medians(results.get(setting.name).cold);
  const rebuild = medians(results.get(setting.name).rebuild);
  const ratio = (m, b) => `${(m.rssMb / b.rssMb).toFixed(2)}x`;
  table.push(
    `| ${setting.name} | ${cold.rssMb.toFixed(0)} MB | ${cold.seconds.toFixed(1)} | ${rebuild.rssMb.toFixed(0)} MB | ${rebuild.seconds.toFixed(1)} | ${ratio(cold, base.cold)}, ${ratio(rebuild, base.rebuild)} |`,
  );
}
for (const line of table) log(line);

if (REPORT) {
  const section = [
    '<!-- memory-upkeep:start -->',
    '## Memory upkeep: what each part is worth',
    '',
    `\`node scripts/bench-memory.mjs --users ${USERS} --rounds ${ROUNDS} --threads ${THREADS}\`: whole \`build\` processes, a cold build`,
    "and, after 1% of the users changed, a rebuild of that tree (every row read), with the CLI's memory upkeep",
    '(src/core/memory.ts) all on, all off, and each part left out in turn; medians over the rounds, the',
    'settings taking turns within each round. A library host gets none of it unless it opts in.',
    '',
    machine(),
    '',
    ...table,
    '<!-- memory-upkeep:end -->',
  ].join('\n');
  writeSection(REPORT, 'memory-upkeep', section);
}
