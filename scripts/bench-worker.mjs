/**
 * Should the Cloudflare Worker keep documents in the Cache API? Measured in workerd (Cloudflare's
 * Workers runtime, through miniflare), the committed cloudflare/worker.js over a local R2 bucket
 * holding a built snapshot, with CACHE "on" and "off", in the same run:
 *
 *   - hot: every request asks for one profile (mixed case), as a popular creator's page does;
 *   - mix: random profiles over both aliases, mixed case and the query form.
 *
 * Each configuration is driven by autocannon over real HTTP; runs alternate on/off and medians
 * count. R2 reads per request come from a counting module in front of the Worker (bench only): the
 * figure that decides the cost and latency of R2 on Cloudflare, where a read crosses to the bucket's
 * region and is billed, while a local R2 here is a file on this machine. Writes its section of
 * BENCHMARKS.md.
 *
 *   node scripts/bench-worker.mjs [--users 2000] [--duration 10] [--runs 3] [--connections 20] [--r2-delay-ms 0,20] [--report BENCHMARKS.md]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { cpus, release, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Miniflare } from 'miniflare';
import { writeSection } from './report-section.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
if (args.includes('--help')) {
  process.stdout.write(
    'Usage: node scripts/bench-worker.mjs [--users 2000] [--duration 10] [--runs 3] [--connections 20] [--r2-delay-ms 0,20] [--report BENCHMARKS.md]\n',
  );
  process.exit(0);
}
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const USERS = Number(value('--users', '2000'));
const DURATION = Number(value('--duration', '10'));
const RUNS = Number(value('--runs', '3'));
const CONNECTIONS = Number(value('--connections', '20'));
const REPORT = value('--report', join(repo, 'BENCHMARKS.md'));
/** Local R2 as it is, then with a modelled round trip per read. */
const DELAYS = value('--r2-delay-ms', '0,20').split(',').map(Number);
const PREFIX = 'bench';
const log = (line) => process.stdout.write(`${line}\n`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * In front of the Worker, for this bench only: counts the R2 reads and tells them at /__bench/reads;
 * with BENCH_R2_DELAY_MS, each read first waits that long, a model of R2's round trip to the bucket's
 * region (labelled as such in the report: a model, not a measurement of R2).
 */
const COUNTER = `import worker from './worker.js';
let reads = 0;
const pause = (ms) => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : undefined);
const counted = (bucket, delay) => ({
  get: async (key, options) => { reads++; await pause(delay); return bucket.get(key, options); },
  head: async (key) => { reads++; await pause(delay); return bucket.head(key); },
});
export default {
  fetch(request, env, ctx) {
    if (new URL(request.url).pathname === '/__bench/reads') return new Response(String(reads));
    return worker.fetch(request, { ...env, PROFILES: counted(env.PROFILES, Number(env.BENCH_R2_DELAY_MS)) }, ctx);
  },
};
`;

function cli(...command) {
  const run = spawnSync(process.execPath, [join(repo, 'bin/profile-snapshot.js'), ...command], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`profile-snapshot ${command.join(' ')} failed: ${run.stderr}`);
}

/** Every public file of a built tree (not the tool's dot folder), by path. */
function publicFiles(out, dir = out) {
  return readdirSync(dir)
    .filter((name) => !name.startsWith('.'))
    .flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? publicFiles(out, path) : [relative(out, path)];
    });
}

async function startWorker(cache, delay, files, out) {
  const worker = join(repo, 'cloudflare/worker.js');
  const mf = new Miniflare({
    modules: [
      { type: 'ESModule', path: join(repo, 'cloudflare/bench-counter.js'), contents: COUNTER },
      { type: 'ESModule', path: worker },
    ],
    compatibilityDate: '2026-04-01',
    r2Buckets: ['PROFILES'],
    bindings: { PREFIX, CACHE: cache, BENCH_R2_DELAY_MS: String(delay) },
    host: '127.0.0.1',
    port: 0,
    // The request's `cf` object from a placeholder: miniflare would otherwise fetch one from the internet.
    cf: false,
  });
  const url = await mf.ready;
  const bucket = await mf.getR2Bucket('PROFILES');
  const httpMetadata = { contentType: 'application/json; charset=utf-8', cacheControl: 'public, s-maxage=30, stale-while-revalidate=60' };
  for (const file of files) await bucket.put(`${PREFIX}/${file}`, new Uint8Array(readFileSync(join(out, file))), { httpMetadata });
  return { cache, delay, origin: url.origin, mf };
}

const reads = async (host) => Number(await (await fetch(`${host.origin}/__bench/reads`)).text());

/** Both configurations answer the same profile before anything is measured. */
async function checkAnswers(host, user) {
  const answer = await fetch(`${host.origin}/api/v1/users/${user.toUpperCase()}`);
  const json = await answer.json();
  if (answer.status !== 200 || json.data?.username?.toLowerCase() !== user)
    throw new Error(`CACHE=${host.cache} answered ${answer.status} for ${user}`);
}

