#!/usr/bin/env node
/**
 * What hostile clients can make the origin server hold (issue 60): N raw TCP clients over 127.0.0.1
 * each write 64 KiB of pipelined `GET <document> HTTP/1.1` requests (as many whole ones as fit) for
 * the largest document of the tree, and never read one byte of the answers. Measured from outside,
 * against three servers on the same tree, in the same run, one after another, each freshly started:
 *
 *   - quick: the origin as `serve --workers 1` runs it, its quick path on (the default);
 *   - full: the same origin with the quick path off (`createOrigin({ out, quickPath: false })`);
 *   - nginx: Debian's nginx-light with bench-serve's config (the contract's headers and error
 *     documents), one worker process (the origins answer from one process too), installed with
 *     apt-get when missing.
 * `serve` has no option to turn its quick path off, so quick and full both run through
 * scripts/bench-origin.mjs (createOrigin with serve's default answer cache, no log, no metrics) and
 * differ in nothing else; `--servers` may add `serve` (the CLI itself, --workers 1) to check that the
 * runner is what `serve` runs.
 *
 * The figures are the RSS of all the server's processes (VmRSS of /proc/<pid>/status, children
 * included; nginx's master and worker): the baseline before the clients connect (after one GET of
 * the document, so that filling the cache is not counted), then every 100 ms from the first connect
 * to the end of the hold, which starts once the kernel has taken every client's bytes; the peak, and
 * the growth = peak - baseline. The hold lasts `--hold-seconds` (3), and longer while the server
 * still works on what it was sent (until, for 2 s, its RSS rose by at most 1 MiB, it used at most
 * 0.2 s of CPU and it read nothing more from its connections, as /proc/net/tcp's rx_queue tells),
 * up to `--max-hold-seconds` (60; 3 makes it a fixed 3 s hold): a server
 * may take many seconds to swallow what it was sent (today's quick path copies about 60 MB per
 * client, and first touches of memory are slow on a VM), and a fixed hold would measure only how
 * far it got. The kernel's socket buffers on loopback also take bytes (the requests a server has not
 * read yet, the answers the clients never read): they are in no process's RSS, so the growth does
 * not count them; the system-wide TCP memory of /proc/net/sockstat is shown beside it. Throughout the
 * hold a fresh client (its own connection) asks for the document once a second and must get it
 * whole with a 200 within 1 s; one more asks after all the clients closed. Each (server, N) runs
 * `--runs` times, the order of the servers alternating; medians, in MiB, with the ratio of each
 * server's growth to nginx's and to the quick-path-off origin's.
 *
 * Bounded: a server whose RSS passes `--cap-gib` (4) is killed at once and its run reported as
 * "> 4 GiB"; each run has a time limit (`--run-timeout`, 120 s); a server that does not stop within
 * 5 s of SIGTERM is killed, and so is the server of the moment if this script is interrupted. The
 * open-file limit must cover the clients (Node raises its own soft limit to the hard one at start;
 * the servers inherit it): checked first, raised to the hard limit (prlimit) if need be.
 *
 *   node scripts/bench-serve-hold.mjs [--clients 20,100,500] [--runs 3] [--hold-seconds 3]
 *        [--max-hold-seconds 60] [--request-bytes 65536] [--servers quick,full,nginx[,serve]]
 *        [--nginx-workers 1] [--cap-gib 4] [--run-timeout 120] [--db <store> | --users <n>]
 *        [--work-dir <dir>] [--report BENCHMARKS.md] [--section serve-hold]
 * The tree is built from the sample store (data/sample.sql) unless --db or --users (a seeded store,
 * as bench-serve's) says otherwise. npm run bench:serve-hold compiles first.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { ROUTES } from '../build/hosting/routes/routes.js';
import { machine, median, seededStore } from './bench-common.mjs';
import { builtTree, ensureNginx, killTree, startNginx, startServe, treeCpuSeconds, treeRss } from './bench-servers.mjs';
import { writeSection } from './report-section.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const NAME = 'bench-serve-hold';
const log = (line) => process.stdout.write(`${line}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** A time limit to race against: it does not keep the process alive once nothing else does. */
const after = (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref());
const MIB = 2 ** 20;

