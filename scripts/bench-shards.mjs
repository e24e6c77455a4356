#!/usr/bin/env node
/**
 * `npm run bench:shards`: the API as shards, each built and published by its own process, the
 * creators list joined in the bucket (docs/scaling-out.md). Into the in-memory S3 server
 * (bench-s3-memory.mjs, which honours UploadPartCopy and S3's 5 MiB part minimum) 25 ms away:
 *
 *   1. `--users` (1M) as `--shards` (4): the whole build (the single machine's baseline), then each
 *      shard's cold build and cold publish, one after the other, and the join alone; checks that the
 *      joined list holds exactly the whole build's users, and that its gzip variant decodes to it;
 *   2. the join of `--parts` (8) parts of a list of `--join-users` (10M) users: parts of the sizes a
 *      10M list would have (scaled from the 1M list measured in 1), placed in the bucket without
 *      sending them; the join's requests and time;
 *   3. with `--shard-of N` (10M) and `--of n` (8): one machine's load, shard 0 of an N-user store:
 *      its cold build and cold publish. (Its watch cycles: `npm run bench -- --sizes N --shard 0/n`.)
 *
 * Whole processes, wall-clock seconds and peak RSS (bench-child.mjs). Results on stdout and in
 * BENCHMARKS.md (section "shards"; --report FILE elsewhere).
 *
 *   node scripts/bench-shards.mjs [--users 1000000] [--shards 4] [--delay-ms 25] [--parts 8]
 *     [--join-users 10000000] [--shard-of 10000000 --of 8] [--no-shards] [--work DIR] [--report FILE]
 *   node scripts/bench-shards.mjs --join-only [--list-bytes B --gzip-bytes B]: step 2 alone, from a
 *     1M list of those sizes, under S3's rules and R2's (section "shards-join")
 */
import Database from 'better-sqlite3';
import { fork, spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { BENCH_ENV, machine, workingStore } from './bench-common.mjs';
import { writeSection } from './report-section.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const child = join(repo, 'scripts/bench-child.mjs');
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const USERS = Number(value('--users', '1000000'));
const SHARDS = Number(value('--shards', '4'));
const DELAY_MS = Number(value('--delay-ms', '25'));
const PARTS = Number(value('--parts', '8'));
const JOIN_USERS = Number(value('--join-users', '10000000'));
const SHARD_OF = value('--shard-of', undefined);
const JOIN_ONLY = args.includes('--join-only');
const OF = Number(value('--of', '8'));
const REPORT = value('--report', join(repo, 'BENCHMARKS.md'));
const work = value('--work', join(repo, '.bench/shards'));
const BUCKET = 'bench-shards';
const CREDENTIALS = { AWS_ACCESS_KEY_ID: 'bench', AWS_SECRET_ACCESS_KEY: 'bench', AWS_EC2_METADATA_DISABLED: 'true', HOME: '/nonexistent' };
const LIST = 'service-api/v1/creators';
const LIST_GZ = 'service-api/v1/.creators.gz';

const log = (line) => process.stdout.write(`${line}\n`);
const fmt = (n, digits = 1) => n.toFixed(digits);

/** The CLI as a whole process: wall seconds, peak RSS, its JSON report (when it printed one). */
function measured(cliArgs) {
  const started = performance.now();
  const run = spawnSync(process.execPath, [child, ...cliArgs], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
    env: { ...BENCH_ENV, ...CREDENTIALS },
  });
  const seconds = (performance.now() - started) / 1000;
  if (run.status !== 0) throw new Error(`profile-snapshot ${cliArgs.join(' ')} failed (${run.status}):\n${run.stderr}`);
  const usage = JSON.parse(run.stderr.split('\nBENCH ').at(-1));
  return { seconds, rssMb: usage.maxRssKb / 1024, report: run.stdout.trim() === '' ? undefined : JSON.parse(run.stdout) };
}

