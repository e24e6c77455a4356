#!/usr/bin/env node
/**
 * `npm run load`: the load and soak tests of test/load, longer (LOAD_SECONDS per load phase, default
 * 10; SOAK_SECONDS of soak, default 180), then their figures written into BENCHMARKS.md between
 * <!-- load:start --> and <!-- load:end --> (the section is created at the end if absent; the rest of
 * the file is left as it is: `npm run bench` owns it).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeSection } from './report-section.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BENCHMARKS = join(ROOT, 'BENCHMARKS.md');
const REPORT = join(tmpdir(), `profile-snapshot-load-${process.pid}.json`);
const env = {
  ...process.env,
  LOAD_SECONDS: process.env.LOAD_SECONDS ?? '10',
  SOAK_SECONDS: process.env.SOAK_SECONDS ?? '180',
  LOAD_REPORT: REPORT,
};
console.log(`load: LOAD_SECONDS=${env.LOAD_SECONDS} SOAK_SECONDS=${env.SOAK_SECONDS}`);
const load = loadavg()[0];
const run = spawnSync('npx', ['vitest', 'run', 'test/load/origin.test.ts'], { stdio: 'inherit', env, cwd: ROOT });
if (!existsSync(REPORT)) {
  console.error('load: no figures were written');
  process.exit(run.status ?? 1);
}
const r = JSON.parse(readFileSync(REPORT, 'utf8'));
const mb = (kb) => (kb / 1024).toFixed(1);
const row = (name, f) =>
  `| ${name} | ${f.requests.toLocaleString('en-US')} | ${f.reqPerSec.toLocaleString('en-US')} | ${f.p50Ms} | ${f.p99Ms} | ${f.errors + f.timeouts} | ${f.unexpected} |`;
const lines = [
  '<!-- load:start -->',
  '## Load and soak of the origin server',
  '',
  `Measured by \`npm run load\` on ${new Date().toISOString().slice(0, 10)} (${cpus().length} cores, load average ${load.toFixed(1)} at the start; ` +
    `Node ${process.version}): autocannon, ${r.connections} connections, ${r.loadSeconds} s a phase, over 127.0.0.1, both servers on the same tree (the sample store), one after the other in the same run.`,
  '',
  '| phase | requests | req/s | p50 ms | p99 ms | socket errors + timeouts | unexpected answers |',
  '|---|---:|---:|---:|---:|---:|---:|',
];
if (r.load) {
  lines.push(row('`serve` (router), canonical profile paths + creators', r.load.routerCanonical));
  lines.push(row('plain serve-handler, the same paths', r.load.plainCanonical));
  lines.push(
    row(
      `\`serve\`, the whole request table (${r.rows.table} rows: hits, misses, mixed case, query form, alias, 400/404/405, OPTIONS)`,
      r.load.routerTable,
    ),
  );
  const ratio = r.load.routerCanonical.reqPerSec / r.load.plainCanonical.reqPerSec;
  lines.push(
    '',
    `Router throughput on the same paths: ${(ratio * 100).toFixed(0)} % of plain serve-handler; p99 ${r.load.routerCanonical.p99Ms} ms against ${r.load.plainCanonical.p99Ms} ms.`,
  );
}
if (r.soak) {
  const s = r.soak;
  lines.push(
    '',
    `Soak: ${r.soakSeconds} s at ${r.connections} connections against \`serve\` while \`watch --interval 0.3\` regenerated the tree ${s.cycles} times from a store a writer kept changing ` +
      `(${s.requests.toLocaleString('en-US')} requests, ${s.reqPerSec} req/s, p99 ${s.p99Ms} ms, ${s.errors + s.timeouts} socket errors or timeouts, ${s.unexpected} wrong or partial answers).`,
    '',
    '| process | live heap after GC, start MB | live heap after GC, end MB | RSS start MB | RSS peak, middle third MB | RSS peak, last third MB | RSS end MB | open fds start (idle) | open fds peak | open fds end (idle) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...['serve', 'watch'].map((who) => {
      const key = who === 'serve' ? 'server' : 'watch';
      const p = s[key];
      return `| ${who} | ${mb(s.heapStart[key] / 1024)} | ${mb(s.heapEnd[key] / 1024)} | ${mb(p.start.rssKb)} | ${mb(p.middleThirdPeakRssKb)} | ${mb(p.lastThirdPeakRssKb)} | ${mb(p.end.rssKb)} | ${p.start.fds} | ${p.peakFds} | ${p.end.fds} |`;
    }),
    '',
    "Live heap: `process.memoryUsage().heapUsed` after a full collection (the processes run with `--expose-gc` and a probe that collects on SIGUSR2), idle before and after the soak; the test allows +20 % +4 MB. RSS grows to a plateau in the first 20-30 s under 100 connections (V8 sizing its heap, socket buffers); the test asserts that the last third's peak stays within the middle third's (+10 %, +8 MB), and that the idle descriptor count comes back.",
  );
}
lines.push(
  '',
  `Reproduce: \`npm run load\` (LOAD_SECONDS, SOAK_SECONDS to change the durations). Result of the run: ${run.status === 0 ? 'every assertion passed' : 'FAILED (see the test output)'}.`,
  '<!-- load:end -->',
);
const section = lines.join('\n');
writeSection(BENCHMARKS, 'load', section);
console.log(`load: figures written to ${BENCHMARKS}`);
process.exit(run.status ?? 1);