const DEFAULTS = {
  clients: [20, 100, 500],
  runs: 3,
  holdSeconds: 3,
  maxHoldSeconds: 60,
  requestBytes: 64 * 1024,
  servers: ['quick', 'full', 'nginx'],
  nginxWorkers: 1,
  capGib: 4,
  runTimeout: 120,
  db: undefined,
  users: undefined,
  workDir: '/dev/shm/profile-snapshot-serve-hold-bench',
  report: undefined,
  section: 'serve-hold',
};
const LABELS = {
  quick: 'origin, quick path on',
  full: 'origin, quick path off',
  serve: '`serve --workers 1`',
  nginx: 'nginx',
};
/** RSS and socket memory are sampled this often. */
const SAMPLE_MS = 100;
/** The hold goes on until the server has been quiet this long: */
const QUIET_MS = 2000;
/** its RSS rose by no more than this, */
const QUIET_RISE = MIB;
/** it used no more CPU time than this (seconds), and it read nothing of what the clients sent. */
const QUIET_CPU = 0.2;
/** A fresh client's GET must be answered, whole, within this. */
const PROBE_MS = 1000;
/** Connecting all the clients, and the kernel taking all their bytes, each within this. */
const PHASE_MS = 10_000;

/** The largest document the route table serves with a 200 from the tree (a profile, or a plain file the quick path answers). */
function largestDocument(out) {
  const candidates = [
    ...ROUTES.profiles.flatMap(({ path, dir }) =>
      readdirSync(join(out, dir)).map((name) => ({ path: `${path}/${name}`, file: `${dir}/${name}` })),
    ),
    ...ROUTES.files.filter((f) => f.gzip === undefined).map(({ path, file }) => ({ path, file })),
  ];
  return candidates
    .map((c) => ({ ...c, size: statSync(join(out, c.file)).size, profile: !ROUTES.files.some((f) => f.file === c.file) }))
    .reduce((a, b) => (b.size > a.size ? b : a));
}

/** The soft limit of open files of this process (the servers it starts inherit it), raised to the hard one when too low. */
function ensureOpenFiles(need) {
  const read = () => {
    const [, soft, hard] = /Max open files\s+(\S+)\s+(\S+)/.exec(readFileSync('/proc/self/limits', 'utf8')) ?? [];
    return { soft: soft === 'unlimited' ? Infinity : Number(soft), hard: hard === 'unlimited' ? Infinity : Number(hard) };
  };
  let { soft, hard } = read();
  if (soft < need && hard >= need) {
    spawnSync('prlimit', ['--pid', String(process.pid), `--nofile=${hard}:${hard}`], { stdio: 'ignore' });
    ({ soft, hard } = read());
  }
  if (soft < need)
    throw new Error(`${need} open files are needed, the limit is ${soft} (hard ${hard}): raise it (ulimit -n ${need}) and rerun`);
  return soft;
}

const PAGE_BYTES = Number(spawnSync('getconf', ['PAGESIZE'], { encoding: 'utf8' }).stdout) || 4096;
/** The memory all TCP sockets of the system hold in the kernel (/proc/net/sockstat), in bytes. */
const kernelTcpBytes = () => Number(/TCP:.* mem (\d+)/.exec(readFileSync('/proc/net/sockstat', 'utf8'))?.[1] ?? 0) * PAGE_BYTES;

/**
 * The bytes the clients (`clientPorts`, their local ports) sent to `port` that wait unread in the
 * kernel: rx_queue of /proc/net/tcp, over the server's ends of their connections (the fresh GETs'
 * connections are left out).
 */
function unreadBytes(port, clientPorts) {
  const hex = (p) => p.toString(16).toUpperCase().padStart(4, '0');
  const local = `:${hex(port)}`;
  let total = 0;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length > 4 && fields[1].endsWith(local) && clientPorts.has(fields[2].slice(-4)))
      total += parseInt(fields[4].split(':')[1], 16);
  }
  return total;
}