/** The in-memory S3 server, `DELAY_MS` away, keeping the bodies of keys matching `keep`. */
function startServer(keep) {
  const server = fork(join(repo, 'scripts/bench-s3-memory.mjs'), ['--delay-ms', String(DELAY_MS), '--keep', keep], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const pending = [];
  server.on('message', (message) => pending.shift()?.(message));
  const ask = (message) => new Promise((resolve) => (pending.push(resolve), server.send(message)));
  return new Promise((resolve) => {
    server.stdout.once('data', (d) =>
      resolve({ endpoint: `http://127.0.0.1:${JSON.parse(String(d)).port}`, ask, close: () => server.kill('SIGKILL') }),
    );
  });
}

const remoteArgs = (server, prefix) => ['--to', `s3://${BUCKET}/${prefix}`, '--endpoint', server.endpoint, '--json'];
const totalRequests = (requests) => Object.values(requests).reduce((a, b) => a + b, 0);

/** An object's stored bytes (not fetch: it would decode the gzip variant). */
function getObject(server, key) {
  return new Promise((resolve, reject) => {
    get(`${server.endpoint}/${BUCKET}/${key}`, (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () =>
        response.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`GET ${key}: ${response.statusCode}`)),
      );
    }).on('error', reject);
  });
}

/** The lower-cased usernames of a list (a Buffer: a million users' list is longer than a string may be). */
function usernames(list) {
  const field = Buffer.from('"username":"');
  const names = [];
  for (let at = list.indexOf(field); at !== -1; at = list.indexOf(field, at + 1)) {
    const start = at + field.length;
    names.push(list.toString('utf8', start, list.indexOf(0x22, start)).toLowerCase());
  }
  return names;
}

/** 1: n shards of the store, built and published one by one, joined; checked against the whole build. */
async function shardsOfOneMillion() {
  const db = workingStore(repo, join(work, 'store'), USERS);
  log(`${USERS} users as ${SHARDS} shards, each in its own process, into the in-memory S3 ${DELAY_MS} ms away`);
  const whole = measured(['build', '--db', db, '--out', join(work, 'whole'), '--json']);
  log(`  whole build (one machine): ${fmt(whole.seconds)} s, ${fmt(whole.rssMb, 0)} MB`);
  // Only its list is needed from here: tmpfs counts every file against its inode limit.
  copyFileSync(join(work, 'whole', LIST), join(work, 'whole-list'));
  rmSync(join(work, 'whole'), { recursive: true, force: true });
  const server = await startServer('(/parts/|service-api/v1/\\.?creators)');
  const rows = [];
  try {
    for (let i = 0; i < SHARDS; i++) {
      const out = join(work, `shard-${i}`);
      const build = measured(['build', '--db', db, '--out', out, '--shard', `${i}/${SHARDS}`, '--json']);
      const publish = measured(['publish', '--out', out, ...remoteArgs(server, 'api')]);
      rows.push({ shard: `${i}/${SHARDS}`, build, publish });
      const joined = publish.report.shard.join;
      log(
        `  shard ${i}/${SHARDS}: build ${fmt(build.seconds)} s ${fmt(build.rssMb, 0)} MB (${build.report.profiles} profiles); ` +
          `publish ${fmt(publish.seconds)} s ${fmt(publish.rssMb, 0)} MB, ${totalRequests(publish.report.requests)} requests` +
          `${joined?.joined ? `, joined the list (${joined.copiedParts} parts copied, ${joined.uploadedParts} uploaded)` : ''}`,
      );
    }
    // The join alone: what the last shard's publish did, again from the same parts.
    await server.ask({ op: 'drop', prefix: `api/.profile-snapshot/shards/joined` });
    const joining = measured(['compose', ...remoteArgs(server, 'api')]);
    log(
      `  join: ${fmt(joining.seconds, 2)} s, ${totalRequests(joining.report.requests)} requests (${requestsText(joining.report.requests)})`,
    );
    const check = await checkJoined(server);
    for (let i = 0; i < SHARDS; i++) rmSync(join(work, `shard-${i}`), { recursive: true, force: true });
    return { whole, rows, joining, check };
  } finally {
    server.close();
  }
}

