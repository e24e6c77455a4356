#!/usr/bin/env node
/**
 * The origin server benchmark: `profile-snapshot serve` against nginx (Debian's nginx-light, 2
 * worker processes, a config giving the contract's headers and error documents) on the same tree of
 * built profiles and the same request mix, driven by autocannon in the same run:
 *
 *   - every published profile once, in random order, under either alias (/api/v1/users/<name>,
 *     /service-api/v1/users/<name>) or the query form (/api/v1/users?username=<name>), lower case
 *     or mixed case;
 *   - misses (names nobody has) in each form, 15% of the requests: 404 USER_NOT_FOUND.
 * All connections share one walk through the mix, carrying on from round to round, as a CDN's
 * misses and revalidations spread over the whole tree: no server answers from a small hot set.
 *
 * nginx-light cannot lower-case a URL. Its config maps every published name to itself with `map`,
 * whose string keys nginx looks up case-insensitively: a mixed-case name finds its canonical file
 * through one hash look-up, a miss finds nothing and gets the USER_NOT_FOUND document with 404, and
 * the query form is a `map` on `$arg_username`. Both servers are sent the very same requests.
 *
 * A warm-up for each server walks the whole mix `--warmup-walks` times (default 4): the rounds then see
 * each server as it runs for hours behind a CDN, its caches (nginx's: the kernel's page cache; serve's:
 * its own) as full as they get; the warm-up's own figures are printed, and the time to a first answer
 * is measured apart. Each of serve's workers keeps its own cache and sees only the requests of its
 * connections: after k walks a worker of two has not yet seen about 1/2^k of the documents, so two
 * walks would leave a quarter of each cache to be filled during the rounds (4 walks: 1/16). The
 * servers take turns: `--rounds` rounds of `--seconds` each, the order alternating; medians count,
 * and every figure is printed with its ratio to nginx's. Every answer's status is checked against
 * the one its request expects, with the contract headers; anything else is counted as unexpected.
 * Installs nginx-light with apt-get when nginx is missing (only here).
 *
 * Beside throughput and latency: each server's time to its first answer (from its start), and the
 * peak RSS of all its processes together (nginx's master and workers; serve's primary and workers),
 * sampled every 250 ms from /proc.
 *
 *   node scripts/bench-serve.mjs [--users 100000] [--store-dir .bench/stores] [--work-dir <dir>]
 *        [--connections 50] [--seconds 10] [--rounds 5] [--warmup-walks 4] [--report BENCHMARKS.md | --no-report]
 *        [--section serve] [--serve-workers <n>] (serve's --workers; default: its own, a worker per core)
 *        [--serve-script <file>]   (measures `node <file> <out dir>` in place of `serve`, for experiments)
 *
 * Also `import { benchServe } from './bench-serve.mjs'` (same options, camel-cased), which resolves
 * with the figures. The servers, the tree and the /proc readings are ./bench-servers.mjs, shared with
 * bench-serve-hold.mjs, which measures what hostile clients (pipelining, never reading) can make
 * `serve` hold, against nginx on the same tree.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { SERVE_DEFAULTS } from '../build/cli/commands/serve.js';
import { prng } from '../build/seed/synthetic.js';
import { machine, seededStore } from './bench-common.mjs';
import { builtTree, ensureNginx, HEADERS, startNginx, startServe, treeCpuSeconds, treeRss } from './bench-servers.mjs';
import { writeSection } from './report-section.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const log = (line) => process.stdout.write(`${line}\n`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ratio = (a, b) => (b ? a / b : NaN);

const DEFAULTS = {
  users: 100_000,
  storeDir: join(repo, '.bench/stores'),
  workDir: '/dev/shm/profile-snapshot-serve-bench',
  connections: 50,
  seconds: 10,
  rounds: 5,
  warmupWalks: 4,
  report: join(repo, 'BENCHMARKS.md'),
  section: 'serve',
  serveWorkers: undefined,
};

/** The forms of a request for a published profile, with their shares of those requests. */
const HIT_FORMS = [
  [0.3, (name) => `/api/v1/users/${name}`],
  [0.2, (name) => `/service-api/v1/users/${name}`],
  [0.15, (name, mixed) => `/api/v1/users/${mixed(name)}`],
  [0.1, (name, mixed) => `/service-api/v1/users/${mixed(name)}`],
  [0.1, (name) => `/api/v1/users?username=${name}`],
  [0.15, (name, mixed) => `/api/v1/users?username=${mixed(name)}`],
];
/** The forms of a miss (a name nobody has). */
const MISS_FORMS = [
  (name) => `/api/v1/users/${name}`,
  (name, mixed) => `/service-api/v1/users/${mixed(name)}`,
  (name) => `/api/v1/users?username=${name}`,
];
/** Misses, as a share of all requests. */
const MISS_SHARE = 0.15;