/**
 * A fresh client's GET of `path` (its own connection): whether the whole document (`size` bytes) came
 * with a 200 within PROBE_MS, and how long it took.
 */
function probe(port, path, size) {
  return new Promise((resolve) => {
    const started = performance.now();
    const done = (ok, status) => {
      clearTimeout(timer);
      resolve({ ok, status, ms: performance.now() - started });
    };
    const req = request({ host: '127.0.0.1', port, path, agent: false, headers: { host: 'x' } }, (res) => {
      let length = 0;
      res.on('data', (chunk) => (length += chunk.length));
      res.on('end', () => done(res.statusCode === 200 && length === size, res.statusCode));
      res.on('error', () => done(false, 'error'));
    });
    const timer = setTimeout(() => (req.destroy(), done(false, 'timeout')), PROBE_MS);
    req.on('error', (error) => done(false, error.code ?? 'error'));
    req.end();
  });
}

/** A client that connects and never reads: paused before its connection is even up, no byte of an answer leaves the kernel. */
function openClient(port) {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.pause();
    socket.on('error', (error) => {
      socket.failure ??= error.code ?? error.message;
      reject(error);
    });
    socket.once('connect', () => resolve(socket));
  });
}

/** The server being measured: killed with its processes if this benchmark is interrupted. */
let current;

/** Starts a server of `kind` freshly: its port, its pid (the root of its processes), stop(). */
async function startServer(kind, context, o) {
  if (kind === 'nginx') {
    const files = context.doc.profile ? [] : [context.doc.path];
    return startNginx(context.nginx, context.out, context.names, { workers: o.nginxWorkers, files });
  }
  if (kind === 'serve') return startServe(context.out, { workers: 1 });
  const script = join(repo, 'scripts/bench-origin.mjs');
  return startServe(context.out, { script, scriptArgs: ['--quick-path', kind === 'quick' ? 'on' : 'off'] });
}

/**
 * Resolves once the hold is over: true when the server has settled (`--hold-seconds` past, and for
 * QUIET_MS its RSS rose by at most QUIET_RISE, it used at most QUIET_CPU and the bytes waiting
 * unread in its connections did not move), false when `--max-hold-seconds` ran out first (or the
 * run was stopped).
 */
async function holdUntilSettled(samples, holdStarted, o, signal) {
  while (!signal.aborted) {
    await sleep(SAMPLE_MS);
    const now = performance.now();
    if (now - holdStarted >= o.maxHoldSeconds * 1000) return false;
    if (now - holdStarted < o.holdSeconds * 1000) continue;
    const earlier = samples.filter((s) => s.t <= now - QUIET_MS);
    const recent = samples.filter((s) => s.t > now - QUIET_MS);
    if (earlier.length === 0 || recent.length === 0) continue;
    const rose = Math.max(...recent.map((s) => s.rss)) - Math.max(...earlier.map((s) => s.rss));
    const cpu = recent.at(-1).cpu - earlier.at(-1).cpu;
    const read = recent.some((s) => s.unread !== earlier.at(-1).unread);
    if (rose <= QUIET_RISE && cpu <= QUIET_CPU && !read) return true;
  }
  return false;
}

/** Stops a server, and kills it if it has not stopped within 5 s. */
async function stopServer(server) {
  const stopped = await Promise.race([server.stop().then(() => true), after(5000).then(() => false)]);
  if (!stopped) killTree(server.pid);
  return stopped;
}

/**
 * One run: a fresh server of `kind`, `n` clients that send and never read, a hold; the figures.
 * Never throws for what the server does (capped, timed out, probes failing): the run says so.
 */