/** The joined list against the whole build's: the same users, each once; the variant decodes to it. */
async function checkJoined(server) {
  const [list, gzip] = [await getObject(server, `api/${LIST}`), await getObject(server, `api/${LIST_GZ}`)];
  const decodes = gunzipSync(gzip).equals(list);
  const joined = usernames(list);
  const expected = usernames(readFileSync(join(work, 'whole-list')));
  const same = joined.length === new Set(joined).size && joined.toSorted().join('\n') === expected.toSorted().join('\n');
  log(
    `  check: ${joined.length} creators joined, the whole build has ${expected.length}: ${same ? 'the same users' : 'DIFFERENT'}; gzip ${decodes ? 'decodes to the list' : 'DIFFERS'}`,
  );
  if (!same || !decodes) throw new Error('the joined list is not the whole build list');
  return { creators: joined.length, listBytes: list.length, gzipBytes: gzip.length };
}

/** 2: the join of `PARTS` parts of a list of JOIN_USERS users, parts placed without sending them. */
async function joinOfTenMillion(listBytes, gzipBytes) {
  const scale = JOIN_USERS / USERS;
  const [partBytes, partGzipBytes] = [Math.round((listBytes * scale) / PARTS), Math.round((gzipBytes * scale) / PARTS)];
  log(
    `the join of ${PARTS} parts of a ${JOIN_USERS}-user list (${fmt((partBytes * PARTS) / 1e9, 2)} GB, gzip ${fmt((partGzipBytes * PARTS) / 1e9, 2)} GB)`,
  );
  const s3 = await joinParts(partBytes, partGzipBytes, []);
  log("  the same under R2's rules (--equal-parts: 5 MiB windows, those across two parts read and uploaded)");
  const r2 = await joinParts(partBytes, partGzipBytes, ['--equal-parts']);
  return { partBytes, partGzipBytes, joining: s3, r2 };
}

/** One join of PARTS seeded parts of these sizes, as a `compose` process with `flags`. */
async function joinParts(partBytes, partGzipBytes, flags) {
  const server = await startServer('^$');
  try {
    const prefix = 'join';
    const put = (key, body) => fetch(`${server.endpoint}/${BUCKET}/${prefix}/${key}`, { method: 'PUT', body });
    await put('.profile-snapshot/shards/layout', JSON.stringify({ tool: 'profile-snapshot', shards: PARTS }));
    for (let i = 0; i < PARTS; i++) {
      const parts = `.profile-snapshot/shards/${i}-of-${PARTS}/parts/p${i}`;
      await server.ask({ op: 'seed', key: `${prefix}/${parts}`, size: partBytes, zeros: true });
      await server.ask({ op: 'seed', key: `${prefix}/${parts}.gz`, size: partGzipBytes, zeros: true });
      const lead = i === 0 ? 0 : 1;
      const index = {
        tool: 'profile-snapshot',
        shard: `${i}/${PARTS}`,
        id: `p${i}`,
        identity: { key: parts, bytes: partBytes, lead },
        gzip: { key: `${parts}.gz`, bytes: partGzipBytes, lead: lead * 7 },
        memberBytes: partBytes - (i === 0 ? 24 : 1),
        crc: 0,
        length: partBytes - lead,
        meta: { timestamp: '2026-01-01T00:00:00.000Z', executionTimeMs: 1000 },
      };
      await put(`.profile-snapshot/shards/${i}-of-${PARTS}/part`, JSON.stringify(index));
    }
    const joining = measured(['compose', ...remoteArgs(server, prefix), ...flags]);
    const requests = joining.report.requests;
    log(`  ${fmt(joining.seconds, 2)} s, ${fmt(joining.rssMb, 0)} MB, ${totalRequests(requests)} requests: ${requestsText(requests)}`);
    return joining;
  } finally {
    server.close();
  }
}