/**
 * The request mix: [path, expected status] pairs. Every published profile is asked for once, in a
 * form drawn by its share, and misses are mixed in; the whole is shuffled. A round walks through it
 * in order (one cursor for all connections), so a server cannot answer from a small hot set.
 */
function requestMix(names) {
  const next = prng(18); // the same mix on every run
  const published = new Set(names);
  const mixed = (name) => {
    const spelled = [...name].map((c) => (next() < 0.5 ? c.toUpperCase() : c)).join('');
    return spelled === name && /[a-z]/.test(name) ? name.replace(/[a-z]/, (c) => c.toUpperCase()) : spelled;
  };
  const hitForm = () => {
    let left = next();
    for (const [share, form] of HIT_FORMS) if ((left -= share) < 0) return form;
    return HIT_FORMS[0][1];
  };
  const mix = names.map((name) => [hitForm()(name, mixed), 200]);
  const misses = Math.round((names.length * MISS_SHARE) / (1 - MISS_SHARE));
  for (let i = 0; i < misses; i++) {
    let name;
    do name = `nobody${Math.floor(next() * 1e9)}`;
    while (published.has(name));
    mix.push([MISS_FORMS[i % MISS_FORMS.length](name, mixed), 404]);
  }
  for (let i = mix.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [mix[i], mix[j]] = [mix[j], mix[i]];
  }
  return mix;
}

/**
 * One autocannon run against `base`: req/s, p50, p99, and the answers that were not the expected
 * ones. autocannon starts every connection at the head of its request list; one request whose
 * `setupRequest` takes the next entry of the mix makes all connections share one walk through it,
 * and `walk` carries on from where the server's last run stopped.
 */
async function drive(base, mix, walk, { connections, seconds, amount }) {
  let unexpected = 0;
  const examples = [];
  const result = await autocannon({
    url: base,
    connections,
    ...(amount === undefined ? { duration: seconds } : { amount }),
    timeout: 10,
    requests: [
      {
        method: 'GET',
        setupRequest: (request, context) => {
          const [path, status] = mix[walk.next++ % mix.length];
          context.expected = { path, status };
          return { ...request, path };
        },
        onResponse: (answered, body, context, headers) => {
          const { path, status } = context.expected;
          const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
          const wrongHeader = Object.entries(HEADERS).find(([name, value]) => lower[name] !== value);
          const wrongBody = !body.startsWith(status === 200 ? '{"success":true' : '{"success":false');
          if (answered !== status || wrongHeader || wrongBody) {
            unexpected++;
            if (examples.length < 5)
              examples.push(`${path}: ${answered}${wrongHeader ? ` (${wrongHeader[0]}: ${lower[wrongHeader[0]]})` : ''}`);
          }
        },
      },
    ],
  });
  return {
    reqPerSec: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: result.requests.total,
    errors: result.errors + result.timeouts,
    unexpected,
    examples,
  };
}

/** The medians of a server's rounds, its totals and per-round figures. */
function summarize(runs) {
  return {
    reqPerSec: median(runs.map((r) => r.reqPerSec)),
    p50Ms: median(runs.map((r) => r.p50Ms)),
    p99Ms: median(runs.map((r) => r.p99Ms)),
    cpuUsPerRequest: median(runs.map((r) => r.cpuUsPerRequest)),
    requests: runs.reduce((n, r) => n + r.requests, 0),
    errors: runs.reduce((n, r) => n + r.errors, 0),
    unexpected: runs.reduce((n, r) => n + r.unexpected, 0),
    examples: runs.flatMap((r) => r.examples).slice(0, 5),
    rounds: runs.map(({ reqPerSec, p50Ms, p99Ms }) => ({ reqPerSec, p50Ms, p99Ms })),
  };
}