async function holdRun(kind, n, context, o) {
  const run = { kind, n, capped: false, timedOut: false, failure: undefined };
  const capBytes = o.capGib * 2 ** 30;
  const server = (current = await startServer(kind, context, o));
  const clients = [];
  /** The clients' local ports, as /proc/net/tcp spells them. */
  const clientPorts = new Set();
  const samples = [];
  let sampler;
  let holding = true;
  let writeStarted;
  let holdStarted;
  const abort = new AbortController();
  const aborted = new Promise((_, reject) => abort.signal.addEventListener('abort', () => reject(abort.signal.reason)));
  aborted.catch(() => {});
  const within = (promise) => Promise.race([promise, aborted]);
  const limit = setTimeout(() => abort.abort('timeout'), o.runTimeout * 1000);
  const sample = () => {
    const rss = treeRss(server.pid);
    const t = performance.now();
    samples.push({ t, rss, cpu: treeCpuSeconds(server.pid), unread: unreadBytes(server.port, clientPorts), tcp: kernelTcpBytes() });
    if (rss > capBytes && !run.capped) {
      run.capped = true;
      run.cappedAfter = (performance.now() - (writeStarted ?? performance.now())) / 1000;
      killTree(server.pid);
      abort.abort('cap');
    }
  };
  try {
    const warm = await within(probe(server.port, context.doc.path, context.doc.size));
    if (!warm.ok) throw new Error(`${kind} did not answer ${context.doc.path} with its ${context.doc.size} bytes (${warm.status})`);
    await within(sleep(500));
    run.baseline = treeRss(server.pid);
    run.tcpBaseline = kernelTcpBytes();
    sampler = setInterval(sample, SAMPLE_MS);
    const connectStarted = performance.now();
    const connecting = Array.from({ length: n }, () =>
      openClient(server.port).then((socket) => {
        clients.push(socket);
        clientPorts.add(socket.localPort.toString(16).toUpperCase().padStart(4, '0'));
      }),
    );
    await within(Promise.race([Promise.all(connecting), after(PHASE_MS).then(() => Promise.reject(new Error('connecting timed out')))]));
    run.connectMs = performance.now() - connectStarted;
    writeStarted = performance.now();
    const cpuBefore = treeCpuSeconds(server.pid);
    let written = 0;
    const writing = clients.map(
      (socket) => new Promise((resolve) => socket.write(context.payload, (error) => resolve(error ? 0 : ++written))),
    );
    await within(Promise.race([Promise.all(writing), after(PHASE_MS)]));
    run.written = written;
    run.writeMs = performance.now() - writeStarted;
    holdStarted = performance.now();
    const probes = [];
    const probing = (async () => {
      while (holding) {
        const probeStarted = performance.now();
        probes.push(await probe(server.port, context.doc.path, context.doc.size));
        await sleep(Math.max(0, probeStarted + 1000 - performance.now()));
      }
    })();
    run.settled = await within(holdUntilSettled(samples, holdStarted, o, abort.signal));
    holding = false;
    await within(probing);
    sample();
    clearInterval(sampler);
    run.holdSeconds = (performance.now() - holdStarted) / 1000;
    run.cpuSeconds = treeCpuSeconds(server.pid) - cpuBefore;
    run.holdEnd = samples.at(-1).rss;
    run.unreadEnd = samples.at(-1).unread;
    run.probesDuring = { ok: probes.filter((p) => p.ok).length, count: probes.length, slowestMs: Math.max(0, ...probes.map((p) => p.ms)) };
    for (const socket of clients) socket.destroy();
    run.probeAfter = await within(probe(server.port, context.doc.path, context.doc.size));
    await within(sleep(1000));
    run.afterClose = treeRss(server.pid);
  } catch (error) {
    if (error === 'timeout') run.timedOut = true;
    else if (error !== 'cap') run.failure = error instanceof Error ? error.message : String(error);
  } finally {
    holding = false;
    clearTimeout(limit);
    clearInterval(sampler);
    for (const socket of clients) socket.destroy();
    if (run.capped || run.timedOut) killTree(server.pid);
    run.stoppedCleanly = await stopServer(server);
    current = undefined;
  }
  if (o.trace)
    for (const x of samples)
      log(
        `    ${((x.t - (holdStarted ?? writeStarted ?? x.t)) / 1000).toFixed(1)} s  RSS ${mib(x.rss)} MiB  CPU ${x.cpu.toFixed(2)} s  unread ${mib(x.unread)} MiB  kernel TCP ${mib(x.tcp)} MiB`,
      );
  run.peak = Math.max(run.baseline ?? 0, ...samples.map((s) => s.rss));
  run.growth = run.peak - (run.baseline ?? 0);
  run.tcpGrowth = Math.max(0, ...samples.map((s) => s.tcp)) - (run.tcpBaseline ?? 0);
  run.version = server.version;
  return run;
}

