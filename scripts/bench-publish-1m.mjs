/**
 * The publish benchmark at scale: `profile-snapshot publish` of a million users (about 1.76M objects
 * and a 700 MB creators list) into a bucket 25 ms away, as whole processes:
 *
 *   - cold: the first publish into an empty prefix, at each --concurrency of the list (32, 64, 128,
 *     256 by default), one run each (each takes minutes at 1M): seconds, objects/s, peak RSS, CPU;
 *   - then, at the fastest concurrency: quiet (nothing changed; median of --repeats runs) and 1%
 *     changed (1% of the users' view counts changed, as bench-publish.mjs does, rebuilt, published;
 *     median of --repeats runs, a different 1% each round).
 *
 * Targets (printed as met / missed): cold 1M <= 15 min with peak RSS <= 600 MB, 1% <= 20 s, quiet <= 1 s.
 *
 * The store is seededStore()'s (cached in .bench/stores). The tree is built on tmpfs
 * (/dev/shm/ps-1m-tree for 1M, /dev/shm/ps-<n>-tree otherwise) from a working copy of the store
 * (/dev/shm/ps-1m.db ...); a stamp beside it (<tree>.stamp.json) names the seed it was built from,
 * and a later run reuses the tree without building when it still matches. The 1% rounds change the
 * working copy; at the end the tree is brought back to the pristine seed (one more build), so the next
 * run (or anyone else) can reuse it; --no-restore leaves it as the last round made it.
 *
 * The bucket: scripts/bench-s3-memory.mjs, a minimal S3-compatible server in plain node:http, in a
 * child process of its own: in-memory index (size, MD5 ETag, stored headers, last-modified), bodies
 * hashed and dropped except the publisher's own small record and leases under .profile-snapshot/,
 * which it reads back. It honours conditional writes (If-None-Match: *, If-Match -> 412), so publish
 * runs without --single-writer: the lease, the precondition probe and the fenced record are part of
 * what is measured.
 *
 * Where the 25 ms sit: in the server process (--delay-in server, the default): every answer is held
 * 25 ms after the request was handled, on a timer. A separate proxy process would read, parse and
 * re-send every request and answer (about 1.8M of each, 4 GB of bodies) on a machine with two cores:
 * publisher, server and proxy would then share two cores, and the publisher (the thing measured) could
 * no longer count on one of its own. A timer in the server costs next to nothing, and for the
 * publisher it is the same thing: each request holds its socket and its slot in the pool for the
 * server's time plus 25 ms. `--delay-in proxy` runs the separate proxy anyway, to compare.
 *
 * Each publish runs under /usr/bin/time (wall seconds, peak RSS, user and system CPU); without it, the
 * peak RSS is read from /proc/<pid>/status (VmHWM). The server's CPU seconds per run are reported
 * too: if they approach the wall time, the server is the bottleneck and the figures are not the
 * publisher's. From the server's request timeline each run also shows where its time went (reading
 * the record, listing, uploads, the creators list's parts, the state write).
 *
 *   node scripts/bench-publish-1m.mjs [--users 1000000] [--concurrency-list 32,64,128,256] [--repeats 3]
 *        [--delay-ms 25] [--delay-in server|proxy] [--scenarios cold,quiet,changed] [--best <c>]
 *        [--cpu-prof <dir>] [--no-restore] [--bin <path to profile-snapshot.js>] [--baseline-bin <path>] [--report BENCHMARKS.md]
 *
 * `--report FILE` writes the section `bench-publish-1m` of FILE (report-section.mjs); without it,
 * nothing is written but the table on stdout (and the JSON of every run in --json-out, /tmp/bench-publish-1m.json by default).
 * `--cpu-prof DIR` runs every publish under `node --cpu-prof` (profiles in DIR; the timings then carry
 * the profiler's overhead); summarize them with scripts/cpu-prof-summary.mjs.
 */