/** 3: one machine's share of a large store: shard 0 of `SHARD_OF` users in `OF`, cold build and publish. */
async function oneShardOfMany() {
  const users = Number(SHARD_OF);
  const db = workingStore(repo, join(work, 'large'), users);
  log(`shard 0/${OF} of ${users} users: one machine's load`);
  const out = join(work, 'large', 'shard');
  const build = measured(['build', '--db', db, '--out', out, '--shard', `0/${OF}`, '--json']);
  log(`  cold build: ${fmt(build.seconds)} s, ${fmt(build.rssMb, 0)} MB (${build.report.profiles} profiles)`);
  const server = await startServer('^$');
  try {
    const publish = measured(['publish', '--out', out, ...remoteArgs(server, 'large')]);
    log(`  cold publish: ${fmt(publish.seconds)} s, ${fmt(publish.rssMb, 0)} MB, ${totalRequests(publish.report.requests)} requests`);
    // 1% of the users change: what one machine does before the change is in the live list.
    const store = new Database(db);
    store.prepare('UPDATE users SET views = views + 1 WHERE id % 100 = 7').run();
    store.close();
    const changedBuild = measured(['build', '--db', db, '--out', out, '--shard', `0/${OF}`, '--json']);
    const changedPublish = measured(['publish', '--out', out, ...remoteArgs(server, 'large')]);
    log(
      `  1% changed: build ${fmt(changedBuild.seconds)} s, publish ${fmt(changedPublish.seconds)} s ` +
        `(${changedPublish.report.objects.put} objects put, ${totalRequests(changedPublish.report.requests)} requests)`,
    );
    return { users, build, publish, changedBuild, changedPublish };
  } finally {
    server.close();
    rmSync(join(work, 'large'), { recursive: true, force: true });
  }
}