const mib = (bytes) => (bytes / MIB).toFixed(Math.abs(bytes) < MIB ? 2 : Math.abs(bytes) < 10 * MIB ? 1 : 0);
const probeText = (p) => (p === undefined ? '-' : `${p.ok ? '200' : p.status} ${p.ms.toFixed(0)} ms`);

function runLine(r, o) {
  const state = r.capped
    ? `KILLED: RSS passed ${o.capGib} GiB ${r.cappedAfter.toFixed(1)} s after the writes began`
    : r.timedOut
      ? `TIMED OUT after ${o.runTimeout} s`
      : r.failure
        ? `FAILED: ${r.failure}`
        : `held ${r.holdSeconds.toFixed(1)} s${r.settled ? '' : ' (not settled)'}; fresh GETs during ${r.probesDuring.ok}/${r.probesDuring.count} (slowest ${r.probesDuring.slowestMs.toFixed(0)} ms), ` +
          `after ${probeText(r.probeAfter)}; RSS at the end ${mib(r.holdEnd)} MiB (${mib(r.unreadEnd)} MiB sent to it still unread), 1 s after the clients closed ${mib(r.afterClose)} MiB`;
  return (
    `  ${String(r.n).padStart(4)} clients ${r.kind.padEnd(5)} baseline ${mib(r.baseline ?? 0)} MiB  peak ${r.capped ? `> ${o.capGib * 1024}` : mib(r.peak)} MiB  ` +
    `growth ${r.capped ? `> ${mib(o.capGib * 2 ** 30 - r.baseline)}` : mib(r.growth)} MiB  kernel TCP +${mib(r.tcpGrowth)} MiB  ` +
    `connect ${r.connectMs?.toFixed(0) ?? '-'} ms, written ${r.written ?? '-'}/${r.n} in ${r.writeMs?.toFixed(0) ?? '-'} ms, server CPU ${r.cpuSeconds?.toFixed(2) ?? '-'} s; ${state}`
  );
}

/** A figure that may only be known to exceed a bound (a killed run). */
const bounded = (value, over = false) => ({ value, over });

/** The medians of one (server, N)'s runs; a killed run counts as above every other. */
function summarize(runs, o) {
  const cap = o.capGib * 2 ** 30;
  const ok = runs.filter((r) => !r.timedOut && !r.failure);
  const sorted = (pick) => ok.map(pick).sort((a, b) => (a.over === b.over ? a.value - b.value : a.over ? 1 : -1));
  const mid = (pick) => (ok.length ? sorted(pick)[ok.length >> 1] : bounded(NaN));
  const passed = (which) => ok.filter((r) => r[which]?.ok).length;
  const sumProbes = (all) => `${all.reduce((n, p) => n + p.ok, 0)}/${all.reduce((n, p) => n + p.count, 0)}`;
  return {
    baseline: median(ok.map((r) => r.baseline)),
    peak: mid((r) => bounded(r.capped ? cap : r.peak, r.capped)),
    growth: mid((r) => bounded(r.capped ? cap - r.baseline : r.growth, r.capped)),
    afterClose: ok.some((r) => r.afterClose !== undefined)
      ? median(ok.filter((r) => r.afterClose !== undefined).map((r) => r.afterClose))
      : undefined,
    tcpGrowth: median(ok.map((r) => r.tcpGrowth)),
    capped: ok.filter((r) => r.capped).length,
    unsettled: ok.filter((r) => !r.capped && !r.settled).length,
    held: ok.some((r) => !r.capped) ? median(ok.filter((r) => !r.capped).map((r) => r.holdSeconds)) : undefined,
    cappedAfter: median(ok.filter((r) => r.capped).map((r) => r.cappedAfter)),
    probesDuring: sumProbes(ok.filter((r) => r.probesDuring).map((r) => r.probesDuring)),
    probesAfter: `${passed('probeAfter')}/${ok.filter((r) => r.probeAfter).length}`,
    runs: runs.length,
    lost: runs.length - ok.length,
  };
}

