#!/usr/bin/env node
/**
 * What a shard's changing watch cycle cannot avoid reading. The profile store has no column that
 * says when a row changed, so a shard's watcher learns what changed by reading its users' rows, their
 * child rows, and every name of the store (to find the users who entered the shard). This times
 * those reads alone, as bare SQLite statements on one connection, with nothing rendered, compared
 * or written: the least a changing cycle of one shard spends before it renders anything.
 *
 * Each read runs in its own process (a fresh connection, the store in the page cache after a
 * warm-up run), `--rounds` times; the figures are medians. Results on stdout and in BENCHMARKS.md
 * (section "shard-reads"; --report FILE elsewhere, --no-report for none).
 *
 *   node scripts/bench-shard-reads.mjs [--users 10000000] [--shard 0/8] [--rounds 3] [--report FILE]
 *   (or `npm run bench:shard-reads -- ...`, which compiles first)
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { machine, median, seededStore } from './bench-common.mjs';
import { writeSection } from './report-section.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const USERS = Number(value('--users', '10000000'));
const SHARD = value('--shard', '0/8');
const ROUNDS = Number(value('--rounds', '3'));
const REPORT = args.includes('--no-report') ? undefined : value('--report', join(repo, 'BENCHMARKS.md'));
const [INDEX, COUNT] = SHARD.split('/').map(Number);

/** The shard's ids, as its watcher's copy holds them (a temp table), made before the timed read. */
const SHARD_IDS = `CREATE TEMP TABLE ids (id INTEGER PRIMARY KEY);
  INSERT INTO ids SELECT id FROM users WHERE profile_slice(username, ${COUNT}) = ${INDEX}`;

/** The reads, each a statement that visits every value it names (summed, so nothing is skipped). */
const READS = {
  'every name of the store, read alone (what any scan for entering users costs)': {
    sql: 'SELECT sum(length(username)) FROM users',
  },
  'every name of the store, hashed (the users who entered the shard)': {
    sql: `SELECT count(*) FROM users WHERE profile_slice(username, ${COUNT}) = ${INDEX}`,
  },
  "the shard's users rows, by id": {
    setup: SHARD_IDS,
    sql: `SELECT count(*), sum(length(u.username) + length(u.display_name) + length(u.bio) + length(u.custom_domain)
      + length(u.created_at) + u.views + length(u.status) + length(u.decoration_id))
      FROM temp.ids i CROSS JOIN main.users u ON u.id = i.id`,
  },
  "the shard's socials rows, by user": {
    setup: SHARD_IDS,
    sql: `SELECT count(*), sum(length(s.platform) + length(s.url) + s.position)
      FROM temp.ids i CROSS JOIN main.socials s ON s.user_id = i.id`,
  },
  "the shard's badges and bans rows, by user": {
    setup: SHARD_IDS,
    sql: `SELECT (SELECT count(*) FROM temp.ids i CROSS JOIN main.badges b ON b.user_id = i.id),
      (SELECT sum(length(b.message) + length(b.reason) + length(b.banned_at)) FROM temp.ids i CROSS JOIN main.bans b ON b.user_id = i.id)`,
  },
};

/** One read in a fresh process: seconds of its statement alone (its setup untimed). */
function timedRead(db, read) {
  const script = `
    import Database from 'better-sqlite3';
    import { registerSliceFunction } from './build/store/queries.js';
    const db = new Database(${JSON.stringify(db)}, { readonly: true });
    db.pragma('cache_size = -2048');
    registerSliceFunction(db);
    db.exec('BEGIN');
    ${read.setup ? `db.exec(${JSON.stringify(read.setup)});` : ''}
    const started = performance.now();
    db.prepare(${JSON.stringify(read.sql)}).raw().get();
    process.stdout.write(String((performance.now() - started) / 1000));`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: repo, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`read failed: ${run.stderr}`);
  return Number(run.stdout);
}

const db = seededStore(join(repo, '.bench/stores'), USERS);
const log = (line) => process.stdout.write(`${line}\n`);
log(`shard ${SHARD} of ${USERS} users, ${ROUNDS} rounds: ${machine()}`);
timedRead(db, READS["the shard's users rows, by id"]); // warm the page cache
const rows = [];
for (const [name, read] of Object.entries(READS)) {
  const seconds = median(Array.from({ length: ROUNDS }, () => timedRead(db, read)));
  rows.push([name, seconds]);
  log(`${name.padEnd(76)} ${seconds.toFixed(2)} s`);
}
// The first row is a part of the second: the total counts the hashed names once.
const total = rows.slice(1).reduce((sum, [, seconds]) => sum + seconds, 0);
log(`${'all but the first'.padEnd(76)} ${total.toFixed(2)} s`);

if (REPORT) {
  const table = rows.map(([name, seconds]) => `| ${name} | ${seconds.toFixed(2)} s |`).join('\n');
  writeSection(
    REPORT,
    'shard-reads',
    `<!-- shard-reads:start -->
### What a shard's changing cycle must read: shard ${SHARD} of ${USERS.toLocaleString('en-US')} users

\`node scripts/bench-shard-reads.mjs --users ${USERS} --shard ${SHARD} --rounds ${ROUNDS}\`: each read a bare SQLite
statement in its own process, the store in the page cache, medians of ${ROUNDS}. ${machine()}

The store has no column that says a row changed, so each changing cycle of a shard's watcher reads
every one of these, and then compares, renders and writes. Nothing here is compared or written:
this is the least such a cycle costs on one core, against the 1% cycle's target of 5 s. The first
row is the scan of the username index without the hash: no way of finding the users who entered
the shard that reads every name can cost less.

| read | seconds |
|---|---|
${table}
| **all but the first, one after the other** | **${total.toFixed(2)} s** |
<!-- shard-reads:end -->`,
  );
}