import { fork, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { BENCH_ENV, machine, SNAPSHOT_EPOCH, seededStore } from './bench-common.mjs';
import { writeSection } from './report-section.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const USERS = Number(value('--users', '1000000'));
const CONCURRENCIES = value('--concurrency-list', '32,64,128,256').split(',').map(Number);
const REPEATS = Number(value('--repeats', '3'));
const DELAY_MS = Number(value('--delay-ms', '25'));
const DELAY_IN = value('--delay-in', 'server');
const SCENARIOS = new Set(value('--scenarios', 'cold,quiet,changed').split(','));
const BEST = value('--best', undefined);
const CPU_PROF = value('--cpu-prof', undefined);
const RESTORE = !args.includes('--no-restore');
const REPORT = value('--report', undefined);
const JSON_OUT = value('--json-out', '/tmp/bench-publish-1m.json');
const bin = resolve(value('--bin', join(repo, 'bin/profile-snapshot.js')));
// --baseline-bin: another build of the tool (e.g. the commit before a change) whose quiet and 1%
// publishes alternate with --bin's over the same prefix, for ratios measured in the same run.
const BASELINE_BIN = value('--baseline-bin', undefined);
let currentBin = bin;
const storeDir = value('--store-dir', join(repo, '.bench/stores'));
const label = USERS % 1_000_000 === 0 ? `${USERS / 1_000_000}m` : USERS % 1000 === 0 ? `${USERS / 1000}k` : String(USERS);
const tree = value('--tree', `/dev/shm/ps-${label}-tree`);
const workDb = value('--work-db', `/dev/shm/ps-${label}.db`);
const stampFile = `${tree}.stamp.json`;
const BUCKET = 'bench';
const CREDENTIALS = { AWS_ACCESS_KEY_ID: 'bench', AWS_SECRET_ACCESS_KEY: 'bench', AWS_REGION: 'us-east-1' };
const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
const TARGETS = { coldSeconds: 15 * 60, coldRssMb: 600, changedSeconds: 20, quietSeconds: 1 };

const log = (line) => process.stdout.write(`${line}\n`);
const median = (values) => values.toSorted((a, b) => a - b)[values.length >> 1];
const fmt = (n, digits = 2) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const int = (n) => Math.round(n).toLocaleString('en-US');

// ------------------------------------------------------------------------------------------------
// The tree: built once from the seed, reused while its stamp matches.
// ------------------------------------------------------------------------------------------------

function seedStamp(seed, touched) {
  const s = statSync(seed);
  return { seed: resolve(seed), size: s.size, mtimeMs: s.mtimeMs, epoch: SNAPSHOT_EPOCH, baseUrl: BENCH_ENV.BASE_URL, touched };
}

const sameStamp = (a, b) => a && b && ['seed', 'size', 'mtimeMs', 'epoch', 'baseUrl', 'touched'].every((k) => a[k] === b[k]);
const readStamp = () => (existsSync(stampFile) ? JSON.parse(readFileSync(stampFile, 'utf8')) : undefined);

function runQuiet(command, commandArgs, env = BENCH_ENV) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, commandArgs, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '',
      err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) =>
      code === 0 ? resolvePromise({ out, err }) : reject(new Error(`${commandArgs.join(' ')} failed (${code}):\n${err}`)),
    );
  });
}

async function build(full) {
  const started = performance.now();
  const { err } = await runQuiet(process.execPath, [bin, 'build', '--db', workDb, '--out', tree, ...(full ? ['--full'] : [])]);
  const seconds = (performance.now() - started) / 1000;
  log(`  build${full ? ' --full' : ''}: ${fmt(seconds)} s: ${err.trim().split('\n').at(-1)}`);
  return seconds;
}