/** Measures `serve` against nginx; resolves with both servers' medians and serve's ratios to nginx. */
export async function benchServe(options = {}) {
  const o = { ...DEFAULTS, ...options };
  const out = builtTree(o.workDir, seededStore(o.storeDir, o.users));
  const nginx = ensureNginx();
  const names = readdirSync(join(out, 'api/v1/users'));
  const mix = requestMix(names);
  log(`bench-serve: ${names.length} published profiles; a mix of ${mix.length} requests; ${machine()}`);
  const servers = {
    nginx: await startNginx(nginx, out, names),
    serve: await startServe(out, { script: o.serveScript, workers: o.serveWorkers }),
  };
  const runs = { nginx: [], serve: [] };
  const peakRss = { nginx: 0, serve: 0 };
  const sampling = setInterval(() => {
    for (const name of ['nginx', 'serve']) peakRss[name] = Math.max(peakRss[name], treeRss(servers[name].pid));
  }, 250);
  try {
    // Each server walks the mix from its head, carrying on from run to run.
    const walks = { nginx: { next: 0 }, serve: { next: 0 } };
    for (const name of ['nginx', 'serve']) {
      const warmup = await drive(servers[name].base, mix, walks[name], { ...o, amount: mix.length * o.warmupWalks });
      log(
        `  warm-up ${name.padEnd(5)} ${warmup.reqPerSec.toFixed(0).padStart(6)} req/s  p99 ${warmup.p99Ms} ms  (${warmup.requests} requests)`,
      );
    }
    for (let round = 0; round < o.rounds; round++) {
      for (const name of round % 2 ? ['serve', 'nginx'] : ['nginx', 'serve']) {
        const cpuBefore = treeCpuSeconds(servers[name].pid);
        const run = await drive(servers[name].base, mix, walks[name], o);
        run.cpuUsPerRequest = ((treeCpuSeconds(servers[name].pid) - cpuBefore) * 1e6) / run.requests;
        runs[name].push(run);
        log(
          `  round ${round + 1} ${name.padEnd(5)} ${run.reqPerSec.toFixed(0).padStart(6)} req/s  p50 ${run.p50Ms} ms  p99 ${run.p99Ms} ms  CPU ${run.cpuUsPerRequest.toFixed(1)} µs/request  errors ${run.errors}  unexpected ${run.unexpected}`,
        );
      }
    }
  } finally {
    clearInterval(sampling);
    await Promise.all(Object.values(servers).map((s) => s.stop()));
  }
  const nginxFigures = { ...summarize(runs.nginx), peakRssMb: peakRss.nginx / 1e6, firstAnswerMs: servers.nginx.firstAnswerMs };
  const serveFigures = { ...summarize(runs.serve), peakRssMb: peakRss.serve / 1e6, firstAnswerMs: servers.serve.firstAnswerMs };
  const figures = {
    machine: machine(),
    nginxVersion: servers.nginx.version,
    users: names.length,
    mixSize: mix.length,
    connections: o.connections,
    seconds: o.seconds,
    rounds: o.rounds,
    warmupWalks: o.warmupWalks,
    nginx: nginxFigures,
    serve: serveFigures,
    /** Socket errors and unexpected answers of both servers: any makes the figures suspect. */
    failures: nginxFigures.errors + nginxFigures.unexpected + serveFigures.errors + serveFigures.unexpected,
    serveLabel: o.serveScript
      ? `\`node ${o.serveScript}\``
      : `\`serve\`${o.serveWorkers === undefined ? '' : ` --workers ${o.serveWorkers}`}`,
    ratios: {
      reqPerSec: ratio(serveFigures.reqPerSec, nginxFigures.reqPerSec),
      p50: ratio(serveFigures.p50Ms, nginxFigures.p50Ms),
      p99: ratio(serveFigures.p99Ms, nginxFigures.p99Ms),
      cpuPerRequest: ratio(serveFigures.cpuUsPerRequest, nginxFigures.cpuUsPerRequest),
      // Each round's two runs are back to back: their ratio cancels the machine's slower drift.
      pairedReqPerSec: median(runs.serve.map((run, i) => ratio(run.reqPerSec, runs.nginx[i].reqPerSec))),
    },
  };
  printFigures(figures);
  if (o.report) {
    writeSection(o.report, o.section, reportSection(figures, o.command ?? 'npm run bench:serve', o.section));
    log(`bench-serve: figures written to ${o.report}`);
  }
  return figures;
}

const x = (r) => `${r.toFixed(2)}x`;

function printFigures(f) {
  log(`bench-serve: medians of ${f.rounds} rounds of ${f.seconds} s, ${f.connections} connections`);
  for (const name of ['nginx', 'serve']) {
    const s = f[name];
    log(
      `  ${name.padEnd(5)} ${s.reqPerSec.toFixed(0).padStart(6)} req/s  p50 ${s.p50Ms} ms  p99 ${s.p99Ms} ms  CPU ${s.cpuUsPerRequest.toFixed(1)} µs/request  peak RSS ${s.peakRssMb.toFixed(0)} MB  first answer ${s.firstAnswerMs.toFixed(0)} ms  (${s.requests} requests, ${s.errors} socket errors, ${s.unexpected} unexpected answers)`,
    );
    for (const example of s.examples) log(`    unexpected: ${example}`);
  }
  log(
    `  serve/nginx: req/s ${x(f.ratios.reqPerSec)} (median of the rounds' own ratios ${x(f.ratios.pairedReqPerSec)}), p50 ${x(f.ratios.p50)}, p99 ${x(f.ratios.p99)}, CPU per request ${x(f.ratios.cpuPerRequest)}`,
  );
}