function render({ shards, tenMillion, large }) {
  const lines = [`Machine: ${machine()}. The in-memory S3 server ${DELAY_MS} ms away (bench-s3-memory.mjs).`, ''];
  if (shards !== undefined) {
    const { whole, rows, joining, check } = shards;
    lines.push(
      `### ${USERS.toLocaleString('en')} users as ${SHARDS} shards`,
      '',
      `Each shard built and published by its own process, one after the other; the whole build is the single machine's. ` +
        `The joined list holds the whole build's ${check.creators.toLocaleString('en')} creators, each once, and its gzip variant decodes to it.`,
      '',
      '| | build | build peak RSS | publish | publish peak RSS | publish requests |',
      '|---|---|---|---|---|---|',
      `| whole (one machine) | ${fmt(whole.seconds)} s | ${fmt(whole.rssMb, 0)} MB | | | |`,
      ...rows.map(
        (r) =>
          `| shard ${r.shard} | ${fmt(r.build.seconds)} s | ${fmt(r.build.rssMb, 0)} MB | ${fmt(r.publish.seconds)} s | ${fmt(r.publish.rssMb, 0)} MB | ${totalRequests(r.publish.report.requests).toLocaleString('en')} |`,
      ),
      '',
      `The join alone (\`compose\`, ${(check.listBytes / 1e6).toFixed(0)} MB list, ${(check.gzipBytes / 1e6).toFixed(1)} MB gzip): ` +
        `${fmt(joining.seconds, 2)} s as a process, ${totalRequests(joining.report.requests)} requests (${requestsText(joining.report.requests)}); ` +
        `${joining.report.copiedParts} parts copied, ${joining.report.uploadedParts} uploaded (${joining.report.uploadedBytes.toLocaleString('en')} bytes).`,
      '',
    );
  }
  if (tenMillion !== undefined) {
    const { partBytes, partGzipBytes, joining } = tenMillion;
    const requests = joining.report.requests;
    const { copiedParts, uploadedParts } = joining.report;
    // Per object: the upload's creation and completion, and its parts (copied, or uploaded: the tails).
    const objectRequests = 2 * 2 + copiedParts + uploadedParts;
    lines.push(
      `### The join of ${PARTS} parts of a ${JOIN_USERS.toLocaleString('en')}-user list`,
      '',
      `Parts of ${(partBytes / 1e6).toFixed(0)} MB (gzip ${(partGzipBytes / 1e6).toFixed(1)} MB), scaled from ${JOIN_ONLY ? "a 1M list of the sizes given (by default the 'shards' section's)" : 'the measured list above'}, placed in the bucket without being sent.`,
      '',
      `${fmt(joining.seconds, 2)} s as a process (start-up included), ${fmt(joining.rssMb, 0)} MB peak RSS; ${totalRequests(requests)} requests: ${requestsText(requests)}. ` +
        `Of those, the two objects' own: ${objectRequests} (2 creations, ${copiedParts} copies, ${uploadedParts} uploads, the tails, 2 completions; ` +
        `target: at most 2 x (${PARTS} + 2) = ${2 * (PARTS + 2)}); the rest read the part indexes and the layout, take and release ` +
        `the compose lease (proving the store's conditional writes on its first use) and record the join.`,
      '',
    );
    if (tenMillion.r2 !== undefined) {
      const r2 = tenMillion.r2;
      lines.push(
        `Under R2's rules (\`--equal-parts\`: every part but the last 5 MiB), the same list: ${fmt(r2.seconds, 2)} s, ` +
          `${fmt(r2.rssMb, 0)} MB peak RSS; ${totalRequests(r2.report.requests).toLocaleString('en')} requests (${requestsText(r2.report.requests)}); ` +
          `${r2.report.copiedParts.toLocaleString('en')} windows copied, ${r2.report.uploadedParts} read and uploaded ` +
          `(${(r2.report.uploadedBytes / 2 ** 20).toFixed(1)} MiB: the windows across two parts, and the tails), ` +
          `at most --concurrency (128) of them in flight.`,
        '',
      );
    }
  }
  if (large !== undefined) {
    const { users, build, publish } = large;
    lines.push(
      `### One machine of ${OF}: shard 0/${OF} of ${users.toLocaleString('en')} users`,
      '',
      `| | seconds | peak RSS | target |`,
      '|---|---|---|---|',
      `| cold build (${build.report.profiles.toLocaleString('en')} profiles) | ${fmt(build.seconds)} s | ${fmt(build.rssMb, 0)} MB | <= 45 s, <= 450 MB |`,
      `| cold publish, ${DELAY_MS} ms away | ${fmt(publish.seconds)} s | ${fmt(publish.rssMb, 0)} MB | <= 600 s |`,
      `| 1% changed: build (a process; the watcher's cycle is in the watch table) | ${fmt(large.changedBuild.seconds)} s | ${fmt(large.changedBuild.rssMb, 0)} MB | |`,
      `| 1% changed: publish (${large.changedPublish.report.objects.put.toLocaleString('en')} objects, the part, the join) | ${fmt(large.changedPublish.seconds)} s | ${fmt(large.changedPublish.rssMb, 0)} MB | |`,
      '',
    );
  }
  return lines.join('\n');
}

const requestsText = (requests) =>
  Object.entries(requests)
    .filter(([, n]) => n > 0)
    .map(([method, n]) => `${n} ${method}`)
    .join(', ');

const results = {};
if (JOIN_ONLY) {
  // The list's sizes as a 1M run measured them (its "join alone" line), scaled to --join-users.
  results.tenMillion = await joinOfTenMillion(Number(value('--list-bytes', '705000000')), Number(value('--gzip-bytes', '63900000')));
} else if (!args.includes('--no-shards')) {
  results.shards = await shardsOfOneMillion();
  results.tenMillion = await joinOfTenMillion(results.shards.check.listBytes, results.shards.check.gzipBytes);
}
if (SHARD_OF !== undefined) results.large = await oneShardOfMany();
const text = render(results);
log('');
log(text);
const command = `node scripts/bench-shards.mjs ${args.filter((a) => a !== '--report' && a !== REPORT).join(' ')}`.trim();
const section = JOIN_ONLY ? 'shards-join' : 'shards';
const title = JOIN_ONLY
  ? 'Shards: the join alone, under S3 and R2 rules'
  : 'Shards: one store on many machines, the list joined in the bucket';
writeSection(REPORT, section, `<!-- ${section}:start -->\n## ${title}\n\n\`${command}\`\n\n${text}\n<!-- ${section}:end -->`);
log(`(written to ${REPORT}, section "${section}")`);
