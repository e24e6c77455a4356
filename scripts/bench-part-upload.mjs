#!/usr/bin/env node
/**
 * `npm run bench:part-upload`: the upload of a shard's part of the creators list, which a changing
 * cycle sends whole (issue 49, item 5), against a raw PUT of the same bytes to the same server.
 *
 * A file of --bytes (default 882 MB, the part of shard 0/8 of a 10M store) filled with list-like
 * JSON, and the in-memory S3 server (bench-s3-memory.mjs, --delay-ms per answer). Alternating, as
 * whole processes, --repeats times each:
 *
 *   - raw PUT: `curl -T` of the file as one request, the floor of sending these bytes there;
 *   - publish's part upload: a process that runs `putPieces` from build/ (the function a shard's
 *     publish sends its part with) over the same file, as a header piece and the file's range.
 *
 * Each side's time is the upload's own (curl's time_total; the process times the call), so process
 * start-up and loading the SDK are left out of both. Reports MB/s, medians, and the ratio.
 *
 *   node scripts/bench-part-upload.mjs [--bytes 925000000] [--delay-ms 25] [--repeats 3] [--work DIR] [--report FILE]
 */
import { execFileSync, fork, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './bench-common.mjs';
import { writeSection } from './report-section.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const BYTES = Number(value('--bytes', String(925_000_000)));
const DELAY = value('--delay-ms', '25');
const REPEATS = Number(value('--repeats', '3'));
const WORK = value('--work', join(repo, '.bench', 'part-upload'));
const REPORT = value('--report', undefined);

/** Runs in the child process: one part upload through the library, timed around the call. */
async function uploadAsPublishDoes(port, file) {
  const { Remote } = await import(join(repo, 'build/publish/bucket/client.js'));
  const { putPieces } = await import(join(repo, 'build/publish/bucket/upload.js'));
  const { openSync: open, fstatSync } = await import('node:fs');
  const remote = new Remote(
    { bucket: 'bench', prefix: 'p', endpoint: `http://127.0.0.1:${port}`, pathStyle: true, concurrency: 64 },
    'us-east-1',
  );
  const fd = open(file, 'r');
  const head = Buffer.from('{"creators":[');
  const started = performance.now();
  const { bytes } = await putPieces(remote, '.profile-snapshot/shards/0-of-8/parts/bench', [
    { bytes: head },
    { fd, start: head.length, end: fstatSync(fd).size },
  ]);
  const seconds = (performance.now() - started) / 1000;
  remote.close();
  process.stdout.write(JSON.stringify({ seconds, bytes }) + '\n');
}

if (args[0] === '--child') {
  await uploadAsPublishDoes(Number(args[1]), args[2]);
  process.exit(0);
}

function writeListLikeFile(file) {
  const fd = openSync(file, 'w');
  const line = (i) => `{"username":"creator_${i}","display_name":"Creator ${i}","avatar_url":"https://cdn.example/a/${i}.png"},`;
  let written = 0;
  for (let i = 0; written < BYTES;) {
    const chunk = [];
    for (let n = 0; n < 20_000; n++) chunk.push(line(i++));
    const buffer = Buffer.from(chunk.join(''));
    const take = Math.min(buffer.length, BYTES - written);
    writeSync(fd, buffer, 0, take);
    written += take;
  }
  closeSync(fd);
}

function rawPut(port, file, round) {
  const out = execFileSync('curl', [
    '-sS',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code} %{time_total}',
    '-T',
    file,
    `http://127.0.0.1:${port}/bench/raw-${round}`,
  ]);
  const [status, seconds] = String(out).trim().split(' ');
  if (status !== '200') throw new Error(`raw PUT answered ${status}`);
  return Number(seconds);
}

function partUpload(port, file) {
  const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', String(port), file], {
    encoding: 'utf8',
    env: { ...process.env, AWS_ACCESS_KEY_ID: 'bench', AWS_SECRET_ACCESS_KEY: 'bench' },
  });
  if (child.status !== 0) throw new Error(`part upload failed (exit ${child.status}): ${child.stderr}`);
  const result = JSON.parse(child.stdout.trim().split('\n').pop());
  if (result.bytes !== BYTES) throw new Error(`part upload sent ${result.bytes} bytes, not ${BYTES}`);
  return result.seconds;
}

mkdirSync(WORK, { recursive: true });
const file = join(WORK, 'part.json');
writeListLikeFile(file);
const server = fork(join(repo, 'scripts/bench-s3-memory.mjs'), ['--delay-ms', DELAY], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
const port = await new Promise((resolve) => server.stdout.once('data', (d) => resolve(JSON.parse(String(d)).port)));
const raw = [];
const part = [];
try {
  for (let round = 0; round < REPEATS; round++) {
    raw.push(rawPut(port, file, round));
    part.push(partUpload(port, file));
    process.stderr.write(`round ${round + 1}: raw PUT ${raw.at(-1).toFixed(2)} s, part upload ${part.at(-1).toFixed(2)} s\n`);
  }
} finally {
  server.kill();
  rmSync(WORK, { recursive: true, force: true });
}

const mbps = (seconds) => BYTES / 1e6 / seconds;
const rawMbps = mbps(median(raw));
const partMbps = mbps(median(part));
const lines = [
  `### A shard's part upload against a raw PUT (bench-part-upload)`,
  '',
  `${(BYTES / 1e6).toFixed(0)} MB (the part of shard 0/8 of a 10M store), into the in-memory S3 server ${DELAY} ms away, alternating, medians of ${REPEATS}.`,
  `Raw PUT: one \`curl -T\` request. Part upload: \`putPieces\` (a multipart upload of 8 MiB parts, 4 at a time), as a shard's publish sends its part.`,
  '',
  '| | seconds | MB/s | ratio to raw PUT |',
  '|---|---:|---:|---:|',
  `| raw PUT | ${median(raw).toFixed(2)} | ${rawMbps.toFixed(0)} | 1.00x |`,
  `| part upload | ${median(part).toFixed(2)} | ${partMbps.toFixed(0)} | ${(partMbps / rawMbps).toFixed(2)}x |`,
  '',
  `Runs (seconds): raw PUT ${raw.map((s) => s.toFixed(2)).join(', ')}; part upload ${part.map((s) => s.toFixed(2)).join(', ')}.`,
];
process.stdout.write(lines.join('\n') + '\n');
if (REPORT !== undefined) writeSection(REPORT, 'part-upload', `<!-- part-upload:start -->\n${lines.join('\n')}\n<!-- part-upload:end -->`);