async function drive(host, paths) {
  let next = 0;
  const before = await reads(host);
  const result = await autocannon({
    url: host.origin,
    connections: CONNECTIONS,
    duration: DURATION,
    requests: [{ setupRequest: (request) => ({ ...request, path: paths[next++ % paths.length] }) }],
  });
  const total = result.requests.total;
  // A wrong answer ends the bench; a socket error is counted and reported (workerd's local server
  // resets an odd keep-alive connection under load).
  if (result.non2xx > 0) throw new Error(`CACHE=${host.cache}, R2 delay ${host.delay} ms: ${result.non2xx} non-2xx answers of ${total}`);
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    readsPerRequest: ((await reads(host)) - before) / total,
    errors: result.errors,
    total,
  };
}

function workloads(users) {
  const mixedCase = (name, i) => (i % 2 ? name.toUpperCase() : name);
  const forms = [(n) => `/api/v1/users/${n}`, (n) => `/service-api/v1/users/${n}`, (n) => `/api/v1/users?username=${n}`];
  const mix = Array.from({ length: 5000 }, (_, i) => forms[i % 3](mixedCase(users[(i * 7919) % users.length], i)));
  return { hot: [`/api/v1/users/${users[0].toUpperCase()}`], mix };
}

function table(results) {
  const rows = [
    '| R2 read | workload | CACHE | req/s | p50 ms | p99 ms | R2 reads per request | socket errors |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const [key, byCache] of Object.entries(results)) {
    const [delay, name] = key.split(' ');
    const read = delay === '0' ? 'local' : `local + ${delay} ms (model)`;
    for (const cache of ['on', 'off']) {
      const runs = byCache[cache];
      const errors = `${runs.reduce((n, r) => n + r.errors, 0)} of ${runs.reduce((n, r) => n + r.total, 0)}`;
      rows.push(
        `| ${read} | ${name} | ${cache} | ${Math.round(median(runs.map((r) => r.rps)))} | ${median(runs.map((r) => r.p50))} | ${median(runs.map((r) => r.p99))} | ${median(runs.map((r) => r.readsPerRequest)).toFixed(3)} | ${errors} |`,
      );
    }
    const ratio = median(byCache.on.map((r) => r.rps)) / median(byCache.off.map((r) => r.rps));
    rows.push(`| ${read} | ${name} | on / off | ${ratio.toFixed(2)}x | | | | |`);
  }
  return rows.join('\n');
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'profile-snapshot-worker-bench-'));
  const hosts = [];
  try {
    const db = join(work, 'profiles.db');
    const out = join(work, 'dist');
    cli('seed', '--db', db, '--users', String(USERS));
    cli('build', '--db', db, '--out', out);
    const files = publicFiles(out);
    const users = readdirSync(join(out, 'api/v1/users'));
    log(
      `profile-snapshot Worker cache bench: ${users.length} published profiles (${files.length} objects), ${CONNECTIONS} connections, ${DURATION} s x ${RUNS} runs per case`,
    );
    const results = {};
    for (const delay of DELAYS) {
      const pair = [await startWorker('on', delay, files, out), await startWorker('off', delay, files, out)];
      hosts.push(...pair);
      for (const host of pair) await checkAnswers(host, users[0]);
      for (const [name, paths] of Object.entries(workloads(users))) {
        const cases = (results[`${delay} ${name}`] = { on: [], off: [] });
        for (let run = 0; run < RUNS; run++) {
          for (const host of run % 2 ? [...pair].reverse() : pair) cases[host.cache].push(await drive(host, paths));
        }
      }
    }
    const miniflare = JSON.parse(readFileSync(join(repo, 'node_modules/miniflare/package.json'), 'utf8')).version;
    const machine = `${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, Linux ${release()}, Node ${process.version}, miniflare ${miniflare} (workerd)`;
    const report = table(results);
    log(`\n${machine}\n\n${report}`);
    writeSection(
      REPORT,
      'worker',
      `<!-- worker:start -->
## The Cloudflare Worker's cache (workerd)

\`npm run bench:worker\` (\`node scripts/bench-worker.mjs --users ${USERS} --duration ${DURATION} --runs ${RUNS} --connections ${CONNECTIONS} --r2-delay-ms ${DELAYS.join(',')}\`):
the committed \`cloudflare/worker.js\` in workerd through miniflare, its local R2 bucket holding a
built snapshot (${users.length} profiles, ${files.length} objects), driven by autocannon with CACHE "on" and "off"
in the same run, runs alternated, medians of ${RUNS}. Machine: ${machine}.

${report}

"local": R2 is a file on this machine, so those rows say what the cache costs in the runtime itself.
"local + N ms (model)": each R2 read first waits N ms, a stand-in for the round trip from a data
centre to the bucket's region; a model, not a measurement of R2. On Cloudflare each R2 read is also
a billed operation: the cache takes a hot document from one read per request to one per data centre
per 30 s. The default is CACHE "on" for that reason. A miss costs a cache write besides the read,
which in the local runtime costs more than a local read saves (the local mix rows): CACHE "off" suits
a deployment whose traffic rarely asks for the same document twice within 30 s.
<!-- worker:end -->`,
    );
  } finally {
    for (const host of hosts) await host.mf.dispose();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((error) => {
  process.stderr.write(`bench-worker: ${error.stack ?? error}\n`);
  process.exitCode = 1;
});
