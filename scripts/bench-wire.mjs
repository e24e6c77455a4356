#!/usr/bin/env node
/**
 * The creators list on the wire: the bytes a client that sends `Accept-Encoding: gzip` receives for
 * it from each host this machine can stand up, against the identity list's. Builds a tree of
 * `--users` (100k by default) with the real CLI, publishes it with the real `publish` into s3rver
 * (a process of its own, on tmpfs), then asks each host for the list over real HTTP on 127.0.0.1,
 * one fresh connection a request, counting what its socket read (status line, headers, body, chunk
 * framing):
 *
 *   - `serve`, the CLI's own server, on the tree;
 *   - the committed Cloudflare Worker in workerd (miniflare), the list and its variant copied into
 *     its R2 bucket as `publish` stored them in the S3 bucket (the variant with its Content-Encoding):
 *     with CACHE "off", every answer read from R2; with CACHE "on", every answer from the edge cache
 *     (filled by a first request of each encoding, after which R2 loses both documents);
 *   - CloudFront as the tests simulate it (test/hosting/cloudfront-sim.ts): the template's
 *     viewer-request function in front of the S3 bucket `publish` filled.
 *
 * Each gzip answer must say `Content-Encoding: gzip` and gunzip to exactly the list's bytes; each
 * identity answer must be exactly those bytes. Netlify is not measured: it compresses in its CDN,
 * which nothing here has (the report says so).
 *
 *   node scripts/bench-wire.mjs [--users 100000] [--store-dir .bench/stores] [--report BENCHMARKS.md]
 */
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Miniflare } from 'miniflare';
import ts from 'typescript';
import { TEMPLATE_FILE } from '../build/hosting/hosts/aws-config.js';
import { BUCKET_BINDING, COMPATIBILITY_DATE, WORKER_MODULE } from '../build/hosting/hosts/cloudflare-config.js';
import { ROUTES } from '../build/hosting/routes/routes.js';
import { BENCH_ENV, machine, seededStore } from './bench-common.mjs';
import { writeSection } from './report-section.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const bin = join(repo, 'bin/profile-snapshot.js');
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const USERS = Number(value('--users', '100000'));
const STORE_DIR = value('--store-dir', join(repo, '.bench/stores'));
const REPORT = value('--report', undefined);
const work = '/dev/shm/profile-snapshot-wire-bench';
/** The target for the list with gzip at 100k users (issue 30), in bytes. */
const TARGET_BYTES = 8e6;
const BUCKET = 'wire';
const PREFIX = 'live/v1';
const CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };
/** The creators list: the route table's file with a gzip variant. */
const LIST = ROUTES.files.find((f) => f.gzip !== undefined);
const log = (line) => process.stdout.write(`${line}\n`);
const mb = (bytes) => (bytes / 1e6).toFixed(2);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs the CLI to its end; never spawnSync: the servers' output pipes must be drained meanwhile. */
async function cli(command, env = BENCH_ENV) {
  const child = spawn(process.execPath, [bin, ...command], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`profile-snapshot ${command[0]} exited ${code}: ${stderr}`);
}