function reportSection(f, command, section) {
  const row = (name, s, r) =>
    `| ${name} | ${Math.round(s.reqPerSec).toLocaleString('en-US')} | ${r ? x(r.reqPerSec) : '1x'} | ${s.p50Ms} | ${r ? x(r.p50) : '1x'} | ${s.p99Ms} | ${r ? x(r.p99) : '1x'} | ${s.cpuUsPerRequest.toFixed(1)} | ${r ? x(r.cpuPerRequest) : '1x'} | ${s.peakRssMb.toFixed(0)} MB | ${s.firstAnswerMs.toFixed(0)} ms | ${s.errors} | ${s.unexpected} |`;
  const met = f.ratios.reqPerSec >= 1 && f.serve.p99Ms <= f.nginx.p99Ms + 2;
  const rounds = (s) => s.rounds.map((r) => `${Math.round(r.reqPerSec)} req/s p99 ${r.p99Ms} ms`).join('; ');
  return [
    `<!-- ${section}:start -->`,
    `## The origin server against nginx: ${f.users.toLocaleString('en-US')} profiles`,
    '',
    `Measured by \`${command}\` on ${new Date().toISOString().slice(0, 10)} (${f.machine}; ${f.nginxVersion}, nginx-light, 2 worker processes): ` +
      `both servers on the same tree of ${f.users.toLocaleString('en-US')} profiles on tmpfs, autocannon in the same run with ${f.connections} connections over 127.0.0.1, ` +
      `a warm-up each (${f.warmupWalks} walks through the whole mix, so that the rounds see each server as it runs behind a CDN for hours, its caches as full as they get; each of \`serve\`'s workers fills its own cache from its own connections' requests), then ${f.rounds} rounds of ${f.seconds} s each, the servers taking turns; medians. ` +
      `The mix (${f.mixSize.toLocaleString('en-US')} requests, shuffled): every published profile once, under either alias or the query form, lower or mixed case, and misses (404 USER_NOT_FOUND, 15%) in each form; all connections share one walk through it, carrying on from round to round, so neither server answers from a small hot set. ` +
      'nginx cannot lower-case a URL: its config maps every published name to itself with `map` (string keys match case-insensitively), so it answers the same requests as `serve`. ' +
      `\`serve\` runs with its defaults (a worker per core; a ${SERVE_DEFAULTS.cacheMiB} MiB answer cache for the whole server, shared out among the workers) unless the table says otherwise. ` +
      'autocannon runs in one thread on the same cores as the servers, and reports latency in whole milliseconds.',
    '',
    '| server | req/s | ratio | p50 ms | ratio | p99 ms | ratio | CPU µs/request | ratio | peak RSS, all processes | first answer | socket errors | unexpected answers |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    row('nginx', f.nginx),
    row(f.serveLabel, f.serve, f.ratios),
    '',
    `Each round: nginx ${rounds(f.nginx)}; ${f.serveLabel} ${rounds(f.serve)}. ` +
      `The median of the rounds' own ratios (the two runs of a round are back to back, so the machine's slower drift cancels): ${x(f.ratios.pairedReqPerSec)}.`,
    '',
    "Target (issue 50): at least nginx's req/s, p99 at most nginx's + 2 ms: " +
      `${met ? 'met' : '**missed**'}. An unexpected answer is a status other than the request's, a missing contract header or a body of the wrong kind. ` +
      "CPU per request: the CPU time (user and system) all the server's processes used during its rounds, over the requests answered; autocannon needs the rest of the same cores, so the server that needs less CPU per request leaves the client more and is driven faster. " +
      "First answer: from the server's start to its first answer; peak RSS: the most all its processes held at once, sampled every 250 ms.",
    `<!-- ${section}:end -->`,
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
  if (args.includes('--help')) {
    log(
      'Usage: node scripts/bench-serve.mjs [--users 100000] [--store-dir <dir>] [--work-dir <dir>] [--connections 50] [--seconds 10] [--rounds 5] [--warmup-walks 4] [--report BENCHMARKS.md | --no-report] [--section serve] [--serve-workers <n>] [--serve-script <file>]',
    );
    process.exit(0);
  }
  const figures = await benchServe({
    users: Number(value('--users', DEFAULTS.users)),
    storeDir: value('--store-dir', DEFAULTS.storeDir),
    workDir: value('--work-dir', DEFAULTS.workDir),
    connections: Number(value('--connections', DEFAULTS.connections)),
    seconds: Number(value('--seconds', DEFAULTS.seconds)),
    rounds: Number(value('--rounds', DEFAULTS.rounds)),
    warmupWalks: Number(value('--warmup-walks', DEFAULTS.warmupWalks)),
    report: args.includes('--no-report') ? null : value('--report', DEFAULTS.report),
    serveScript: value('--serve-script', undefined),
    section: value('--section', DEFAULTS.section),
    serveWorkers: value('--serve-workers', undefined),
    command: ['npm run bench:serve', ...(args.length ? ['--', ...args] : [])].join(' '),
  });
  if (figures.failures > 0) process.exitCode = 1;
}