/** a / b where either may be a bound: "> x" (a is at least), "< x" (b is at least), "?" (both). */
function ratioText(a, b) {
  if (!b || Number.isNaN(a.value) || Number.isNaN(b.value) || b.value <= 0) return 'n/a';
  if (a.over && b.over) return '?';
  const r = a.value / b.value;
  const text = r >= 100 ? r.toFixed(0) : r >= 10 ? r.toFixed(1) : r >= 0.1 ? r.toFixed(2) : r.toPrecision(2);
  return `${a.over ? '> ' : b.over ? '< ' : ''}${text}x`;
}

const boundedMib = (b) => `${b.over ? '> ' : ''}${mib(b.value)}`;

function tableRows(figures, o) {
  const rows = [
    '| clients | server | baseline MiB | peak MiB | growth MiB | growth per client | ÷ nginx | ÷ quick path off | held, s | 1 s after the clients closed, MiB | fresh GETs answered within 1 s: during the hold · after | kernel TCP memory growth (system-wide), MiB |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|',
  ];
  for (const n of o.clients) {
    for (const kind of o.servers) {
      const s = figures[n][kind];
      const nginx = figures[n].nginx?.growth;
      const full = figures[n].full?.growth;
      const perClient = bounded(s.growth.value / n, s.growth.over);
      const notes = [
        s.capped ? `${s.capped} of ${s.runs} killed at ${o.capGib} GiB, ${s.cappedAfter.toFixed(0)} s after the writes` : '',
        s.unsettled ? `${s.unsettled} of ${s.runs} not settled after ${o.maxHoldSeconds} s` : '',
        s.lost ? `${s.lost} of ${s.runs} lost (timed out or failed)` : '',
      ].filter(Boolean);
      rows.push(
        `| ${n} | ${LABELS[kind]}${notes.length ? ` (${notes.join('; ')})` : ''} | ${mib(s.baseline)} | ${boundedMib(s.peak)} | ${boundedMib(s.growth)} | ` +
          `${perClient.over ? '> ' : ''}${perClient.value >= MIB ? `${(perClient.value / MIB).toFixed(1)} MiB` : `${(perClient.value / 1024).toFixed(0)} KiB`} | ${kind === 'nginx' || !nginx ? '' : ratioText(s.growth, nginx)} | ` +
          `${kind === 'full' || !full ? '' : ratioText(s.growth, full)} | ${s.held === undefined ? '-' : s.held.toFixed(1)} | ` +
          `${s.afterClose === undefined ? '-' : mib(s.afterClose)} | ${s.probesDuring} · ${s.probesAfter} | ${mib(s.tcpGrowth)} |`,
      );
    }
  }
  return rows;
}