/** A process that prints `pattern` on `stream` once it serves; resolves with the match and a stop. */
async function startProcess(command, commandArgs, stream, pattern) {
  const child = spawn(command, commandArgs, { env: BENCH_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  let said = '';
  const match = await new Promise((resolve, reject) => {
    child[stream].on('data', (d) => {
      said += d;
      if (pattern.test(said)) resolve(pattern.exec(said));
    });
    child.once('exit', (code) => reject(new Error(`${commandArgs.join(' ')} exited (${code}): ${said}`)));
  });
  const stop = async () => {
    if (child.exitCode !== null) return;
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
  };
  return { match, stop };
}

/** s3rver with the bucket, as the publish benchmark runs it (its own process, storing under `directory`). */
async function startS3(directory) {
  mkdirSync(directory, { recursive: true });
  const script = join(repo, 'scripts/bench-s3-server.mjs');
  const s3 = await startProcess(process.execPath, ['--openssl-legacy-provider', script, directory, BUCKET], 'stdout', /^(\d+)\n/);
  return { endpoint: `http://127.0.0.1:${s3.match[1]}`, stop: s3.stop };
}

async function startServe(out) {
  const command = [bin, 'serve', '--out', out, '--port', '0', '--host', '127.0.0.1'];
  const serve = await startProcess(process.execPath, command, 'stderr', /on http:\/\/127\.0\.0\.1:(\d+)/);
  return { origin: `http://127.0.0.1:${serve.match[1]}`, stop: serve.stop };
}

/**
 * GET `path` on a connection of its own: the answer, and `wire`, every byte its socket read. The
 * request asks the server to close the connection after the answer, so the socket's count, read
 * once it closed, is the one answer's.
 */
function get(origin, path, headers = {}) {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${origin}${path}`, { agent: false, headers: { ...headers, connection: 'close' } });
    request.on('error', reject);
    const closed = new Promise((done) => request.on('socket', (socket) => socket.on('close', () => done(socket.bytesRead))));
    request.on('response', (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', async () =>
        resolve({ status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks), wire: await closed }),
      );
    });
    request.end();
  });
}

/** What is wrong with `answer` as the list (gzip-encoded and decoding to it, or its very bytes), if anything. */
function problemOf(answer, list, gzip) {
  const encoding = answer.headers['content-encoding'];
  if (answer.status !== 200) return `status ${answer.status}`;
  if (encoding !== (gzip ? 'gzip' : undefined)) return `Content-Encoding ${encoding}`;
  return (gzip ? gunzipSync(answer.body) : answer.body).equals(list) ? undefined : 'not the list';
}

function expectList(host, answer, list, gzip) {
  const problem = problemOf(answer, list, gzip);
  if (problem) throw new Error(`${host}, ${gzip ? 'Accept-Encoding: gzip' : 'identity'}: ${problem}`);
}

/** One GET of the list with `Accept-Encoding: gzip` and one without, each checked: the bytes on the wire of each. */
async function measure(host, origin, list) {
  const gzip = await get(origin, LIST.path, { 'accept-encoding': 'gzip' });
  expectList(host, gzip, list, true);
  const identity = await get(origin, LIST.path);
  expectList(host, identity, list, false);
  log(`${host}: ${gzip.wire} bytes with gzip (body ${gzip.body.length}), ${identity.wire} identity (body ${identity.body.length})`);
  return {
    host,
    gzip: gzip.wire,
    identity: identity.wire,
    overheads: [gzip.wire - gzip.body.length, identity.wire - identity.body.length],
  };
}

/** The real `publish` of the whole tree into the bucket, as a first publish (s3rver ignores conditional writes). */
async function publishTree(out, endpoint) {
  const started = Date.now();
  const to = `s3://${BUCKET}/${PREFIX}`;
  await cli(['publish', '--out', out, '--to', to, '--endpoint', endpoint, '--single-writer'], {
    PATH: process.env.PATH,
    HOME: work,
    ...CREDENTIALS,
  });
  return (Date.now() - started) / 1000;
}

/** The list and its variant as `publish` stored them, by key: bytes and stored headers, each checked against the tree's file. */
async function publishedList(endpoint, out) {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'; // the SDK's notice that Node 20's support ends
  const credentials = { accessKeyId: CREDENTIALS.AWS_ACCESS_KEY_ID, secretAccessKey: CREDENTIALS.AWS_SECRET_ACCESS_KEY };
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials,
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const objects = new Map();
  try {
    for (const file of [LIST.file, LIST.gzip]) {
      const object = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}/${file}` }));
      const bytes = await object.Body.transformToByteArray();
      if (!Buffer.from(bytes).equals(readFileSync(join(out, file)))) throw new Error(`the bucket's ${file} is not the tree's`);
      const httpMetadata = { contentType: object.ContentType, cacheControl: object.CacheControl, contentEncoding: object.ContentEncoding };
      objects.set(`${PREFIX}/${file}`, { bytes, httpMetadata });
    }
  } finally {
    client.destroy();
  }
  return objects;
}

/** The committed Worker in workerd, its R2 bucket holding `objects` under their keys. */
async function startWorker(objects, cache) {
  const mf = new Miniflare({
    modules: true,
    scriptPath: join(repo, WORKER_MODULE),
    compatibilityDate: COMPATIBILITY_DATE,
    r2Buckets: [BUCKET_BINDING],
    bindings: { PREFIX, CACHE: cache },
    host: '127.0.0.1',
    port: 0,
    // The request's `cf` object from a placeholder: miniflare would otherwise fetch one from the internet.
    cf: false,
  });
  const { origin } = await mf.ready;
  const bucket = await mf.getR2Bucket(BUCKET_BINDING);
  // A copy each: miniflare refuses a view of a pooled buffer.
  for (const [key, { bytes, httpMetadata }] of objects) await bucket.put(key, new Uint8Array(bytes), { httpMetadata });
  return { origin, bucket, stop: () => mf.dispose() };
}

async function measureWorkerFromR2(objects, list) {
  const worker = await startWorker(objects, 'off');
  try {
    return await measure('Cloudflare Worker, CACHE "off" (from R2)', worker.origin, list);
  } finally {
    await worker.stop();
  }
}

/**
 * The Worker answering from its edge cache: a first request of each encoding fills it (cache.put
 * runs once the answer is out, ctx.waitUntil), then R2 loses both documents, so the measured
 * answers can only come from the cache.
 */
async function measureWorkerFromCache(objects, list) {
  const worker = await startWorker(objects, 'on');
  try {
    for (const headers of [{ 'accept-encoding': 'gzip' }, {}]) await get(worker.origin, LIST.path, headers);
    await sleep(2000); // for both cache.put calls to finish
    for (const key of objects.keys()) await worker.bucket.delete(key);
    return await measure('Cloudflare Worker, CACHE "on" (from the edge cache)', worker.origin, list);
  } finally {
    await worker.stop();
  }
}

/**
 * The tests' CloudFront simulator, transpiled as it is (it is TypeScript, which Node 20 cannot
 * load; it imports only Node's own modules), so the bench runs the very simulator the tests do.
 */
async function importCloudFrontSim() {
  const source = readFileSync(join(repo, 'test/hosting/cloudfront-sim.ts'), 'utf8');
  const options = { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 };
  const file = join(work, 'cloudfront-sim.mjs');
  writeFileSync(file, ts.transpileModule(source, { compilerOptions: options }).outputText);
  return import(pathToFileURL(file).href);
}

async function measureCloudFront(endpoint, list) {
  const { startCloudFrontSim } = await importCloudFrontSim();
  const sim = await startCloudFrontSim({ templatePath: join(repo, TEMPLATE_FILE), s3: endpoint, bucket: BUCKET, prefix: PREFIX });
  try {
    return await measure('CloudFront (viewer-request function + S3 origin, simulated)', sim.origin, list);
  } finally {
    await sim.close();
  }
}

const versionOf = (name) => JSON.parse(readFileSync(join(repo, 'node_modules', name, 'package.json'), 'utf8')).version;

function reportLines(rows, sizes) {
  const command = `node scripts/bench-wire.mjs --users ${USERS}${REPORT ? ` --report ${relative(repo, resolve(REPORT))}` : ''}`;
  const overheads = rows.flatMap((r) => r.overheads);
  const versions = `miniflare ${versionOf('miniflare')} (workerd), s3rver ${versionOf('s3rver')}`;
  return [
    `Written by \`npm run bench:wire\` (\`${command}\`) on ${new Date().toISOString().slice(0, 10)}. ${machine()}, ${versions}.`,
    '',
    `The creators list at ${USERS.toLocaleString('en-US')} users: ${mb(sizes.list)} MB; its gzip variant: ${mb(sizes.variant)} MB.`,
    `The tree was published by \`publish\` into s3rver on tmpfs (${sizes.publishSeconds.toFixed(0)} s).`,
    `Each figure is what one GET of \`${LIST.path}\` read off its socket, on a connection of its own`,
    'over 127.0.0.1 (MB = 10^6 bytes): the status line, headers and body, and chunk framing if any; the',
    `part past the body came to ${Math.min(...overheads)}-${Math.max(...overheads)} bytes. Every gzip answer said \`Content-Encoding: gzip\` and`,
    "decoded to exactly the list's bytes; every identity answer (no Accept-Encoding) was exactly them.",
    '',
    `| host | with \`Accept-Encoding: gzip\` (MB) | identity (MB) | ratio | at most ${mb(TARGET_BYTES)} MB with gzip |`,
    '|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.host} | ${mb(r.gzip)} | ${mb(r.identity)} | ${(r.identity / r.gzip).toFixed(1)}x | ${r.gzip <= TARGET_BYTES ? 'met' : 'MISSED'} |`,
    ),
    '',
    '`serve` ran as the CLI process on the tree. The Worker is the committed `cloudflare/worker.js` in',
    'workerd, the list and its variant copied into its R2 bucket from the S3 bucket as `publish` stored',
    'them; "from the edge cache" was measured after R2 lost both, so the cache alone answered.',
    "CloudFront is the tests' simulator (test/hosting/cloudfront-sim.ts): the template's function picks",
    "the variant's key and S3 (s3rver) sends the object with the Content-Encoding `publish` stored; a",
    'real distribution adds its own headers (Via, X-Cache, X-Amz-Cf-*), a few hundred bytes, and does',
    'not compress an object that already has a Content-Encoding.',
    '',
    'Netlify is not measured: it compresses answers in its CDN by itself, and nothing here has that CDN.',
    "The tests' Netlify simulator (test/hosting/netlify-sim.ts) does serve bodies, through Netlify's",
    'rule engine, but not compressed: it would measure the identity list whatever the client accepts.',
    'The variant is a dot file, which Netlify does not deploy.',
  ];
}

async function main() {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const db = join(work, 'profiles.db');
  copyFileSync(seededStore(STORE_DIR, USERS), db);
  const out = join(work, 'dist');
  await cli(['build', '--db', db, '--out', out]);
  const list = readFileSync(join(out, LIST.file));
  const stops = [];
  try {
    const s3 = await startS3(join(work, 's3'));
    stops.push(s3.stop);
    log(`bench-wire: publishing ${USERS} users' tree into s3rver`);
    const publishSeconds = await publishTree(out, s3.endpoint);
    const objects = await publishedList(s3.endpoint, out);
    const serve = await startServe(out);
    stops.push(serve.stop);
    const rows = [await measure('`serve`', serve.origin, list)];
    rows.push(await measureWorkerFromR2(objects, list), await measureWorkerFromCache(objects, list));
    rows.push(await measureCloudFront(s3.endpoint, list));
    const lines = reportLines(rows, { list: list.length, variant: readFileSync(join(out, LIST.gzip)).length, publishSeconds });
    log(`\n${lines.join('\n')}`);
    if (REPORT)
      writeSection(REPORT, 'wire', `<!-- wire:start -->\n## The creators list on the wire\n\n${lines.join('\n')}\n<!-- wire:end -->`);
  } finally {
    for (const stop of stops.reverse()) await stop();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((error) => {
  process.stderr.write(`bench-wire: ${error.stack ?? error}\n`);
  process.exitCode = 1;
});