/** The pristine tree of the seed: reused when the stamp says so, else (re)built from a fresh copy. */
async function pristineTree(seed) {
  const wanted = seedStamp(seed, 0);
  if (sameStamp(readStamp(), wanted) && existsSync(join(tree, '.profile-snapshot')) && existsSync(workDb)) {
    log(`tree: reusing ${tree} (built from ${seed}, unchanged)`);
    return;
  }
  log(`tree: building ${tree} from a copy of ${seed} (${workDb})`);
  rmSync(stampFile, { force: true });
  copyFileSync(seed, workDb);
  await build(true);
  writeFileSync(stampFile, `${JSON.stringify(wanted, null, 2)}\n`);
}

/** Changes the view counts of 1/share of the users (bench-publish.mjs's rule: a different 1% each round). */
function touch(share, round) {
  const store = new Database(workDb);
  const every = Math.round(1 / share);
  const changed = store.prepare(`UPDATE users SET views = views + ? WHERE id % ${every} = ?`).run(round, round % every).changes;
  store.close();
  return changed;
}

// ------------------------------------------------------------------------------------------------
// The bucket: the in-memory server (and, with --delay-in proxy, a proxy in front of it).
// ------------------------------------------------------------------------------------------------

function forkServer(serverArgs) {
  const child = fork(join(repo, 'scripts/bench-s3-memory.mjs'), serverArgs, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const pending = [];
  child.on('message', (message) => pending.shift()?.(message));
  const ask = (message) => new Promise((resolvePromise) => (pending.push(resolvePromise), child.send(message)));
  return new Promise((resolvePromise, reject) => {
    child.stdout.once('data', (d) => resolvePromise({ port: JSON.parse(String(d)).port, ask, child, close: () => child.kill('SIGKILL') }));
    child.once('exit', (code) => reject(new Error(`the S3 server exited (${code})`)));
  });
}

async function startBucket() {
  const server = await forkServer(['--delay-ms', String(DELAY_IN === 'server' ? DELAY_MS : 0)]);
  if (DELAY_IN !== 'proxy') return { server, endpoint: `http://127.0.0.1:${server.port}`, close: server.close };
  const proxy = await forkServer(['--proxy', String(server.port), '--delay-ms', String(DELAY_MS)]);
  return {
    server,
    proxy,
    endpoint: `http://127.0.0.1:${proxy.port}`,
    close: () => (proxy.close(), server.close()),
  };
}

const cpuSeconds = (usage) => (usage.user + usage.system) / 1e6;

// ------------------------------------------------------------------------------------------------
// One publish, as a whole process.
// ------------------------------------------------------------------------------------------------

let profileCount = 0;

async function publish(bucket, prefix, concurrency, scenario) {
  await bucket.server.ask({ op: 'reset' });
  const serverBefore = await bucket.server.ask({ op: 'stats' });
  const proxyBefore = bucket.proxy ? await bucket.proxy.ask({ op: 'stats' }) : undefined;
  const timeFile = `/tmp/bench-publish-1m-time-${process.pid}.txt`;
  const nodeArgs = CPU_PROF
    ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF, '--cpu-prof-name', `publish-${scenario}-c${concurrency}-${++profileCount}.cpuprofile`]
    : [];
  const publishArgs = [
    ...nodeArgs,
    currentBin,
    'publish',
    '--out',
    tree,
    '--to',
    `s3://${BUCKET}/${prefix}`,
    '--endpoint',
    bucket.endpoint,
    '--concurrency',
    String(concurrency),
    '--json',
  ];
  const [command, commandArgs] = TIME
    ? [TIME, ['-f', '%e %M %U %S', '-o', timeFile, process.execPath, ...publishArgs]]
    : [process.execPath, publishArgs];
  const startedAt = Date.now();
  const started = performance.now();
  const child = spawn(command, commandArgs, { env: { ...BENCH_ENV, ...CREDENTIALS }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '',
    err = '',
    hwmKb = 0;
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  // Without /usr/bin/time: the peak RSS as the kernel keeps it (VmHWM), read until the end.
  const poll = TIME
    ? undefined
    : setInterval(() => {
        try {
          const hwm = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
          if (hwm) hwmKb = Math.max(hwmKb, Number(hwm[1]));
        } catch {
          // gone
        }
      }, 100);
  const code = await new Promise((resolvePromise) => child.on('close', resolvePromise));
  const wall = (performance.now() - started) / 1000;
  clearInterval(poll);
  if (code !== 0) throw new Error(`publish (${scenario}, --concurrency ${concurrency}) failed (${code}):\n${err}`);
  let seconds = wall,
    rssMb = hwmKb / 1024,
    cpu;
  if (TIME) {
    const [e, m, u, s] = readFileSync(timeFile, 'utf8').trim().split('\n').at(-1).split(' ').map(Number);
    [seconds, rssMb, cpu] = [e, m / 1024, u + s];
    rmSync(timeFile, { force: true });
  }
  const report = JSON.parse(out);
  const serverAfter = await bucket.server.ask({ op: 'stats' });
  const proxyAfter = bucket.proxy ? await bucket.proxy.ask({ op: 'stats' }) : undefined;
  const stats = serverAfter.stats;
  if (stats.bodylessGets > 0 || stats.notImplemented.length > 0)
    throw new Error(
      `the S3 server could not answer: ${stats.bodylessGets} bodyless GETs, not implemented: ${stats.notImplemented.join('; ')}`,
    );
  const result = {
    scenario,
    concurrency,
    prefix,
    seconds,
    wall,
    rssMb,
    cpu,
    objects: report.objects,
    profiles: report.profiles,
    list: report.list,
    bytes: report.bytes,
    requests: report.requests,
    retries: report.retries,
    reportSeconds: report.seconds,
    objectsPerSecond: report.objects.put / seconds,
    serverCpu: cpuSeconds(serverAfter.cpu) - cpuSeconds(serverBefore.cpu),
    serverRssMb: serverAfter.rssMb,
    proxyCpu: proxyAfter ? cpuSeconds(proxyAfter.cpu) - cpuSeconds(proxyBefore.cpu) : undefined,
    serverRequests: stats.requests,
    serverErrors: stats.errors,
    phases: phases(stats.timeline, startedAt, seconds),
    summary: err.trim().split('\n').at(-1),
  };
  log(
    `  ${scenario}, --concurrency ${concurrency}: ${fmt(seconds)} s, ${int(result.objectsPerSecond)} objects/s, ` +
      `peak RSS ${int(rssMb)} MB, CPU ${cpu === undefined ? '?' : fmt(cpu, 1)} s (server ${fmt(result.serverCpu, 1)} s` +
      `${result.proxyCpu === undefined ? '' : `, proxy ${fmt(result.proxyCpu, 1)} s`}), ${int(report.objects.put)} put, ` +
      `${int(report.objects.unchanged)} unchanged, ${report.retries} retries`,
  );
  log(`    time line: ${result.phases.text}`);
  return result;
}

/** Where a publish's time went, from the server's first and last request of each kind (seconds since spawn). */
function phases(timeline, startedAt, total) {
  const at = (kind, edge = 'first') => (timeline[kind] ? (timeline[kind][edge] - startedAt) / 1000 : undefined);
  const span = (kind) => (timeline[kind] ? `${fmt(at(kind))}-${fmt(at(kind, 'last'))}` : undefined);
  const firstRequest = Math.min(...Object.values(timeline).map((t) => t.first)) - startedAt;
  const parts = {
    'first request': fmt(firstRequest / 1000),
    'record read': span('GetObject .profile-snapshot/remote-state'),
    'lock taken': at('PutObject .profile-snapshot/lock') === undefined ? undefined : fmt(at('PutObject .profile-snapshot/lock')),
    listing: span('ListObjectsV2'),
    'intent written': timeline['PutObject .profile-snapshot/remote-intent']
      ? fmt(at('PutObject .profile-snapshot/remote-intent', 'last'))
      : undefined,
    'object PUTs': span('PutObject'),
    'list parts': span('UploadPart'),
    'list completed': timeline.CompleteMultipartUpload ? fmt(at('CompleteMultipartUpload', 'last')) : undefined,
    deletes: span('DeleteObjects'),
    'state written': timeline['PutObject .profile-snapshot/remote-state']
      ? fmt(at('PutObject .profile-snapshot/remote-state', 'last'))
      : undefined,
    exit: fmt(total),
  };
  const text = Object.entries(parts)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return { ...parts, text };
}

// ------------------------------------------------------------------------------------------------

async function main() {
  if (CPU_PROF) mkdirSync(CPU_PROF, { recursive: true });
  log(`publish benchmark: ${USERS.toLocaleString('en-US')} users, ${DELAY_MS} ms per request (in the ${DELAY_IN}), ${machine()}`);
  const seed = seededStore(storeDir, USERS);
  await pristineTree(seed);
  const manifestObjects = countTreeObjects();
  log(`tree: ${int(manifestObjects)} objects to publish`);
  const bucket = await startBucket();
  const results = { cold: [], quiet: [], changed: [], setup: [], baselineQuiet: [], baselineChanged: [] };
  const asBaseline = async (run) => {
    currentBin = resolve(BASELINE_BIN);
    try {
      return await run();
    } finally {
      currentBin = bin;
    }
  };
  let restored = false;
  try {
    if (SCENARIOS.has('cold')) {
      log(`cold publishes into empty prefixes, --concurrency ${CONCURRENCIES.join(', ')}:`);
      let best;
      for (const concurrency of CONCURRENCIES) {
        const result = await publish(bucket, `cold-c${concurrency}`, concurrency, 'cold');
        results.cold.push(result);
        if (result.objects.put !== manifestObjects)
          throw new Error(`cold publish put ${result.objects.put} objects, expected ${manifestObjects}`);
        // Keep only the fastest prefix populated (the quiet and 1% runs publish over it): the server's memory stays small.
        if (best === undefined || result.seconds < best.seconds) {
          if (best !== undefined) await bucket.server.ask({ op: 'drop', prefix: `${best.prefix}/` });
          best = result;
        } else await bucket.server.ask({ op: 'drop', prefix: `${result.prefix}/` });
      }
    }
    const bestConcurrency =
      BEST !== undefined
        ? Number(BEST)
        : results.cold.length > 0
          ? results.cold.toSorted((a, b) => a.seconds - b.seconds)[0].concurrency
          : CONCURRENCIES[0];
    let prefix = results.cold.find((r) => r.concurrency === bestConcurrency)?.prefix;
    if ((SCENARIOS.has('quiet') || SCENARIOS.has('changed')) && prefix === undefined) {
      log(`setup: a cold publish at --concurrency ${bestConcurrency} for the quiet and 1% runs:`);
      prefix = `setup-c${bestConcurrency}`;
      results.setup.push(await publish(bucket, prefix, bestConcurrency, 'setup'));
    }
    if (SCENARIOS.has('quiet')) {
      log(`quiet publishes (nothing changed), --concurrency ${bestConcurrency}:`);
      for (let i = 0; i < REPEATS; i++) {
        if (BASELINE_BIN) results.baselineQuiet.push(await asBaseline(() => publish(bucket, prefix, bestConcurrency, 'quiet (baseline)')));
        results.quiet.push(await publish(bucket, prefix, bestConcurrency, 'quiet'));
      }
    }
    if (SCENARIOS.has('changed')) {
      log(`1% changed publishes, --concurrency ${bestConcurrency}:`);
      // With a baseline, the two take turns (each round a different 1%): baseline, then --bin.
      const runs = BASELINE_BIN ? ['baseline', 'bin'] : ['bin'];
      let touched = 0;
      for (let round = 1; round <= REPEATS; round++) {
        for (const who of runs) {
          const users = touch(0.01, ++touched);
          writeFileSync(stampFile, `${JSON.stringify(seedStamp(seed, touched), null, 2)}\n`);
          log(`  round ${round}${who === 'baseline' ? ' (baseline)' : ''}: ${int(users)} users' view counts changed`);
          const buildSeconds = await build(false);
          const publishOnce = () => publish(bucket, prefix, bestConcurrency, who === 'baseline' ? '1% changed (baseline)' : '1% changed');
          const result = { ...(await (who === 'baseline' ? asBaseline(publishOnce) : publishOnce())), buildSeconds, usersChanged: users };
          (who === 'baseline' ? results.baselineChanged : results.changed).push(result);
        }
      }
      if (RESTORE) {
        log('tree: back to the pristine seed');
        copyFileSync(seed, workDb);
        await build(false);
        writeFileSync(stampFile, `${JSON.stringify(seedStamp(seed, 0), null, 2)}\n`);
        restored = true;
      }
    }
    const all = {
      users: USERS,
      objects: manifestObjects,
      delayMs: DELAY_MS,
      delayIn: DELAY_IN,
      machine: machine(),
      bestConcurrency,
      ...results,
    };
    writeFileSync(JSON_OUT, `${JSON.stringify(all, null, 2)}\n`);
    const text = render(all);
    log('');
    log(text);
    if (REPORT) {
      writeSection(REPORT, 'bench-publish-1m', `<!-- bench-publish-1m:start -->\n${text}\n<!-- bench-publish-1m:end -->`);
      log(`figures written to ${REPORT} (section bench-publish-1m)`);
    }
  } finally {
    bucket.close();
    if (!restored && SCENARIOS.has('changed') && RESTORE)
      log(`note: ${tree} may not be pristine; its stamp says so, the next run rebuilds it`);
  }
}

/** Objects a cold publish puts: both aliases of every profile, and every other file of the manifest. */
function countTreeObjects() {
  const manifest = join(tree, '.profile-snapshot');
  // The publish's own report is the authority; this count is only to check a cold publish put everything.
  let profiles = 0,
    files = 0;
  const dirs = ['api/v1/users', 'service-api/v1/users'];
  for (const dir of dirs) profiles += readdirCount(join(tree, dir));
  for (const file of ['service-api/v1/creators', 'service-api/v1/.creators.gz', 'api/v1/openapi.json'])
    if (existsSync(join(tree, file))) files++;
  files += readdirCount(join(tree, '_errors'));
  if (!existsSync(manifest)) throw new Error(`${tree} has no .profile-snapshot/`);
  return profiles + files;
}

function readdirCount(dir) {
  try {
    return readdirSync(dir).length;
  } catch {
    return 0;
  }
}

/** The new path's median time over the baseline's, e.g. '0.25x'. */
function ratioOf(runs, baselineRuns) {
  if (runs.length === 0 || baselineRuns.length === 0) return '';
  return `${(median(runs.map((r) => r.seconds)) / median(baselineRuns.map((r) => r.seconds))).toFixed(2)}x`;
}

function render(all) {
  const base = all.cold[0];
  const ratio = (a, b) => (b ? `${(a / b).toFixed(2)}x` : '');
  const coldRows = all.cold.map(
    (r) =>
      `| ${r.concurrency} | ${fmt(r.seconds, 1)} (${fmt(r.seconds / 60, 1)} min) | ${int(r.objectsPerSecond)} | ${int(r.rssMb)} | ${r.cpu === undefined ? '' : fmt(r.cpu, 0)} | ${fmt(r.serverCpu, 0)} | ${r.retries} | ${ratio(r.seconds, base.seconds)} | ${ratio(r.objectsPerSecond, base.objectsPerSecond)} | ${ratio(r.rssMb, base.rssMb)} |`,
  );
  const phaseRows = [...all.cold, ...all.setup].map((r) => `- ${r.scenario} --concurrency ${r.concurrency}: ${r.phases.text}`);
  const row = (name, runs, target) => {
    if (runs.length === 0) return undefined;
    const seconds = median(runs.map((r) => r.seconds));
    const mid = runs.find((r) => r.seconds === seconds);
    const verdict = name.includes('baseline')
      ? ''
      : seconds <= (name === 'quiet' ? TARGETS.quietSeconds : TARGETS.changedSeconds)
        ? 'met'
        : '**missed**';
    return `| ${name} | ${all.bestConcurrency} | ${fmt(seconds)} | ${runs.map((r) => fmt(r.seconds)).join(', ')} | ${int(mid.objects.put)} | ${int(mid.rssMb)} | ${mid.cpu === undefined ? '' : fmt(mid.cpu, 1)} | ${Object.values(
      mid.requests,
    )
      .reduce((a, b) => a + b, 0)
      .toLocaleString('en-US')} | ${target} | ${verdict} |`;
  };
  const bestCold = all.cold.toSorted((a, b) => a.seconds - b.seconds)[0];
  const coldVerdict = bestCold
    ? `Cold target (<= 15 min and <= 600 MB peak RSS): ${bestCold.seconds <= TARGETS.coldSeconds && bestCold.rssMb <= TARGETS.coldRssMb ? 'met' : '**missed**'} at best (--concurrency ${bestCold.concurrency}: ${fmt(bestCold.seconds / 60, 1)} min, ${int(bestCold.rssMb)} MB).`
    : '';
  const changedPhases = [...all.quiet, ...all.changed, ...all.baselineQuiet, ...all.baselineChanged].map(
    (r) => `- ${r.scenario}: ${r.phases.text}${r.buildSeconds ? ` (build before it: ${fmt(r.buildSeconds)} s)` : ''}`,
  );
  return [
    `## Publishing a million users (bench-publish-1m)`,
    '',
    `Written by \`node scripts/bench-publish-1m.mjs\` on ${new Date().toISOString().slice(0, 10)}. Machine: ${all.machine}.`,
    '',
    `${all.users.toLocaleString('en-US')} users (seededStore), ${int(all.objects)} objects, built once on tmpfs; published by \`profile-snapshot publish\` ` +
      `(without --single-writer) into scripts/bench-s3-memory.mjs, an in-memory S3-compatible server in its own process that honours ` +
      `conditional writes, ${all.delayMs} ms added to every answer (in the ${all.delayIn} process). Whole processes under /usr/bin/time: ` +
      `wall seconds, peak RSS, user+system CPU of the publisher; the server's CPU over the same run.`,
    '',
    ...(all.cold.length
      ? [
          `Cold (first publish into an empty prefix; one run each; ratios to --concurrency ${base.concurrency}):`,
          '',
          '| concurrency | seconds | objects/s | peak RSS (MB) | publisher CPU (s) | server CPU (s) | retries | time ratio | objects/s ratio | RSS ratio |',
          '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|',
          ...coldRows,
          '',
          coldVerdict,
          '',
          "Where the time went (seconds since the process started, from the server's first and last request of each kind):",
          '',
          ...phaseRows,
          '',
        ]
      : []),
    ...(all.quiet.length || all.changed.length
      ? [
          `At --concurrency ${all.bestConcurrency} (medians of ${REPEATS} runs; 1%: a different 1% of the users each round, rebuilt, then published):`,
          '',
          '| scenario | concurrency | seconds | runs | objects put | peak RSS (MB) | CPU (s) | requests | target | |',
          '|---|---:|---:|---|---:|---:|---:|---:|---|---|',
          row('quiet', all.quiet, '<= 1 s'),
          row('quiet, baseline', all.baselineQuiet, `${ratioOf(all.quiet, all.baselineQuiet)} of the baseline's time`),
          row('1% changed', all.changed, '<= 20 s'),
          row('1% changed, baseline', all.baselineChanged, `${ratioOf(all.changed, all.baselineChanged)} of the baseline's time`),
          '',
          ...changedPhases,
        ].filter((line) => line !== undefined)
      : []),
  ].join('\n');
}

await main();