function reportSection(f, o, command) {
  return [
    `<!-- ${o.section}:start -->`,
    '## What hostile clients can make the origin hold (bench-serve-hold)',
    '',
    `Measured by \`${command}\` on ${new Date().toISOString().slice(0, 10)} (${f.machine}; ${f.nginxVersion ?? 'nginx not measured'}, nginx-light, ` +
      `${o.nginxWorkers} worker process${o.nginxWorkers === 1 ? '' : 'es'}; ${f.minutes.toFixed(1)} minutes): N raw TCP clients over 127.0.0.1 each write ` +
      `${(f.requestsPerClient * f.requestLength).toLocaleString('en-US')} bytes of pipelined \`GET ${f.doc.path} HTTP/1.1\` requests (${f.requestsPerClient.toLocaleString('en-US')} of ${f.requestLength} bytes, as many whole ones as fit in ${o.requestBytes.toLocaleString('en-US')} bytes, in one write; ` +
      `the largest document of the tree, ${f.doc.size.toLocaleString('en-US')} bytes, built from ${f.store}) and never read: each is paused before it connects. ` +
      `Each server is started afresh for each run, on the same tree: the origin as \`serve --workers 1\` runs it, with its quick path on and off ` +
      "(`serve` has no option for the quick path: both run through scripts/bench-origin.mjs, `createOrigin` with serve's default answer cache, and differ in nothing else), " +
      `and nginx with bench-serve's config (${o.nginxWorkers === 1 ? 'one worker process, as the origins answer from one process; its master counts too' : `${o.nginxWorkers} worker processes, all counted, with the master`}). ` +
      `Each (server, N) ran ${o.runs} times, the servers' order alternating; medians.`,
    '',
    ...tableRows(f.figures, o),
    '',
    "RSS is the sum over all the server's processes (VmRSS of /proc). Baseline: after one GET of the document (so that filling the cache is not counted), before the clients connect; " +
      `peak: the most of the samples taken every ${SAMPLE_MS} ms from the first connect to the end of the hold, which starts once the kernel has taken every client's bytes; growth = peak - baseline. ` +
      `The hold lasts ${o.holdSeconds} s, and longer while the server still works on what it was sent (until, for ${QUIET_MS / 1000} s, its RSS rose by at most 1 MiB, it used at most ${QUIET_CPU} s of CPU and it read nothing more of what the clients sent), up to ${o.maxHoldSeconds} s: "held" is its median length. ` +
      "The kernel's socket buffers on loopback hold bytes too (requests a server has not read yet, answers the clients never read): they are in no process's RSS, so the growth does not count them; " +
      "the last column is the system's TCP memory (/proc/net/sockstat, clients' side included) at its peak over its value at the baseline. " +
      `A server whose RSS passed ${o.capGib} GiB was killed at once: "> x" is a bound; a ratio is n/a where nginx's RSS did not grow at all. ` +
      'Fresh GETs: a client on its own connection asked for the document once a second throughout the hold (all runs summed), and once more right after all the clients closed (one per run); answered = the whole document with a 200 within 1 s.',
    `<!-- ${o.section}:end -->`,
  ].join('\n');
}

export async function benchServeHold(options = {}) {
  const o = { ...DEFAULTS, ...options };
  const started = performance.now();
  const openFiles = ensureOpenFiles(Math.max(...o.clients) + 256);
  let db = o.db;
  let store = o.db ? `the store ${o.db}` : undefined;
  if (!db && o.users) {
    db = seededStore(join(repo, '.bench/stores'), o.users);
    store = `a seeded store of ${o.users.toLocaleString('en-US')} users`;
  }
  if (!db) {
    const made = spawnSync(process.execPath, [join(repo, 'scripts/make-sample-db.mjs')], { stdio: 'inherit' });
    if (made.status !== 0) throw new Error('the sample store could not be made');
    db = join(repo, 'data/profiles.db');
    store = 'the sample store (data/sample.sql)';
  }
  const out = builtTree(o.workDir, db);
  const doc = largestDocument(out);
  const head = `GET ${doc.path} HTTP/1.1\r\nHost: x\r\n\r\n`;
  const requestsPerClient = Math.floor(o.requestBytes / head.length);
  const context = {
    out,
    doc,
    payload: Buffer.from(head.repeat(requestsPerClient), 'latin1'),
    names: readdirSync(join(out, 'api/v1/users')),
    nginx: o.servers.includes('nginx') ? ensureNginx() : undefined,
  };
  log(
    `${NAME}: ${machine()}; open files ${openFiles}; the tree of ${store} in ${out}; ` +
      `each client writes ${requestsPerClient} x GET ${doc.path} (${doc.size} bytes) = ${context.payload.length} bytes and never reads`,
  );
  const stopOnSignal = () => {
    if (current) killTree(current.pid);
    process.exit(130);
  };
  process.once('SIGINT', stopOnSignal).once('SIGTERM', stopOnSignal);
  const runs = {};
  let nginxVersion;
  for (const n of o.clients) {
    runs[n] = Object.fromEntries(o.servers.map((kind) => [kind, []]));
    for (let i = 0; i < o.runs; i++) {
      for (const kind of i % 2 ? o.servers.toReversed() : o.servers) {
        const run = await holdRun(kind, n, context, o);
        if (kind === 'nginx') nginxVersion = run.version;
        runs[n][kind].push(run);
        log(runLine(run, o));
        // The kernel frees the closed connections' buffers meanwhile.
        await sleep(1000);
      }
    }
  }
  process.off('SIGINT', stopOnSignal).off('SIGTERM', stopOnSignal);
  const figures = Object.fromEntries(
    o.clients.map((n) => [n, Object.fromEntries(o.servers.map((kind) => [kind, summarize(runs[n][kind], o)]))]),
  );
  const f = {
    machine: machine(),
    nginxVersion,
    doc,
    store,
    requestLength: head.length,
    requestsPerClient,
    figures,
    runs,
    minutes: (performance.now() - started) / 60_000,
  };
  log(
    `${NAME}: medians of ${o.runs} runs; hold ${o.holdSeconds} s, up to ${o.maxHoldSeconds} s while the server works; ${f.minutes.toFixed(1)} minutes`,
  );
  for (const row of tableRows(figures, o)) log(row);
  if (o.report) {
    writeSection(o.report, o.section, reportSection(f, o, o.command ?? 'npm run bench:serve-hold'));
    log(`${NAME}: figures written to ${o.report}`);
  }
  return f;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
  const list = (name, fallback) => (args.includes(name) ? value(name).split(',') : fallback);
  if (args.includes('--help')) {
    log(
      'Usage: node scripts/bench-serve-hold.mjs [--clients 20,100,500] [--runs 3] [--hold-seconds 3] [--max-hold-seconds 60] [--request-bytes 65536] [--servers quick,full,nginx[,serve]] [--nginx-workers 1] [--cap-gib 4] [--run-timeout 120] [--db <store> | --users <n>] [--work-dir <dir>] [--report BENCHMARKS.md] [--section serve-hold]',
    );
    process.exit(0);
  }
  const servers = list('--servers', DEFAULTS.servers);
  const unknown = servers.filter((s) => !(s in LABELS));
  if (unknown.length) throw new Error(`unknown server(s) ${unknown.join(', ')}: pick from ${Object.keys(LABELS).join(', ')}`);
  const f = await benchServeHold({
    clients: list('--clients', DEFAULTS.clients).map(Number),
    runs: Number(value('--runs', DEFAULTS.runs)),
    holdSeconds: Number(value('--hold-seconds', DEFAULTS.holdSeconds)),
    maxHoldSeconds: Number(value('--max-hold-seconds', DEFAULTS.maxHoldSeconds)),
    requestBytes: Number(value('--request-bytes', DEFAULTS.requestBytes)),
    servers,
    nginxWorkers: Number(value('--nginx-workers', DEFAULTS.nginxWorkers)),
    capGib: Number(value('--cap-gib', DEFAULTS.capGib)),
    runTimeout: Number(value('--run-timeout', DEFAULTS.runTimeout)),
    db: value('--db', DEFAULTS.db),
    users: args.includes('--users') ? Number(value('--users')) : undefined,
    workDir: value('--work-dir', DEFAULTS.workDir),
    report: value('--report', DEFAULTS.report),
    section: value('--section', DEFAULTS.section),
    trace: args.includes('--trace'),
    command: ['npm run bench:serve-hold', ...(args.length ? ['--', ...args] : [])].join(' '),
  });
  // Lost runs (timed out or failed) make the figures suspect.
  if (Object.values(f.figures).some((byKind) => Object.values(byKind).some((s) => s.lost > 0))) process.exitCode = 1;
}
